#!/usr/bin/env python3
"""The manual's Java example "Obstacle avoidance using sonar" (Player 0.7.4a manual,
Appendix C.4) in Python: the nearest obstacle on each side of the front sonar ring sets the
speed of the wheel on the other side.

    python3 examples/sonar_avoid.py [HOST[:PORT]] [ROUNDS]

The server defaults to localhost:6665 and the rounds to the example's 400 (40 s at the
default 10 Hz). Unlike the Java original, which asks for ``"srpw"``, this asks for all
access to the position device (``"srpa"``) so that it can print the robot's position every
10 rounds; and it stops the robot at the end.
"""

import sys

from player_client import Client, PlayerError


def avoid(address: str, rounds: int) -> None:
    """Runs the example's loop for ``rounds`` rounds."""
    # Setup communications with robot
    with Client.connect(address) as ant:
        # Setup requests for 'ant': (Sonar, Read), (Position, All)
        ant.request("srpa").check()

        # Do obstacle avoidance for 400 time steps (40 sec.)
        for i, round in enumerate(ant.rounds(rounds)):  # blocking reads of data
            sonar = round.sonar
            if i % 10 == 0 and round.position is not None:
                p = round.position
                print(
                    f"step {i:3}: x {p.x} mm, y {p.y} mm, heading {p.heading} deg, "
                    f"speed {p.speed} mm/s, turn {p.turn_rate} deg/s"
                )
            min_l = min(sonar[1:4])
            min_r = min(sonar[4:7])
            # Java's integer division; the ranges are never negative, so // is the same.
            left = min((100 * min_r) // 300 - 100, 150)
            right = min((100 * min_l) // 300 - 100, 150)
            ant.set_speed(right + left, right - left)

        ant.set_speed(0, 0)


def main(argv: list) -> int:
    """Parses ``[HOST[:PORT]] [ROUNDS]`` and runs; the exit status."""
    address = argv[1] if len(argv) > 1 else "localhost:6665"
    try:
        rounds = int(argv[2]) if len(argv) > 2 else 400
    except ValueError:
        print("usage: sonar_avoid.py [HOST[:PORT]] [ROUNDS]", file=sys.stderr)
        return 2
    try:
        avoid(address, rounds)
    except (PlayerError, OSError) as e:
        print(f"sonar_avoid: {address}: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
