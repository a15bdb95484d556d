"""The PyPI package hokuyolx (a third-party SCIP 2.0 client for Hokuyo's Ethernet lasers)
against our emulated UTM-30LX-EW (`player-emulate urg --tcp`): its identity and parameters
(PP, VV, II), the angles it computes from them, single scans (GD), counted and continuous
streams (MD), the sensor's clock (TM) and a reset (RS), checked against the scene the
emulator ray-casts (a wall 6 m ahead, an obstacle whose near side is 0.9 m away 60 degrees
to the left, the wall y = 0 3.464 m away 60 degrees to the right). Run by
tests/hokuyo/run.sh, which makes the venv and starts the emulator.

The library's time_sync() and laser_state() use `%ST`, a command of the UST series the
UTM-30LX-EW does not have, so the clock is read with TM0/TM1/TM2 (tsync_enter, tsync_get,
tsync_exit) and scans keep the sensor's own stamps (convert_time=False).

Usage: third_party_client.py PORT
"""

import math
import sys
import time

import numpy as np
from hokuyolx import HokuyoLX

FAILED = []


def check(name, ok, detail=""):
    """Prints a PASS or FAIL line with what was seen; a failure is remembered for the
    exit status."""
    print(f"{'PASS' if ok else 'FAIL'}: {name}{': ' + str(detail) if detail != '' else ''}")
    if not ok:
        FAILED.append(name)


def check_scene(name, scan, laser):
    """A full scan (1081 readings) as the emulator's room gives it, each reading found at
    the angle the library computes for it."""
    dmin, dmax, angles = laser.dmin, laser.dmax, laser.get_angles()
    check(f"{name}: 1081 readings", len(scan) == 1081, len(scan))
    check(
        f"{name}: every reading within {dmin}-{dmax} mm",
        bool(np.all((scan >= dmin) & (scan <= dmax))),
        (int(scan.min()), int(scan.max())),
    )
    at = lambda deg: int(scan[np.argmin(np.abs(angles - np.radians(deg)))])
    ahead, left, right = at(0), at(60), at(-60)
    check(f"{name}: the wall 6 m ahead", abs(ahead - 6000) <= 2, ahead)
    check(f"{name}: the obstacle 0.9 m away 60 deg left", abs(left - 900) <= 2, left)
    check(f"{name}: the wall 3.464 m away 60 deg right", abs(right - 3464) <= 3, right)


def check_identity(laser):
    """What the constructor read (PP) and what VV and II say."""
    got = (laser.model, laser.ares, laser.amin, laser.amax, laser.aforw)
    check("PP: UTM-30LX-EW, 1440 steps a turn, steps 0-1080, ahead 540",
          got == ("UTM-30LX-EW", 1440, 0, 1080, 540), got)
    check("PP: 23-30000 mm, 40 scans a second",
          (laser.dmin, laser.dmax, laser.scan_freq) == (23, 30000, 40),
          (laser.dmin, laser.dmax, laser.scan_freq))
    version = laser.version()
    check("VV: Hokuyo, SCIP 2.0",
          version.get("VEND", "").startswith("Hokuyo") and version.get("PROT") == "SCIP 2.0",
          (version.get("VEND"), version.get("PROT")))
    state = laser.sensor_state()
    check("II: laser on after activate()", state.get("LASR") == "ON", state.get("LASR"))
    angles = laser.get_angles()
    steps = np.diff(angles)
    check("angles: 1081 from -135 to +135 deg",
          len(angles) == 1081
          and math.isclose(math.degrees(angles[0]), -135.0)
          and math.isclose(math.degrees(angles[-1]), 135.0),
          (len(angles), math.degrees(angles[0]), math.degrees(angles[-1])))
    check("angles: 0.25 deg apart", np.allclose(np.degrees(steps), 0.25),
          (float(np.degrees(steps).min()), float(np.degrees(steps).max())))


def check_single(laser):
    """GD: single scans, whole and partial, and the filtered form."""
    ts, scan = laser.get_dist()
    check_scene("get_dist", scan, laser)
    ts2, _ = laser.get_dist()
    check("get_dist: the clock advances between scans", ts2 > ts, (ts, ts2))
    _, part = laser.get_dist(start=180, end=900, grouping=4)
    want = len(laser.get_angles(180, 900, 4))
    check("get_dist(180, 900, grouping 4): as many readings as get_angles gives",
          len(part) == want == 181, (len(part), want))
    _, filtered = laser.get_filtered_dist()
    ahead = filtered[np.argmin(np.abs(filtered[:, 0]))]
    check("get_filtered_dist: 1081 (angle, range) pairs, 6 m at angle 0",
          filtered.shape == (1081, 2) and ahead[0] == 0.0 and abs(ahead[1] - 6000) <= 2,
          (filtered.shape, ahead))


def check_streams(laser):
    """MD: five counted scans, then a continuous stream stopped by QT."""
    got = list(laser.iter_dist(scans=5))
    pending = [p for _scan, _ts, p in got]
    check("iter_dist(scans=5): five scans, 4..0 still to come", pending == [4, 3, 2, 1, 0],
          pending)
    stamps = [ts for _scan, ts, _p in got]
    gaps = np.diff(stamps)
    check("iter_dist: stamps one turn (25 ms) apart", bool(np.all((gaps >= 20) & (gaps <= 40))),
          stamps)
    check_scene("iter_dist", got[-1][0], laser)
    stream = laser.iter_dist()
    first = [next(stream) for _ in range(8)]
    stamps = [ts for _scan, ts, _p in first]
    check("iter_dist(): a continuous stream with increasing stamps",
          all(b > a for a, b in zip(stamps, stamps[1:]))
          and all(p == 0 for _s, _t, p in first), stamps)
    laser.standby()
    mesm = laser.sensor_state().get("MESM")
    check("standby(): the stream stopped (MESM idle)", mesm == "Idle", mesm)


def check_clock(laser):
    """TM: the sensor's clock, read twice 200 ms apart."""
    status = laser.tsync_enter()
    check("tsync_enter (TM0)", status[0] == "00", status)
    t0 = laser.tsync_get()
    host0 = time.monotonic()
    time.sleep(0.2)
    t1 = laser.tsync_get()
    elapsed = (time.monotonic() - host0) * 1000
    check("tsync_get (TM1): the sensor's clock runs at the host's pace",
          abs((t1 - t0) - elapsed) < 30, (t0, t1, elapsed))
    status = laser.tsync_exit()
    check("tsync_exit (TM2)", status[0] == "00", status)


def check_reset(laser):
    """RS: the laser goes off."""
    laser.reset()
    lasr = laser.sensor_state().get("LASR")
    check("reset (RS): laser off", lasr == "OFF", lasr)


def main():
    port = int(sys.argv[1])
    laser = HokuyoLX(addr=("127.0.0.1", port), tsync=False, convert_time=False, timeout=5)
    for part in (check_identity, check_single, check_streams, check_clock, check_reset):
        try:
            part(laser)
        except Exception as e:  # a library error is a failure like any other
            check(f"{part.__name__}: no error from the library", False,
                  f"{type(e).__name__}: {e}")
    laser.close()
    if FAILED:
        print(f"hokuyolx: {len(FAILED)} check(s) failed")
        sys.exit(1)
    print("hokuyolx: identity, angles, single scans, streams and clock as the scene")


if __name__ == "__main__":
    main()
