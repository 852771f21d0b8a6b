#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Metadata workloads for bench/run.sh; each prints its elapsed seconds.

  meta.py create DIR N     create N empty files f0..f(N-1) in DIR
  meta.py stat DIR N       stat them (by name, as ls -l or make does)
  meta.py readdir DIR N    list DIR; fails unless it holds exactly N names
  meta.py unlink DIR N     unlink them
  meta.py tree DIR N       N empty files in subdirectories of 1000 each
  meta.py walk DIR N       list every subdirectory and stat every file;
                           fails unless it finds exactly N files
  meta.py readtree DIR N   open, read and close every regular file of the
                           tree under DIR; fails unless they hold N bytes
  meta.py append DIR N     N appends of 100 bytes to DIR/log (O_APPEND, as
                           a logger writes lines), then fsync; fails
                           unless the file then holds N * 100 bytes

A missing file or a wrong count is an error (exit 1), so a filesystem that
loses names cannot look fast.
"""
import os
import sys
import time


def create(d, n):
    flags = os.O_CREAT | os.O_EXCL | os.O_WRONLY
    for i in range(n):
        os.close(os.open(os.path.join(d, "f%d" % i), flags, 0o644))


def stat(d, n):
    for i in range(n):
        st = os.lstat(os.path.join(d, "f%d" % i))
        if st.st_size != 0:
            raise SystemExit("f%d: size %d, not 0" % (i, st.st_size))


def readdir(d, n):
    got = 0
    with os.scandir(d) as it:
        for _ in it:
            got += 1
    if got != n:
        raise SystemExit("%s: %d names, not %d" % (d, got, n))


def unlink(d, n):
    for i in range(n):
        os.unlink(os.path.join(d, "f%d" % i))


def tree(d, n):
    flags = os.O_CREAT | os.O_EXCL | os.O_WRONLY
    for i in range(n):
        sub = os.path.join(d, "d%d" % (i // 1000))
        if i % 1000 == 0:
            os.mkdir(sub)
        os.close(os.open(os.path.join(sub, "f%d" % i), flags, 0o644))


def walk(d, n):
    got = 0
    for sub in os.scandir(d):
        with os.scandir(sub.path) as it:
            for e in it:
                os.lstat(e.path)
                got += 1
    if got != n:
        raise SystemExit("%s: %d files, not %d" % (d, got, n))


def readtree(d, n):
    got = 0
    for root, _, files in os.walk(d):
        for f in files:
            p = os.path.join(root, f)
            if os.path.islink(p):
                continue
            fd = os.open(p, os.O_RDONLY)
            try:
                while True:
                    b = os.read(fd, 1 << 20)
                    if not b:
                        break
                    got += len(b)
            finally:
                os.close(fd)
    if got != n:
        raise SystemExit("%s: %d bytes read, not %d" % (d, got, n))


def append(d, n):
    line = b"x" * 99 + b"\n"
    p = os.path.join(d, "log")
    fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        for _ in range(n):
            os.write(fd, line)
        os.fsync(fd)
    finally:
        os.close(fd)
    if os.stat(p).st_size != n * len(line):
        raise SystemExit("%s: %d bytes, not %d" %
                         (p, os.stat(p).st_size, n * len(line)))
    os.unlink(p)


def main():
    if len(sys.argv) != 4:
        raise SystemExit(__doc__)
    op = {"create": create, "stat": stat, "readdir": readdir,
          "unlink": unlink, "tree": tree, "walk": walk,
          "readtree": readtree, "append": append}[sys.argv[1]]
    t = time.monotonic()
    op(sys.argv[2], int(sys.argv[3]))
    print("%.6f" % (time.monotonic() - t))


if __name__ == "__main__":
    main()
