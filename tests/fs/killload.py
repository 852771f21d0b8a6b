# SPDX-License-Identifier: GPL-2.0-or-later
"""killload.py - a mixed workload that a kill -9 of the daemon may stop at
any point, and the check of what it made durable.

Usage: python3 killload.py run MOUNTPOINT STATE SEED SECONDS
       python3 killload.py verify MOUNTPOINT STATE

run     create, write, overwrite, append, truncate, rename and delete files
        and directories under MOUNTPOINT/w for SECONDS (or until the mount
        fails under it: the daemon died), and record in STATE (JSON, kept
        between runs) every file whose contents were made durable, with
        the SHA-256 of each state the file may be in after a crash.
verify  every recorded file has one of its recorded states; afterwards
        STATE holds only the state found, for the next run.

The durable files change only by the fsync'd protocols below, so what a
crash may leave of each is known exactly:
  replace   write a temporary file, fsync it, rename it over the name,
            fsync the directory: the old or the new contents until the
            directory fsync returns, then only the new;
  overwrite pwrite up to 8 KiB in place, fsync: old or new, then new;
  append    1 to 8 appends of 1 to 300 bytes each (O_APPEND), fsync: the
            old contents or the contents after one of the appends (a
            crash keeps whole writes, in order), then the last;
  delete    unlink, fsync the directory: the old contents or no file,
            then no file.
Everything else (scratch files and directories, writes never fsync'd)
only adds load: the check does not look at it.
"""
import errno
import hashlib
import json
import os
import random
import sys
import time

NDIRS = 6
NDURABLE = 48
NSCRATCH = 48
MAXSIZE = 192 * 1024
ABSENT = "-"

# The mount went away under us: the daemon died.
GONE = (errno.ENOTCONN, errno.ECONNABORTED)
# With the kernel's writeback cache a close or fsync whose pages the dead
# daemon can no longer take fails with EIO (KILLLOAD_EIO_GONE set).
if os.environ.get("KILLLOAD_EIO_GONE"):
    GONE += (errno.EIO,)


def sha(data):
    return hashlib.sha256(data).hexdigest()


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except FileNotFoundError:
        return {"files": {}, "runs": 0, "ops": 0}


def save(path, st):
    with open(path + ".new", "w") as f:
        json.dump(st, f)
    os.rename(path + ".new", path)


def fsync_path(p, flags=os.O_RDONLY):
    fd = os.open(p, flags)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class Load:
    def __init__(self, mnt, st, seed):
        self.root = os.path.join(mnt, "w")
        self.st = st
        self.files = st["files"]
        self.r = random.Random(seed)
        self.ops = 0

    def dpath(self, d):
        return os.path.join(self.root, "d%d" % d)

    def data(self):
        n = self.r.choice((0, 1, 511, 4096, 4097, 65536,
                           self.r.randrange(MAXSIZE)))
        return os.urandom(n)

    def setup(self):
        for p in [self.root] + [self.dpath(d) for d in range(NDIRS)]:
            if not os.path.isdir(p):
                os.mkdir(p)
        fsync_path(self.root)

    # --- the durable protocols -------------------------------------------
    def replace(self):
        d = self.r.randrange(NDIRS)
        name = "d%d/f%d" % (d, self.r.randrange(NDURABLE))
        tmp = os.path.join(self.dpath(d), ".tmp%d" % self.r.randrange(4))
        data = self.data()
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            os.write(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        old = self.files.get(name, [ABSENT])
        self.files[name] = old + [sha(data)]
        os.rename(tmp, os.path.join(self.root, name))
        fsync_path(self.dpath(d))
        self.files[name] = [sha(data)]

    def pick(self):
        """A durable file that exists: its name, path and contents."""
        if not self.files:
            return None
        name = self.r.choice(sorted(self.files))
        if self.files[name] == [ABSENT]:
            return None
        p = os.path.join(self.root, name)
        with open(p, "rb") as f:
            return name, p, f.read()

    def overwrite(self):
        picked = self.pick()
        if not picked:
            return
        name, p, cur = picked
        off = self.r.randrange(len(cur) + 1)
        piece = os.urandom(self.r.randrange(1, 8193))
        new = cur[:off] + piece + cur[off + len(piece):]
        self.files[name] = [sha(cur), sha(new)]
        fd = os.open(p, os.O_WRONLY)
        try:
            os.pwrite(fd, piece, off)
            os.fsync(fd)
        finally:
            os.close(fd)
        self.files[name] = [sha(new)]

    def append(self):
        picked = self.pick()
        if not picked:
            return
        name, p, cur = picked
        states = [sha(cur)]
        pieces = [os.urandom(self.r.randrange(1, 301))
                  for _ in range(self.r.randrange(1, 9))]
        for piece in pieces:
            cur += piece
            states.append(sha(cur))
        self.files[name] = states
        fd = os.open(p, os.O_WRONLY | os.O_APPEND)
        try:
            for piece in pieces:
                os.write(fd, piece)
            os.fsync(fd)
        finally:
            os.close(fd)
        self.files[name] = [states[-1]]

    def delete(self):
        if not self.files:
            return
        name = self.r.choice(sorted(self.files))
        if self.files[name] == [ABSENT]:
            return
        self.files[name] = self.files[name] + [ABSENT]
        os.unlink(os.path.join(self.root, name))
        fsync_path(os.path.dirname(os.path.join(self.root, name)))
        del self.files[name]

    # --- load that is not checked -----------------------------------------
    def scratch(self):
        d = self.r.randrange(NDIRS)
        p = os.path.join(self.dpath(d), "u%d" % self.r.randrange(NSCRATCH))
        what = self.r.randrange(7)
        if what == 0:
            with open(p, "wb") as f:
                f.write(self.data())
        elif what == 1 and os.path.exists(p):
            with open(p, "ab") as f:
                f.write(self.data())
        elif what == 2 and os.path.exists(p):
            os.truncate(p, self.r.randrange(MAXSIZE))
        elif what == 3 and os.path.exists(p):
            q = os.path.join(self.dpath(self.r.randrange(NDIRS)),
                             "u%d" % self.r.randrange(NSCRATCH))
            os.rename(p, q)
        elif what == 4 and os.path.exists(p):
            os.unlink(p)
        elif what == 5:
            sub = os.path.join(self.dpath(d), "sub%d" % self.r.randrange(4))
            if os.path.isdir(sub):
                for n in os.listdir(sub):
                    os.unlink(os.path.join(sub, n))
                os.rmdir(sub)
            else:
                os.mkdir(sub)
                for i in range(self.r.randrange(5)):
                    with open(os.path.join(sub, "x%d" % i), "wb") as f:
                        f.write(self.data())
        elif what == 6 and os.path.exists(p):
            fd = os.open(p, os.O_WRONLY)
            try:
                os.pwrite(fd, os.urandom(self.r.randrange(1, 20000)),
                          self.r.randrange(MAXSIZE))
            finally:
                os.close(fd)

    def step(self):
        x = self.r.random()
        if x < 0.30:
            self.replace()
        elif x < 0.42:
            self.overwrite()
        elif x < 0.52:
            self.append()
        elif x < 0.57:
            self.delete()
        else:
            self.scratch()
        self.ops += 1


def run(mnt, state, seed, secs):
    st = load(state)
    ld = Load(mnt, st, seed)
    end = time.monotonic() + secs
    why = "time"
    try:
        ld.setup()
        while time.monotonic() < end:
            ld.step()
    except OSError as e:
        if e.errno not in GONE:
            raise
        why = errno.errorcode.get(e.errno, str(e.errno))
    finally:
        st["runs"] += 1
        st["ops"] += ld.ops
        save(state, st)
    print("ops %d, durable files %d, stopped by %s" %
          (ld.ops, len(st["files"]), why))


def verify(mnt, state):
    st = load(state)
    bad = 0
    for name, ok in sorted(st["files"].items()):
        p = os.path.join(mnt, "w", name)
        try:
            with open(p, "rb") as f:
                got = sha(f.read())
        except FileNotFoundError:
            got = ABSENT
        except OSError as e:
            print("FAIL: %s: %s (the daemon died?)" % (name, e),
                  file=sys.stderr)
            sys.exit(2)
        if got not in ok:
            print("FAIL: %s: %s, expected one of %s" %
                  (name, got[:12], [s[:12] for s in ok]), file=sys.stderr)
            bad += 1
            continue
        st["files"][name] = [got]
    st["files"] = {n: v for n, v in st["files"].items() if v != [ABSENT]}
    save(state, st)
    if bad:
        sys.exit(1)
    print("verified %d durable files" % len(st["files"]))


def main():
    if len(sys.argv) == 6 and sys.argv[1] == "run":
        run(sys.argv[2], sys.argv[3], int(sys.argv[4]), float(sys.argv[5]))
    elif len(sys.argv) == 4 and sys.argv[1] == "verify":
        verify(sys.argv[2], sys.argv[3])
    else:
        print(__doc__, file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()
