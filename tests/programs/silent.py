"""A driver program that never answers: it reads its input and says nothing (tests/program.rs:
its device's setup must fail with `e` within the configured setup_timeout)."""

import sys

while sys.stdin.buffer.read(4096):
    pass
