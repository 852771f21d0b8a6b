# SPDX-License-Identifier: GPL-2.0-or-later
"""ace.py - short crash workloads in the manner of CrashMonkey/ACE, on a
real mount: a few operations, an fsync-family call, kill -9 of the daemon
the moment that call returns, then a remount and a check of what fsync
promised.

Usage: python3 ace.py [options] DEVICE MOUNTPOINT

Each workload runs in a directory of its own on one filesystem (the
earlier workloads' crash states stay, so later mounts also start from
them). It makes a small file set (files a, b and d/c, directory d), makes
it durable with fsync, then runs one to three operations from write
(overwrite, append, unaligned, past the end), truncate, create, an
O_TMPFILE linked into place, link, unlink, rename (also with a whiteout
left behind), mkdir, rmdir, symlink, punch hole, zero range and
setxattr, with fsync or
fdatasync of a file or a directory between and after them. Right after the
last fsync returns the daemon gets SIGKILL. Then:

  * fsck.smrfs -n of the crashed device finds nothing (exit 0);
  * after the remount, every file that was fsync'd (found by its inode
    number, which smrfs keeps) has the data and size it had at its fsync,
    or those it had at the kill if it changed after;
  * a name the file had at its fsync is there, and every name a fsync'd
    directory held at its fsync is there (both as at the kill if they
    changed after);
  * with --exact (a mount whose fsync commits everything, and a long
    commit interval), the whole workload directory is exactly as it was
    at the kill;
  * everything under the directory reads; after a clean unmount (or, every
    other workload, a second kill -9) fsck.smrfs -n finds nothing again,
    and the next workload mounts that state.

Options: --mount/--fsck PROGRAM, -o OPTS (mount options), --seed S,
--count N (workloads), --exact, --want-replays (fail unless some remount
replayed an fsync log), -v. Exit 1 on the first failure, with the
workload printed so that --seed and --only N replay it.
"""
import argparse
import ctypes
import errno
import hashlib
import os
import random
import signal
import stat
import subprocess
import sys
import time

FALLOC_FL_KEEP_SIZE = 1
FALLOC_FL_PUNCH_HOLE = 2
FALLOC_FL_ZERO_RANGE = 0x10
RENAME_WHITEOUT = 4
AT_FDCWD = -100
AT_EMPTY_PATH = 0x1000

libc = ctypes.CDLL(None, use_errno=True)
libc.fallocate.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_long,
                           ctypes.c_long]


class Fail(Exception):
    pass


def is_mounted(mnt):
    with open("/proc/self/mounts") as f:
        return any(line.split()[1] == mnt for line in f)


def pattern(tag, n):
    """n bytes that differ from every other (tag, offset)."""
    out = bytearray()
    i = 0
    while len(out) < n:
        out += hashlib.sha256(b"%s:%d" % (tag.encode(), i)).digest()
        i += 1
    return bytes(out[:n])


# ---- the operations ------------------------------------------------------

FILES = ["a", "b", "d/c", "n"]
DIRS = [".", "d"]
RANGES = [(0, 4096), (100, 50), (4000, 5000), (-1, 3000), (20000, 100)]
SIZES = [0, 1000, 4096, 30000]
RENAMES = [("a", "b"), ("a", "d/ra"), ("d/c", "c2"), ("b", "n"),
           ("d", "d2"), ("n", "a")]
LINKS = [("a", "d/la"), ("d/c", "lc"), ("n", "d/ln")]


def choose_op(r):
    kind = r.choice(["write", "write", "write", "trunc", "creat",
                     "tmpfile", "link", "unlink", "rename", "rename",
                     "whiteout", "mkdir", "rmdir", "symlink", "punch",
                     "zero", "setxattr"])
    if kind == "write":
        return (kind, r.choice(FILES), r.choice(RANGES))
    if kind == "trunc":
        return (kind, r.choice(FILES), r.choice(SIZES))
    if kind in ("creat", "tmpfile"):
        return (kind, r.choice(["n", "d/n"]))
    if kind == "link":
        return (kind,) + r.choice(LINKS)
    if kind == "unlink":
        return (kind, r.choice(["a", "b", "d/c", "n"]))
    if kind in ("rename", "whiteout"):
        return (kind,) + r.choice(RENAMES)
    if kind in ("mkdir", "rmdir"):
        return (kind, r.choice(["e", "d/e"]))
    if kind == "symlink":
        return (kind, r.choice(["s", "d/s"]))
    if kind in ("punch", "zero"):
        return (kind, r.choice(FILES), r.choice(RANGES[:3]))
    return (kind, r.choice(FILES))


def choose_sync(r):
    kind = r.choice(["fsync", "fsync", "fdatasync"])
    if r.random() < 0.3:
        return ("fsync", r.choice(DIRS))
    return (kind, r.choice(FILES))


def make_workload(r):
    ops = [choose_op(r) for _ in range(r.randint(1, 3))]
    out = []
    for op in ops:
        out.append(op)
        if r.random() < 0.25:
            out.append(choose_sync(r))
    if out[-1][0] not in ("fsync", "fdatasync"):
        out.append(choose_sync(r))
    # Sometimes fsync the file and then its directory, as applications
    # that want a new name durable do.
    if out[-1][1] in FILES and r.random() < 0.3:
        out.append(("fsync", os.path.dirname(out[-1][1]) or "."))
    return out


def run_op(w, op, tag):
    """Run one operation in directory w; an error that the file set's
    state explains (the file is gone, the name taken) makes it a no-op."""
    kind = op[0]
    p = lambda name: os.path.join(w, name)  # noqa: E731
    try:
        if kind in ("write", "trunc", "punch", "zero", "setxattr", "fsync",
                    "fdatasync") and \
                stat.S_ISCHR(os.lstat(p(op[1])).st_mode):
            return False  # a whiteout now: no file to work on
        if kind == "write":
            off, n = op[2]
            fd = os.open(p(op[1]), os.O_WRONLY)
            try:
                if off < 0:
                    off = os.fstat(fd).st_size
                os.pwrite(fd, pattern(tag, n), off)
            finally:
                os.close(fd)
        elif kind == "trunc":
            os.truncate(p(op[1]), op[2])
        elif kind == "creat":
            fd = os.open(p(op[1]), os.O_WRONLY | os.O_CREAT | os.O_EXCL,
                         0o644)
            try:
                os.write(fd, pattern(tag, 2000))
            finally:
                os.close(fd)
        elif kind == "tmpfile":
            # Written unnamed, then named: it appears whole or not at all.
            fd = os.open(os.path.dirname(p(op[1])),
                         os.O_TMPFILE | os.O_WRONLY, 0o644)
            try:
                os.write(fd, pattern(tag, 3000))
                if libc.linkat(fd, b"", AT_FDCWD, os.fsencode(p(op[1])),
                               AT_EMPTY_PATH) != 0:
                    e = ctypes.get_errno()
                    raise OSError(e, os.strerror(e))
            finally:
                os.close(fd)
        elif kind == "link":
            os.link(p(op[1]), p(op[2]))
        elif kind == "unlink":
            os.unlink(p(op[1]))
        elif kind == "rename":
            os.rename(p(op[1]), p(op[2]))
        elif kind == "whiteout":
            if libc.renameat2(AT_FDCWD, os.fsencode(p(op[1])), AT_FDCWD,
                              os.fsencode(p(op[2])), RENAME_WHITEOUT) != 0:
                e = ctypes.get_errno()
                raise OSError(e, os.strerror(e))
        elif kind == "mkdir":
            os.mkdir(p(op[1]))
        elif kind == "rmdir":
            os.rmdir(p(op[1]))
        elif kind == "symlink":
            os.symlink("a", p(op[1]))
        elif kind in ("punch", "zero"):
            off, n = op[2]
            mode = (FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE
                    if kind == "punch" else FALLOC_FL_ZERO_RANGE)
            fd = os.open(p(op[1]), os.O_WRONLY)
            try:
                if libc.fallocate(fd, mode, off, n) != 0:
                    e = ctypes.get_errno()
                    raise OSError(e, os.strerror(e))
            finally:
                os.close(fd)
        elif kind == "setxattr":
            os.setxattr(p(op[1]), "user.k", pattern(tag, 40))
        elif kind in ("fsync", "fdatasync"):
            path = p(op[1])
            isdir = os.path.isdir(path)
            fd = os.open(path, os.O_RDONLY if isdir else os.O_WRONLY)
            try:
                (os.fsync if kind == "fsync" else os.fdatasync)(fd)
            finally:
                os.close(fd)
        else:
            raise ValueError(kind)
    except OSError as e:
        # (EOPNOTSUPP: a mode fsx.sh and posix.sh insist on, not here.)
        if e.errno in (errno.ENOENT, errno.EEXIST, errno.ENOTEMPTY,
                       errno.EISDIR, errno.ENOTDIR, errno.EOPNOTSUPP):
            return False
        raise
    return True


# ---- states --------------------------------------------------------------

def file_state(path):
    st = os.lstat(path)
    with open(path, "rb") as f:
        data = f.read()
    try:
        xa = {k: os.getxattr(path, k) for k in os.listxattr(path)}
    except OSError:
        xa = {}
    return {"ino": st.st_ino, "size": st.st_size,
            "sum": hashlib.sha256(data).hexdigest(), "xattrs": xa}


def tree(w):
    """Everything under w: relative path -> what it is."""
    out = {}
    for root, dirs, files in os.walk(w):
        for name in dirs + files:
            path = os.path.join(root, name)
            rel = os.path.relpath(path, w)
            st = os.lstat(path)
            if os.path.islink(path):
                out[rel] = ("l", os.readlink(path))
            elif stat.S_ISCHR(st.st_mode):  # a whiteout
                out[rel] = ("c", st.st_rdev, st.st_mode)
            elif os.path.isdir(path):
                out[rel] = ("d", st.st_mode & 0o7777)
            else:
                fs = file_state(path)
                out[rel] = ("f", st.st_ino, st.st_nlink, fs["size"],
                            fs["sum"], tuple(sorted(fs["xattrs"].items())))
    return out


def names_of(w, ino):
    return sorted(rel for rel, v in tree(w).items()
                  if v[0] == "f" and v[1] == ino)


def dir_names(path):
    return {n: os.lstat(os.path.join(path, n)).st_ino
            for n in os.listdir(path)}


# ---- the driver ----------------------------------------------------------

class Fs:
    def __init__(self, a):
        self.a = a
        self.daemon = None
        self.replays = 0  # remounts that replayed an fsync log

    def mount(self):
        cmd = [self.a.mount, self.a.device, self.a.mnt, "-f"]
        if self.a.o:
            cmd += ["-o", self.a.o]
        self.err = open(self.a.mnt + ".err", "w")
        self.daemon = subprocess.Popen(cmd, stderr=self.err)
        for _ in range(300):
            if is_mounted(self.a.mnt):
                return
            if self.daemon.poll() is not None:
                raise Fail("mount.smrfs exited %d: %s" % (
                    self.daemon.returncode, self.err_text()))
            time.sleep(0.02)
        raise Fail("the mount did not appear")

    def err_text(self):
        with open(self.a.mnt + ".err") as f:
            return f.read()[-2000:]

    def kill(self):
        os.kill(self.daemon.pid, signal.SIGKILL)
        self.daemon.wait()
        self.daemon = None
        subprocess.call(["fusermount3", "-uz", self.a.mnt],
                        stderr=subprocess.DEVNULL)

    def umount(self):
        subprocess.check_call(["fusermount3", "-u", self.a.mnt])
        rc = self.daemon.wait(timeout=60)
        self.daemon = None
        if rc != 0:
            raise Fail("mount.smrfs exited %d: %s" % (rc, self.err_text()))

    def fsck(self, when):
        p = subprocess.run([self.a.fsck, "-n", self.a.device],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        if p.returncode != 0:
            raise Fail("fsck.smrfs -n %s: exit %d\n%s" % (
                when, p.returncode, p.stdout.decode()[-3000:]))

    def cleanup(self):
        if self.daemon is not None and self.daemon.poll() is None:
            self.daemon.kill()
            self.daemon.wait()
        if is_mounted(self.a.mnt):
            subprocess.call(["fusermount3", "-uz", self.a.mnt],
                            stderr=subprocess.DEVNULL)


def fsync_path(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def setup(w):
    """The file set, durable: every file and directory fsync'd, as an
    application must (sync(2) and syncfs(2) do not reach a FUSE daemon:
    the kernel sends FUSE_SYNCFS only to virtiofs)."""
    os.mkdir(w)
    os.mkdir(os.path.join(w, "d"))
    for name, n in (("a", 12388), ("b", 5000), ("d/c", 3000)):
        with open(os.path.join(w, name), "wb") as f:
            f.write(pattern(w + name, n))
            f.flush()
            os.fsync(f.fileno())
    for d in (os.path.join(w, "d"), w, os.path.dirname(w)):
        fsync_path(d)


def one(fs, a, n, wl):
    w = os.path.join(a.mnt, "w%d" % n)
    fs.mount()
    setup(w)
    files = {}  # ino -> (state at its last fsync, names then)
    dirs = {}   # dir path -> names -> ino at its last fsync
    done = False
    for i, op in enumerate(wl):
        done = run_op(w, op, "w%d.%d" % (n, i))
        if not done or op[0] not in ("fsync", "fdatasync"):
            continue
        path = os.path.join(w, op[1])
        if os.path.isdir(path):
            dirs[op[1]] = dir_names(path)
        else:
            st = file_state(path)
            if op[0] == "fdatasync":
                st["xattrs"] = None  # data and size only
            files[st["ino"]] = (st, names_of(w, st["ino"]))
    if not done:
        # The last sync found nothing to sync (its file was gone): end
        # with one that does, so that the kill follows a sync.
        run_op(w, ("fsync", "."), "")
        dirs["."] = dir_names(w)
    final = tree(w)
    fs.kill()
    fs.fsck("after the kill")
    fs.mount()
    if " replayed" in fs.err_text():
        fs.replays += 1
    got = tree(w) if os.path.isdir(w) else None
    if got is None:
        raise Fail("the workload directory is gone")
    if a.exact and got != final:
        diff = sorted(set(got.items()) ^ set(final.items()))
        raise Fail("not as at the kill: %s" % diff[:8])
    final_by_ino = {}
    for rel, v in final.items():
        if v[0] == "f":
            final_by_ino.setdefault(v[1], []).append(rel)
    for ino, (st, names) in files.items():
        later = final_by_ino.get(ino, [])
        if later != names:
            # Renamed, linked or unlinked after its fsync: its names are
            # those of either state; nothing to insist on but the data.
            names = [x for x in names if x in later] or later
        if not names:
            continue
        found = [x for x in names if x in got and got[x][0] == "f" and
                 got[x][1] == ino]
        if not found:
            raise Fail("inode %d (fsync'd as %s) is not there after the "
                       "crash" % (ino, "/".join(names)))
        now = file_state(os.path.join(w, found[0]))
        want = [(st["size"], st["sum"])]
        fin = final.get(found[0])
        if fin and fin[0] == "f":
            want.append((fin[3], fin[4]))
        if (now["size"], now["sum"]) not in want:
            raise Fail("%s: size %d and data not as at its fsync (size "
                       "%d)" % (found[0], now["size"], st["size"]))
        if st["xattrs"] is not None and now["xattrs"] != st["xattrs"] and \
                (not fin or tuple(sorted(now["xattrs"].items())) != fin[5]):
            raise Fail("%s: xattrs %s, at its fsync %s" % (
                found[0], now["xattrs"], st["xattrs"]))
    for d, names in dirs.items():
        for name, ino in names.items():
            rel = os.path.normpath(os.path.join(d, name))
            if rel in got:
                continue
            if final.get(rel) is not None and \
                    (final[rel][0] != "f" or final[rel][1] == ino):
                raise Fail("%s, in directory %s fsync'd, is gone" %
                           (rel, d))
    if n % 2:
        # The replayed state must be durable by itself: die again.
        fs.kill()
        fs.fsck("after a second kill, right after the check")
    else:
        fs.umount()
        fs.fsck("after the remount and a clean unmount")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mount", required=True)
    ap.add_argument("--fsck", required=True)
    ap.add_argument("-o", default="")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--count", type=int, default=20)
    ap.add_argument("--only", type=int, default=None)
    ap.add_argument("--exact", action="store_true")
    ap.add_argument("--want-replays", action="store_true")
    ap.add_argument("-v", action="store_true")
    ap.add_argument("device")
    ap.add_argument("mnt")
    a = ap.parse_args()
    a.mnt = os.path.abspath(a.mnt)
    r = random.Random(a.seed)
    fs = Fs(a)
    kinds = {}
    start = time.monotonic()
    try:
        for n in range(a.count):
            wl = make_workload(r)
            if a.only is not None and n != a.only:
                continue
            for op in wl:
                kinds[op[0]] = kinds.get(op[0], 0) + 1
            if a.v:
                print("w%d: %s" % (n, wl))
            try:
                one(fs, a, n, wl)
            except (Fail, OSError) as e:
                print("FAIL: workload %d of seed %d: %s\n  %s" %
                      (n, a.seed, wl, e), file=sys.stderr)
                return 1
    finally:
        fs.cleanup()
    if a.want_replays and not fs.replays:
        print("FAIL: no remount replayed an fsync log: fsync never logged",
              file=sys.stderr)
        return 1
    print("ace: seed %d, %d workloads (%s) crashed and checked in %.0f s%s;"
          " %d remounts replayed an fsync log"
          % (a.seed, a.count if a.only is None else 1,
             ", ".join("%s %d" % kv for kv in sorted(kinds.items())),
             time.monotonic() - start, ", exact" if a.exact else "",
             fs.replays))
    return 0


if __name__ == "__main__":
    sys.exit(main())
