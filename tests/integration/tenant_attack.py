#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""tenant_attack: another local user goes at a victim's urxe runtime state.

Run as a user other than the victim's (t_tenants.sh).  Until the file
--until appears (or --time seconds pass) it goes round, again and again,
every file urxe keeps in the victim's directory (--dir: slots, counters,
mcast, xrcd and the XRC domain files xrcd.I.G it can name) and the
directory itself, trying to: read it, open it to write, truncate it, extend
it, scribble random and crafted records over it, replace it (rename and
link over, a symlink in its place), unlink it, chmod it, take its locks;
to list, add to, rename and remove the directory.  Meanwhile it holds the
abstract socket names of slots 1..--names of the victim's base (--base)
that it can get, and tries to connect to the names the victim holds.

It prints one line per kind of attempt, "op: N tried, M done", a line
"names: K held of N" and "connect: C tried, D connected", then "done: M"
with the total of what it managed against the victim.  Exit 0 when it ran.
"""
import argparse
import errno
import os
import random
import socket
import struct
import sys
import time

FILES = ["slots", "counters", "mcast", "xrcd"] + [
    "xrcd.%d.%d" % (i, g) for i in range(4) for g in range(1, 4)]


def fnv64(s):
    h = 14695981039346656037
    for b in s.encode():
        h = ((h ^ b) * 1099511628211) & 0xFFFFFFFFFFFFFFFF
    return h


def slot_name(base, k):
    if base == "/dev/shm":
        return "\0urxe-v2/slot/%d" % k
    return "\0urxe-v2/%016x/slot/%d" % (fnv64(base), k)


def crafted(name):
    """Records that would pass for good ones if they were believed."""
    if name == "counters":
        # A complete-looking stats header for slot 1 (magic "uxeS").
        return struct.pack("<IIiIQ", 0x53657875, 7, 1, 1, 0) + b"rxe0"
    if name == "mcast":
        # A member record: group ::ffff:239.255.0.77, slot 1, refs 1.
        gid = bytes(10) + b"\xff\xff" + bytes([239, 255, 0, 77])
        return gid + struct.pack("<IIiI", 1, 1, 1, 1)
    if name.startswith("xrcd"):
        return struct.pack("<II", 0x31637278, 64) + bytes(56)
    return b"\xff" * 64


class Tally:
    def __init__(self):
        self.tried = {}
        self.done = {}

    def attempt(self, op, fn):
        self.tried[op] = self.tried.get(op, 0) + 1
        try:
            fn()
        except OSError:
            return False
        self.done[op] = self.done.get(op, 0) + 1
        return True


def open_fd(path, flags):
    fd = os.open(path, flags | os.O_NOFOLLOW | os.O_NONBLOCK)
    return fd


def write_at(path, data, off):
    fd = open_fd(path, os.O_WRONLY)
    try:
        os.pwrite(fd, data, off)
    finally:
        os.close(fd)


def truncate(path, size):
    os.truncate(path, size)


def lock(path):
    import fcntl
    fd = open_fd(path, os.O_RDWR)
    try:
        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, 0)
    finally:
        os.close(fd)


def replace(path, mine):
    os.rename(mine, path)


def round_files(t, d, mine, rnd):
    for name in FILES:
        p = os.path.join(d, name)
        t.attempt("read", lambda: os.close(open_fd(p, os.O_RDONLY)))
        t.attempt("open-write", lambda: os.close(open_fd(p, os.O_RDWR)))
        t.attempt("create", lambda: os.close(
            os.open(p, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)))
        t.attempt("truncate", lambda: truncate(p, 0))
        t.attempt("extend", lambda: truncate(p, 1 << 30))
        t.attempt("scribble", lambda: write_at(
            p, rnd.randbytes(4096), rnd.randrange(0, 1 << 20)))
        t.attempt("craft", lambda: write_at(p, crafted(name), 0))
        t.attempt("replace", lambda: replace(p, mine))
        t.attempt("link-over", lambda: os.link(mine, p))
        t.attempt("symlink", lambda: os.symlink("/dev/zero", p))
        t.attempt("unlink", lambda: os.unlink(p))
        t.attempt("chmod", lambda: os.chmod(p, 0o666))
        t.attempt("lock", lambda: lock(p))
    t.attempt("list", lambda: os.listdir(d))
    t.attempt("mkdir-in", lambda: os.mkdir(os.path.join(d, "x")))
    t.attempt("chmod-dir", lambda: os.chmod(d, 0o777))
    t.attempt("rename-dir", lambda: os.rename(d, d + ".gone"))
    t.attempt("rmdir", lambda: os.rmdir(d))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", required=True)
    ap.add_argument("--base", required=True)
    ap.add_argument("--names", type=int, default=32)
    ap.add_argument("--until", required=True)
    ap.add_argument("--time", type=float, default=120)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--mine", required=True,
                    help="a writable directory of the attacker's")
    a = ap.parse_args()
    rnd = random.Random(a.seed)
    t = Tally()

    held = []
    for k in range(1, a.names + 1):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            s.bind(slot_name(a.base, k))
            held.append(s)
        except OSError:
            s.close()
    print("names: %d held of %d" % (len(held), a.names), flush=True)

    conn_tried = conn_done = 0
    mine = os.path.join(a.mine, "mine")
    deadline = time.monotonic() + a.time
    rounds = 0
    while not os.path.exists(a.until) and time.monotonic() < deadline:
        with open(mine, "wb") as f:
            f.write(rnd.randbytes(8192))
        round_files(t, a.dir, mine, rnd)
        # The victim's slot names: bound, but nobody can connect.
        for k in range(a.names + 1, a.names + 9):
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.setblocking(False)
            conn_tried += 1
            try:
                s.connect(slot_name(a.base, k))
                conn_done += 1
            except OSError as e:
                if e.errno not in (errno.ECONNREFUSED, errno.ENOENT):
                    print("connect %d: %s" % (k, e), flush=True)
            s.close()
        rounds += 1
        time.sleep(0.01)
    total = 0
    for op in sorted(t.tried):
        n = t.done.get(op, 0)
        total += n
        print("%s: %d tried, %d done" % (op, t.tried[op], n))
    print("connect: %d tried, %d connected" % (conn_tried, conn_done))
    print("rounds: %d" % rounds)
    print("done: %d" % (total + conn_done), flush=True)
    for s in held:
        s.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
