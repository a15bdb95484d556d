"""A driver program that announces a 1 GiB frame (tests/program.rs: the server must refuse it
from the 4-byte length, before allocating, kill the program and log it), then waits."""

import sys
import time

sys.stdout.buffer.write(b"\x40\x00\x00\x00d" + b"\x00" * 64)
sys.stdout.buffer.flush()
time.sleep(3600)
