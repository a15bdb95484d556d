"""A minimal Player 0.7.4a controller for the safety tests: connects, asks for the
position device (write) and the laser, and sends a 200 mm/s command every 100 ms while
reading (and discarding) what the server sends. It prints "driving" once the reply came.
Run it, then freeze it (SIGSTOP) or cut its link: the server must stop the robot.

usage: drive.py HOST PORT
"""
import socket
import struct
import sys
import time

host, port = sys.argv[1], int(sys.argv[2])
s = socket.create_connection((host, port), timeout=10)
pairs = b"pa" + b"lr"
s.sendall(b"dr" + struct.pack(">H", len(pairs)) + pairs)
head = s.recv(3)
size = struct.unpack(">H", head[1:3])[0]
reply = b""
while len(reply) < size:
    reply += s.recv(size - len(reply))
print("driving", reply.decode("ascii", "replace"), flush=True)
s.setblocking(False)
while True:
    s.sendall(b"cp" + struct.pack(">H", 4) + struct.pack(">hh", 200, 0))
    end = time.monotonic() + 0.1
    while time.monotonic() < end:
        try:
            if not s.recv(65536):
                sys.exit(0)
        except BlockingIOError:
            time.sleep(0.01)
