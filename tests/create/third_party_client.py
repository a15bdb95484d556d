"""The PyPI package pycreate2 (a third-party client of the iRobot Create 2 Open Interface)
against our emulated base (`player-emulate create`) on a pseudo-terminal: START, SAFE and
FULL as the OI mode reports them, the whole sensor group 100 (80 bytes) as the library
decodes it, DRIVE DIRECT forwards, backwards and turning with the encoders, distance and
angle following, and the scene: the base starts where the lasers sit in the emulator's
room, with an obstacle 60 degrees to its left whose edge is 1.2 - 0.3 m from its centre,
so after turning 60 degrees it bumps into it having driven 0.9 - 0.17 m (its radius).
Run by tests/create/run.sh, which makes the venv and starts the emulator.

Usage: third_party_client.py PORT
"""

import math
import os
import sys
import time

from pycreate2 import Create2

FAILED = []


def check(name, ok, detail=""):
    """Prints a PASS or FAIL line with what was seen; a failure is remembered for the
    exit status."""
    print(f"{'PASS' if ok else 'FAIL'}: {name}{': ' + str(detail) if detail != '' else ''}")
    if not ok:
        FAILED.append(name)


def counts(before, after):
    """Encoder deltas (left, right) across the 16-bit wrap."""
    d = lambda a, b: (b - a + 32768) % 65536 - 32768
    return (d(before.encoder_counts_left, after.encoder_counts_left),
            d(before.encoder_counts_right, after.encoder_counts_right))


def check_modes_and_sensors(bot):
    """START, SAFE, FULL and the static part of group 100."""
    bot.start()
    s = bot.get_sensors()
    check("start(): Passive mode (OI mode 1)", s.open_interface_mode == 1, s.open_interface_mode)
    bot.full()
    mode = bot.get_sensors().open_interface_mode
    check("full(): Full mode (3)", mode == 3, mode)
    bot.safe()
    s = bot.get_sensors()
    check("safe(): Safe mode (2)", s.open_interface_mode == 2, s.open_interface_mode)
    check("battery: charge within capacity",
          0 < s.battery_charge <= s.battery_capacity, (s.battery_charge, s.battery_capacity))
    check("battery: 12-17 V, not charging, discharging",
          12000 <= s.voltage <= 17000 and s.charger_state == 0 and s.current < 0,
          (s.voltage, s.charger_state, s.current))
    check("temperature: room temperature", 10 <= s.temperature <= 40, s.temperature)
    cliffs = (s.cliff_left, s.cliff_front_left, s.cliff_front_right, s.cliff_right)
    signals = (s.cliff_left_signal, s.cliff_front_left_signal, s.cliff_front_right_signal,
               s.cliff_right_signal)
    check("cliffs: none on the room's floor, every cliff sensor sees the floor",
          not any(cliffs) and all(x > 1000 for x in signals), (cliffs, signals))
    check("bumps and wheel drops: none at the start", not any(s.bumps_wheeldrops),
          s.bumps_wheeldrops)
    check("standing still: no distance, no angle, no requested speed",
          (s.distance, s.angle, s.velocity_right, s.velocity_left) == (0, 0, 0, 0),
          (s.distance, s.angle, s.velocity_right, s.velocity_left))


def drive(bot, right, left, seconds):
    """Drives for `seconds`; the sensors before and after, the distance and angle summed
    over the readings (each covers the time since the one before), the time driven."""
    before = bot.get_sensors()
    bot.drive_direct(right, left)
    t0 = time.monotonic()
    distance = angle = 0
    while time.monotonic() - t0 < seconds:
        s = bot.get_sensors()
        distance += s.distance
        angle += s.angle
    bot.drive_direct(0, 0)
    driven = time.monotonic() - t0
    after = bot.get_sensors()
    return before, after, distance + after.distance, angle + after.angle, s, driven


def near(value, want, tolerance=0.15):
    """Whether `value` is within `tolerance` (a fraction) of `want`."""
    return abs(value - want) <= abs(want) * tolerance


def check_driving(bot):
    """DRIVE DIRECT forwards, backwards and turning in place."""
    before, after, distance, angle, moving, t = drive(bot, 200, 200, 0.5)
    left, right = counts(before, after)
    mm = 200 * t  # what each wheel travelled; 0.4446 mm a count
    check("drive_direct(200, 200): the right and left speeds requested",
          (moving.velocity_right, moving.velocity_left) == (200, 200),
          (moving.velocity_right, moving.velocity_left))
    check(f"forwards {t:.2f} s at 200 mm/s: both encoders count up {mm / 0.4446:.0f}",
          near(left, mm / 0.4446) and abs(left - right) <= 2, (left, right))
    check(f"forwards: {mm:.0f} mm driven, no turn", near(distance, mm) and abs(angle) <= 1,
          (distance, angle))
    before, after, distance, angle, _, t = drive(bot, -200, -200, 0.3)
    left, right = counts(before, after)
    mm = -200 * t
    check(f"backwards: both encoders count down {mm / 0.4446:.0f}",
          near(left, mm / 0.4446) and near(right, mm / 0.4446), (left, right))
    check(f"backwards: distance {mm:.0f} mm", near(distance, mm), distance)
    before, after, distance, angle, _, t = drive(bot, 100, -100, 0.5)
    left, right = counts(before, after)
    check("turning counter-clockwise: right encoder up, left down as much",
          right > 0 and near(left, -right, 0.02), (left, right))
    # 100 mm/s each way on a 235 mm wheel base: 0.2 / 0.235 rad/s.
    deg = math.degrees(0.2 / 0.235 * t)
    check(f"turning: angle {deg:.0f} deg (counter-clockwise positive), no distance",
          near(angle, deg) and abs(distance) <= 2, (angle, distance))
    s = bot.get_sensors()
    time.sleep(0.2)
    t = bot.get_sensors()
    check("drive_direct(0, 0): the wheels stand still",
          counts(s, t) == (0, 0) and (t.velocity_right, t.velocity_left) == (0, 0),
          (counts(s, t), t.velocity_right, t.velocity_left))


def check_bump(bot):
    """From the start pose: turn 60 degrees left (by the angles the base reports), drive
    at the obstacle until a bumper is pressed, back off."""
    bot.get_sensors()  # distance and angle from here
    bot.drive_direct(150, -150)
    turn = 0
    while turn < 60:
        turn += bot.get_sensors().angle
    bot.drive_direct(0, 0)
    turn += bot.get_sensors().angle
    check("turning left by the reported angle: 60 deg", 60 <= turn <= 66, turn)
    bot.drive_direct(400, 400)
    t0 = time.monotonic()
    distance, s = 0, bot.get_sensors()
    while time.monotonic() - t0 < 3.0 and not (s.bumps_wheeldrops.bump_left
                                               or s.bumps_wheeldrops.bump_right):
        s = bot.get_sensors()
        distance += s.distance
    bot.drive_direct(0, 0)
    bumps = s.bumps_wheeldrops
    check("driving at the obstacle: a bumper pressed", bumps.bump_left or bumps.bump_right,
          bumps)
    check("the obstacle's edge 0.9 m ahead: bumped after about 0.73 m",
          abs(distance - 730) <= 40, distance)
    after = drive(bot, -400, -400, 0.5)[1]
    check("backing off: the bumpers released", not any(after.bumps_wheeldrops),
          after.bumps_wheeldrops)


def check_stop(bot):
    """STOP: the OI is off and no longer answers."""
    bot.stop()
    bot.SCI.ser.timeout = 0.3  # the library's read waits 1 s for the 80 bytes
    try:
        bot.get_sensors()
        check("stop(): the OI is off and answers nothing", False, "it answered")
    except Exception:  # pycreate2 raises on a short read
        check("stop(): the OI is off and answers nothing", True)


def main():
    bot = Create2(sys.argv[1])
    code = 0
    for part in (check_modes_and_sensors, check_bump, check_driving, check_stop):
        try:
            part(bot)
        except Exception as e:  # a library error is a failure like any other
            bot.drive_direct(0, 0)
            check(f"{part.__name__}: no error from the library", False,
                  f"{type(e).__name__}: {e}")
    if FAILED:
        print(f"pycreate2: {len(FAILED)} check(s) failed")
        code = 1
    else:
        print("pycreate2: modes, sensor group 100, driving and the scene's obstacle")
    # The library's destructor would stop the base once more and sleep 1.5 s: skipped.
    sys.stdout.flush()
    os._exit(code)


if __name__ == "__main__":
    main()
