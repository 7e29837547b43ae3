#!/usr/bin/env python3
# A small raw Varlink client for the reliability suites: it speaks the wire
# protocol itself (NUL-terminated JSON messages over a Unix stream socket,
# file descriptors passed with SCM_RIGHTS), so a test can send what
# fatelfctl never would, and misbehave on purpose: garbage, a message that
# never ends, thousands of held connections, calls whose replies are never
# read, fds that are not bundles, a bundle fed through a pipe that stalls
# at a chosen moment.
#
# It is also the one module the suites' own Python speaks Varlink with
# (the reliability suites put it on PYTHONPATH): connect, send, Reader,
# call and progress below.
#
# Usage: vlclient.py SUBCOMMAND SOCKET [ARGS...]; each subcommand prints
# what it saw as "key=value" words or JSON lines on stdout, and exits 0
# when it could run (what the daemon did is for the caller to judge), 2
# on a usage error, 3 when it could not connect at all.
#
#   call SOCK JSON... [--fd PATH|pipe-silent:SEC|dir:PATH|socket:SEC|dev:PATH]
#       the calls, sent in one write (with the fd, passed as index 0);
#       prints every reply of each call that is not oneway (one JSON per
#       line) until its last one, or "closed" when the daemon hung up
#       first.
#   repeat SOCK JSON MAXSEC REPLYSEC
#       one connection; sends the call, reads its reply, and again, for
#       MAXSEC; prints "none N" after N calls that were all answered,
#       "closed N" when the daemon hung up on call N, or "hung N" when
#       call N got no reply within REPLYSEC (the connection is then held
#       open for a minute).
#   garbage SOCK HEXBYTES|@TEXT
#       sends raw bytes (a NUL is added), prints the reply or "closed".
#   nonul SOCK MAXBYTES
#       sends a message without a NUL, 64 KiB at a time, until the daemon
#       closes the connection (prints closed_after=N) or MAXBYTES were sent
#       (prints still_open_after=N).
#   hold SOCK N READYFILE STOPFILE
#       opens N connections and keeps them; prints opened= refused=
#       (connections the daemon closed at once, or connect failures),
#       touches READYFILE, waits until STOPFILE exists, closes everything.
#   noread SOCK JSON MAXSEC
#       sends the call again and again and never reads a reply, until the
#       daemon drops the connection (prints dropped=1 calls=N) or MAXSEC
#       passed (dropped=0).
#   hoard SOCK N JSON MAXSEC
#       keeps N connections that send the call again and again and never
#       read a reply, opening a new one for each the daemon drops, for
#       MAXSEC; prints opened=N dropped=N refused=N calls=N.
#   bigcalls SOCK N SIZE READYFILE STOPFILE
#       opens N connections; on each sends one call padded with blanks to
#       SIZE bytes and reads its reply, so that nothing stays unread;
#       prints opened= answered= closed=, touches READYFILE, keeps the
#       connections until STOPFILE exists.
#   slowinstall SOCK BUNDLE FIRSTBYTES PHASE SWAPCMD [JSONPARAMS]
#       Install{fd} from a pipe: writes the first FIRSTBYTES of BUNDLE,
#       polls Status on a second connection until the running
#       transaction's phase is PHASE, runs SWAPCMD (sh -c), then writes the
#       rest and prints the replies; "phase_seen=1|0" first.
import array
import json
import os
import resource
import select
import socket
import subprocess
import sys
import threading
import time


def connect(path, timeout=60):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(timeout)
    s.connect(path)
    return s


def encode(msg):
    """One message on the wire: JSON (or raw bytes as given) and its NUL."""
    return (msg if isinstance(msg, bytes) else json.dumps(msg).encode()) + b"\0"


def send(s, msg, fds=()):
    """Sends one message, or a list of them in one write, with fds."""
    data = b"".join(map(encode, msg)) if isinstance(msg, list) else encode(msg)
    if fds:
        s.sendmsg([data], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))])
    else:
        s.sendall(data)


class Reader:
    """Reads NUL-terminated replies; None once the peer closed."""

    def __init__(self, s):
        self.s = s
        self.buf = b""

    def next(self):
        while b"\0" not in self.buf:
            try:
                d = self.s.recv(65536)
            except (ConnectionResetError, BrokenPipeError):
                d = b""
            if not d:
                return None
            self.buf += d
        raw, _, self.buf = self.buf.partition(b"\0")
        return json.loads(raw)


def call(s, msg, reader=None):
    """Sends one call and returns its (first) reply; None once the peer
    closed. Pass the connection's Reader when it makes more than one."""
    send(s, msg)
    return (reader or Reader(s)).next()


def progress(sock, timeout=10):
    """The running transaction's progress as Status shows it ({} when
    there is none, None when Status did not answer)."""
    s = connect(sock, timeout)
    m = call(s, {"method": "io.fatelf.Manager.Status"})
    s.close()
    if not m or "parameters" not in m:
        return None
    return m["parameters"].get("progress") or {}


def replies(s, reader=None):
    """Prints every reply of one call (follows "continues"); False when
    the daemon hung up first."""
    r = reader or Reader(s)
    while True:
        m = r.next()
        if m is None:
            print("closed")
            return False
        print(json.dumps(m))
        sys.stdout.flush()
        if not m.get("continues"):
            return True


def make_fd(spec, keep):
    """An fd to pass; keep collects what must stay open (or run) meanwhile."""
    kind, _, arg = spec.partition(":")
    if kind == "pipe-silent":
        r, w = os.pipe()
        # The write end stays open, sending nothing, for SEC seconds.
        t = threading.Timer(float(arg), os.close, [w])
        t.daemon = True
        t.start()
        keep.append(t)
        return r
    if kind == "socket":
        a, b = socket.socketpair()
        t = threading.Timer(float(arg), b.close)
        t.daemon = True
        t.start()
        keep.extend([a, b, t])
        return a.fileno()
    if kind == "dir":
        return os.open(arg, os.O_RDONLY | os.O_DIRECTORY)
    if kind == "dev":
        return os.open(arg, os.O_RDONLY)
    return os.open(spec, os.O_RDONLY)


def cmd_call(sock, args):
    msgs, keep, fds = [], [], []
    while args:
        if args[0] == "--fd" and len(args) > 1:
            fds.append(make_fd(args[1], keep))
            args = args[2:]
        else:
            msgs.append(json.loads(args[0]))
            args = args[1:]
    s = connect(sock)
    send(s, msgs, fds)
    r = Reader(s)
    for m in msgs:
        if not m.get("oneway") and not replies(s, r):
            return


def cmd_repeat(sock, args):
    msg, maxsec, wait = json.loads(args[0]), float(args[1]), float(args[2])
    s = connect(sock)
    r = Reader(s)
    end, n = time.time() + maxsec, 0
    while time.time() < end:
        n += 1
        send(s, msg)
        s.settimeout(wait)
        try:
            m = r.next()
        except socket.timeout:
            print("hung", n, flush=True)
            time.sleep(60)
            return
        if m is None:
            print("closed", n, flush=True)
            return
    print("none", n, flush=True)


def cmd_garbage(sock, args):
    a = args[0]
    data = a[1:].encode() if a.startswith("@") else bytes.fromhex(a)
    s = connect(sock, 20)
    s.sendall(data + b"\0")
    m = Reader(s).next()
    print("closed" if m is None else json.dumps(m))


def peer_closed(s):
    p = select.poll()
    p.register(s, select.POLLIN | select.POLLHUP | select.POLLERR | select.POLLRDHUP)
    for fd, ev in p.poll(0):
        if ev & (select.POLLHUP | select.POLLERR | select.POLLRDHUP):
            return True
        if ev & select.POLLIN:
            try:
                if s.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) == b"":
                    return True
            except (ConnectionResetError, BlockingIOError):
                return True
    return False


def cmd_nonul(sock, args):
    limit = int(args[0])
    s = connect(sock, 20)
    s.sendall(b'{"method":"io.fatelf.Manager.Status","parameters":{"pad":"')
    chunk = b"x" * 65536
    sent = 0
    while sent < limit:
        try:
            s.sendall(chunk)
        except (BrokenPipeError, ConnectionResetError):
            print("closed_after=%d" % sent)
            return
        except socket.timeout:
            # The daemon stopped reading without closing.
            print("stalled_after=%d" % sent)
            return
        sent += len(chunk)
    time.sleep(0.5)
    print(("closed_after=%d" if peer_closed(s) else "still_open_after=%d") % sent)


def cmd_hold(sock, args):
    n, ready, stop = int(args[0]), args[1], args[2]
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = n + 256
    if soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(want, hard), hard))
    conns, failed = [], 0
    for _ in range(n):
        try:
            conns.append(connect(sock, 5))
        except OSError:
            failed += 1
    # The daemon closes a connection over the limit as soon as it
    # accepts it: give it a moment, then count the ones still open.
    deadline = time.time() + 10
    while time.time() < deadline:
        closed = sum(1 for c in conns if peer_closed(c))
        time.sleep(0.5)
        if sum(1 for c in conns if peer_closed(c)) == closed:
            break
    refused = failed + sum(1 for c in conns if peer_closed(c))
    print("opened=%d refused=%d" % (n - refused, refused))
    sys.stdout.flush()
    open(ready, "w").close()
    while not os.path.exists(stop):
        time.sleep(0.1)
    for c in conns:
        c.close()


def cmd_noread(sock, args):
    msg = json.dumps(json.loads(args[0])).encode() + b"\0"
    maxsec = float(args[1])
    s = connect(sock, 60)
    s.setblocking(False)
    calls = 0
    end = time.time() + maxsec
    while time.time() < end:
        try:
            s.send(msg)
            calls += 1
            continue
        except BlockingIOError:
            pass
        except (BrokenPipeError, ConnectionResetError):
            print("dropped=1 calls=%d" % calls)
            return
        if peer_closed(s):
            print("dropped=1 calls=%d" % calls)
            return
        select.select([], [s], [], 0.2)
    print("dropped=0 calls=%d" % calls)


def cmd_hoard(sock, args):
    n, msg, maxsec = int(args[0]), json.dumps(json.loads(args[1])).encode() + b"\0", float(args[2])
    batch = msg * max(1, 65536 // len(msg))
    per_batch = max(1, 65536 // len(msg))
    st = {"opened": 0, "dropped": 0, "refused": 0, "calls": 0}
    out = {}

    def open_one():
        try:
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.connect(sock)
            s.setblocking(False)
        except OSError:
            st["refused"] += 1
            return
        st["opened"] += 1
        out[s] = b""

    for _ in range(n):
        open_one()
    end = time.time() + maxsec
    while time.time() < end:
        if len(out) < n:
            open_one()
        if not out:
            time.sleep(0.05)
            continue
        _, writable, _ = select.select([], list(out), [], 0.1)
        for s in writable:
            if not out[s]:
                out[s] = batch
                st["calls"] += per_batch
            try:
                k = s.send(out[s])
                out[s] = out[s][k:]
            except BlockingIOError:
                pass
            except OSError:
                st["dropped"] += 1
                del out[s]
                s.close()
    print(" ".join("%s=%d" % (k, st[k]) for k in ("opened", "dropped", "refused", "calls")))


def cmd_bigcalls(sock, args):
    n, size, ready, stop = int(args[0]), int(args[1]), args[2], args[3]
    call = json.dumps({"method": "io.fatelf.Manager.Status", "parameters": {}}).encode()
    msg = call + b" " * max(0, size - len(call))
    st = {"opened": 0, "answered": 0, "closed": 0}
    keep = []
    for _ in range(n):
        try:
            s = connect(sock, 30)
            send(s, msg)
        except OSError:
            st["closed"] += 1
            continue
        st["opened"] += 1
        m = Reader(s).next()
        if m is None:
            st["closed"] += 1
            s.close()
            continue
        st["answered"] += 1
        keep.append(s)
    print(" ".join("%s=%d" % (k, st[k]) for k in ("opened", "answered", "closed")))
    sys.stdout.flush()
    open(ready, "w").close()
    while not os.path.exists(stop):
        time.sleep(0.05)
    for s in keep:
        s.close()


def status_phase(sock):
    return (progress(sock) or {}).get("phase")


def cmd_slowinstall(sock, args):
    bundle, first, phase, swap = args[0], int(args[1]), args[2], args[3]
    params = json.loads(args[4]) if len(args) > 4 else {}
    params["fd"] = 0
    with open(bundle, "rb") as f:
        data = f.read()
    r, w = os.pipe()
    s = connect(sock, 120)
    send(s, {"method": "io.fatelf.Manager.Install", "parameters": params, "more": True}, [r])
    os.close(r)
    off = 0
    while off < first:
        off += os.write(w, data[off:first])
    seen = False
    deadline = time.time() + 30
    while time.time() < deadline:
        if status_phase(sock) == phase:
            seen = True
            break
        time.sleep(0.02)
    print("phase_seen=%d" % seen)
    sys.stdout.flush()
    if seen:
        subprocess.run(["sh", "-c", swap], check=False)
    while off < len(data):
        off += os.write(w, data[off:])
    os.close(w)
    replies(s)


def main():
    cmds = {
        "call": cmd_call,
        "repeat": cmd_repeat,
        "garbage": cmd_garbage,
        "nonul": cmd_nonul,
        "hold": cmd_hold,
        "noread": cmd_noread,
        "slowinstall": cmd_slowinstall,
        "hoard": cmd_hoard,
        "bigcalls": cmd_bigcalls,
    }
    if len(sys.argv) < 3 or sys.argv[1] not in cmds:
        sys.stderr.write("usage: vlclient.py {%s} SOCKET [ARGS...]\n" % "|".join(cmds))
        sys.exit(2)
    try:
        cmds[sys.argv[1]](sys.argv[2], sys.argv[3:])
    except (ConnectionRefusedError, FileNotFoundError) as e:
        sys.stderr.write("vlclient: %s: %s\n" % (sys.argv[2], e))
        sys.exit(3)


if __name__ == "__main__":
    main()
