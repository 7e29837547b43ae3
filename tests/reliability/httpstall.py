#!/usr/bin/env python3
# An HTTP server on 127.0.0.1 that never finishes a reply, for the suites'
# stalled downloads.
#
# Usage: httpstall.py PORT [FILE]; PORT 0 takes a free port. It prints
# "ready PORT" once it listens, then answers every request, each in a
# thread of its own:
#   without FILE: headers that announce 1000000 bytes, then one byte a
#       second, for ever;
#   with FILE: headers for FILE's length and its first half, then nothing,
#       the connection held open.
import socket
import sys
import threading
import time


def drip(c):
    c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 1000000\r\n\r\n")
    while True:
        c.sendall(b"x")
        time.sleep(1)


def half(c, data):
    c.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\n"
              b"Content-Length: %d\r\n\r\n" % len(data))
    c.sendall(data[: len(data) // 2])
    while c.recv(65536):  # never another byte; held until the peer goes
        pass


def serve(c, data):
    try:
        c.recv(65536)
        if data is None:
            drip(c)
        else:
            half(c, data)
    except OSError:
        pass
    c.close()


def main():
    if len(sys.argv) not in (2, 3):
        sys.stderr.write("usage: httpstall.py PORT [FILE]\n")
        sys.exit(2)
    data = None
    if len(sys.argv) == 3:
        with open(sys.argv[2], "rb") as f:
            data = f.read()
    srv = socket.socket()
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("127.0.0.1", int(sys.argv[1])))
    srv.listen(16)
    print("ready %d" % srv.getsockname()[1], flush=True)
    while True:
        c, _ = srv.accept()
        threading.Thread(target=serve, args=(c, data), daemon=True).start()


if __name__ == "__main__":
    main()
