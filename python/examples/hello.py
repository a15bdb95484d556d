#!/usr/bin/env python3
"""The manual's "hello world" (Player 0.7.4a manual, Appendix A.1, Figure 3) in Python.

Read the sonar, turn away from the nearer side, stop when something is close in front and
move on otherwise; at the end close the devices.

    python3 examples/hello.py [HOST[:PORT]] [ROUNDS]

The server defaults to localhost:6665 and the rounds to the figure's 1000 (100 s at the
default 10 Hz).
"""

import sys

from player_client import Client, PlayerError


def hello(address: str, rounds: int) -> None:
    """Runs the figure's read-act-write loop for ``rounds`` rounds."""
    # where address is the robot's host (the figure's "tanis")
    with Client.connect(address) as robot:
        robot.request("srpw").check()  # sonar read, position write

        for _ in range(rounds):
            sonar = robot.read().sonar

            print("sonar:", " ".join(str(r) for r in sonar.ranges))  # robot.Print()

            if sonar[0] + sonar[1] < sonar[6] + sonar[7]:
                newturnrate = -20  # turn 20 degrees per second
            else:
                newturnrate = 20

            if sonar[3] < 500:
                newspeed = 0
            else:
                newspeed = 100

            robot.set_speed(newspeed, newturnrate)  # robot.Write()

        # close everything
        robot.request("scpc")


def main(argv: list) -> int:
    """Parses ``[HOST[:PORT]] [ROUNDS]`` and runs; the exit status."""
    address = argv[1] if len(argv) > 1 else "localhost:6665"
    try:
        rounds = int(argv[2]) if len(argv) > 2 else 1000
    except ValueError:
        print("usage: hello.py [HOST[:PORT]] [ROUNDS]", file=sys.stderr)
        return 2
    try:
        hello(address, rounds)
    except (PlayerError, OSError) as e:
        print(f"hello: {address}: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
