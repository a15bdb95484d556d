"""The PyPI package rplidar-roboticia (a third-party client of Slamtec's RPLIDAR protocol)
against our emulator (`player-emulate rplidar`) on a pseudo-terminal: its health and info
requests, a standard and an express scan, and the scene it sees (a wall 6 m ahead, an
obstacle 0.9 m away 60 degrees to the left, which is 300 degrees clockwise in the device's
angles). Run by tests/rplidar/run.sh, which makes the venv and starts the emulator.

Usage: third_party_client.py PORT
"""

import sys

import serial
from rplidar import RPLidar


def near(scan, angle, width=1.5):
    """The distances measured within `width` degrees of `angle` (clockwise)."""
    out = []
    for _quality, a, d in scan:
        diff = abs((a - angle + 180.0) % 360.0 - 180.0)
        if diff <= width:
            out.append(d)
    return out


def check_scene(scan, kind):
    assert len(scan) > 300, f"{kind}: {len(scan)} measurements in a turn"
    ahead = near(scan, 0.0)
    left = near(scan, 300.0, 0.5)
    right = near(scan, 60.0, 0.5)
    assert ahead and all(abs(d - 6000) < 15 for d in ahead), f"{kind}: ahead {ahead}"
    assert left and all(abs(d - 900) < 20 for d in left), f"{kind}: left {left}"
    assert right and all(abs(d - 3464) < 60 for d in right), f"{kind}: right {right}"


def main():
    port = sys.argv[1]
    # A pseudo-terminal has no modem lines: the client's DTR motor control (for the A1)
    # fails there, as our driver's does ("no motor control"). Only that call is skipped.
    serial.Serial._update_dtr_state = lambda self: None
    lidar = RPLidar(port)
    info = lidar.get_info()
    assert info["model"] == 0x18, info
    assert info["firmware"] == (1, 29), info
    assert info["hardware"] == 7, info
    status, code = lidar.get_health()
    assert (status, code) == ("Good", 0), (status, code)
    for kind in ("normal", "express"):
        scans = lidar.iter_scans(scan_type=kind)
        next(scans)  # the first turn may be partial
        check_scene(next(scans), kind)
        lidar.stop()
        lidar.express_data = False
        lidar.express_trame = 32
    lidar.stop_motor()
    lidar.disconnect()
    print("rplidar-roboticia: info, health, standard and express scans as the scene")


if __name__ == "__main__":
    main()
