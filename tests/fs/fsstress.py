# SPDX-License-Identifier: GPL-2.0-or-later
"""fsstress.py - concurrent random namespace and data operations, in the
manner of fsstress: several processes work in the same few directories at
once, so that their creates, renames, links and deletes race.

Usage: python3 fsstress.py run [-p PROCS] [-n OPS] [-s SEED] [--secs S] DIR
       python3 fsstress.py walk DIR

run   PROCS processes (default 4) each do OPS operations (default 2000)
      under DIR: create, O_TMPFILE (named or not), mkdir, rmdir, rename
      (also of directories, RENAME_EXCHANGE and RENAME_WHITEOUT), link,
      unlink, symlink, readlink, truncate, write, O_DIRECT write,
      copy_file_range, fallocate (punch hole, zero range),
      setxattr, getxattr, listxattr, removexattr, POSIX ACLs (access and
      default: new names inherit them), chmod, chown, utimes, fsync,
      fdatasync, readdir and stat, all on names in the shared
      directories DIR/s*, where they collide. Each
      process also keeps files of its own in DIR/p<N>, whose contents and
      xattrs it models and checks after every change to them (writes,
      also through O_DIRECT and a shared mapping, copy_file_range,
      truncate, punch hole, zero range, xattrs, renames). An error
      that a race explains (ENOENT, EEXIST, ENOTEMPTY, ...) counts; any
      other (EIO, EUCLEAN, EBADMSG, ENOTCONN, ...) is a failure, and so is
      a process that does not finish within --secs (default 600): a hang.
      ENOSPC counts too, and ends the run of a process that meets it on
      a file of its own.
      With --secs and --lenient, the run stops at that time without
      failing, and the loss of the mount (the daemon was killed) is not a
      failure either, nor is EIO once the mount is gone (the kernel's
      writeback cache could not write its pages): for crash trials.
walk  read every file, symlink and xattr under DIR and stat everything;
      any error is a failure. After a remount, the files of the processes
      are checked against their models (kept beside DIR), unless
      the run was killed.
"""
import argparse
import ctypes
import errno
import hashlib
import json
import mmap
import os
import random
import signal
import struct
import sys
import time

NSHARED = 3   # shared directories s0..s2
NNAMES = 12   # names per directory
MAXLEN = 256 * 1024
FALLOC_FL_KEEP_SIZE = 1
FALLOC_FL_PUNCH_HOLE = 2
FALLOC_FL_ZERO_RANGE = 0x10
PAGE = mmap.PAGESIZE
RENAME_EXCHANGE = 2
RENAME_WHITEOUT = 4
AT_FDCWD = -100
AT_EMPTY_PATH = 0x1000

# Errors that the races between the processes (or the operation's rules)
# explain. Everything else is a bug.
RACE = {errno.ENOENT, errno.EEXIST, errno.ENOTEMPTY, errno.ENOTDIR,
        errno.EISDIR, errno.EINVAL, errno.ENODATA, errno.EPERM,
        errno.ELOOP, errno.EMLINK, errno.EBUSY, errno.EOPNOTSUPP,
        errno.ENAMETOOLONG,  # a symlink whose target is one long name
        errno.EACCES}  # not root: a directory another process chmod'ed
# A full filesystem: a shared operation counts it, a process's own files
# end its run (what a failed write left is not known to the model).
FULL = errno.ENOSPC
# The mount went away: the daemon was killed (crash trials only).
GONE = {errno.ENOTCONN, errno.ECONNABORTED}


def gone(e, d):
    """Did E come from the death of the daemon serving D? With the
    kernel's writeback cache, a close or fsync after the death reports
    EIO (the pages could not be written), which counts only when the
    mount is in fact gone (statfs always asks the daemon)."""
    if e.errno in GONE:
        return True
    if e.errno != errno.EIO:
        return False
    try:
        os.statvfs(d)
    except OSError as e2:
        return e2.errno in GONE
    return False


libc = ctypes.CDLL(None, use_errno=True)
libc.fallocate.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_long,
                           ctypes.c_long]


def check(rc):
    if rc != 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))


class Worker:
    def __init__(self, root, me, seed):
        self.root = root
        self.me = me
        self.r = random.Random(seed * 1000 + me)
        self.counts = {}
        self.errs = {}
        self.own = os.path.join(root, "p%d" % me)
        self.model = {}   # own file name -> bytearray
        self.xmodel = {}  # own file name -> {xattr: value}

    # --- names -------------------------------------------------------
    def sdir(self):
        d = os.path.join(self.root, "s%d" % self.r.randrange(NSHARED))
        # Sometimes one level down, in a shared subdirectory.
        if self.r.random() < 0.3:
            d = os.path.join(d, "n%d" % self.r.randrange(NNAMES))
        return d

    def name(self):
        return os.path.join(self.sdir(), "n%d" % self.r.randrange(NNAMES))

    def data(self, n):
        return self.r.randbytes(n)

    # --- shared operations: races expected ----------------------------
    def op_create(self):
        fd = os.open(self.name(), os.O_WRONLY | os.O_CREAT, 0o644)
        try:
            os.write(fd, self.data(self.r.choice((0, 100, 4096, 70000))))
        finally:
            os.close(fd)

    def op_tmpfile(self):
        # O_TMPFILE in a shared directory, named or not before the close.
        fd = os.open(self.sdir(), os.O_TMPFILE | os.O_RDWR, 0o644)
        try:
            os.write(fd, self.data(self.r.choice((0, 100, 4096, 70000))))
            if self.r.random() < 0.2:
                os.fsync(fd)
            if self.r.random() < 0.6:
                check(libc.linkat(fd, b"", AT_FDCWD, self.name().encode(),
                                  AT_EMPTY_PATH))
        finally:
            os.close(fd)

    def op_mkdir(self):
        os.mkdir(self.name(), 0o755)

    def op_rmdir(self):
        os.rmdir(self.name())

    def op_unlink(self):
        os.unlink(self.name())

    def op_rename(self):
        os.rename(self.name(), self.name())

    def op_exchange(self):
        check(libc.renameat2(AT_FDCWD, self.name().encode(), AT_FDCWD,
                             self.name().encode(), RENAME_EXCHANGE))

    def op_whiteout(self):
        # As an overlay's upper layer: a character device 0:0 is left.
        check(libc.renameat2(AT_FDCWD, self.name().encode(), AT_FDCWD,
                             self.name().encode(), RENAME_WHITEOUT))

    def op_link(self):
        os.link(self.name(), self.name())

    def op_symlink(self):
        # Relative targets only: nothing may lead out of DIR.
        os.symlink(self.r.choice(("n1", "../n2", "../../n3", "x" * 300)),
                   self.name())

    def op_readlink(self):
        os.readlink(self.name())

    def op_write(self):
        fd = os.open(self.name(), os.O_WRONLY)
        try:
            os.pwrite(fd, self.data(self.r.randrange(1, 20000)),
                      self.r.randrange(MAXLEN))
            if self.r.random() < 0.2:
                os.fdatasync(fd)
        finally:
            os.close(fd)

    def op_read(self):
        fd = os.open(self.name(), os.O_RDONLY)
        try:
            os.pread(fd, MAXLEN, 0)
        finally:
            os.close(fd)

    def op_truncate(self):
        os.truncate(self.name(), self.r.randrange(MAXLEN))

    def op_punch(self):
        fd = os.open(self.name(), os.O_WRONLY)
        try:
            check(libc.fallocate(fd, FALLOC_FL_PUNCH_HOLE |
                                 FALLOC_FL_KEEP_SIZE,
                                 self.r.randrange(MAXLEN),
                                 self.r.randrange(1, 65536)))
        finally:
            os.close(fd)

    def op_zero(self):
        fd = os.open(self.name(), os.O_WRONLY)
        try:
            check(libc.fallocate(fd, FALLOC_FL_ZERO_RANGE,
                                 self.r.randrange(MAXLEN),
                                 self.r.randrange(1, 65536)))
        finally:
            os.close(fd)

    def op_dwrite(self):
        # Whole pages through O_DIRECT, racing buffered I/O on the name.
        fd = os.open(self.name(), os.O_WRONLY | os.O_DIRECT)
        try:
            length = self.r.randrange(1, 9) * PAGE
            with mmap.mmap(-1, length) as buf:
                buf.write(self.data(length))
                os.pwrite(fd, buf, self.r.randrange(MAXLEN // PAGE) * PAGE)
        finally:
            os.close(fd)

    def op_copy(self):
        src = os.open(self.name(), os.O_RDONLY)
        try:
            dst = os.open(self.name(), os.O_WRONLY)
            try:
                os.copy_file_range(src, dst, self.r.randrange(1, 65536),
                                   self.r.randrange(MAXLEN),
                                   self.r.randrange(MAXLEN))
            finally:
                os.close(dst)
        finally:
            os.close(src)

    def op_setxattr(self):
        os.setxattr(self.name(), "user.x%d" % self.r.randrange(4),
                    self.data(self.r.choice((0, 10, 300, 3000))),
                    follow_symlinks=False)

    def op_getxattr(self):
        os.getxattr(self.name(), "user.x%d" % self.r.randrange(4),
                    follow_symlinks=False)

    def op_listxattr(self):
        os.listxattr(self.name(), follow_symlinks=False)

    def op_removexattr(self):
        os.removexattr(self.name(), "user.x%d" % self.r.randrange(4),
                       follow_symlinks=False)

    def op_setacl(self):
        """An access or default ACL with named entries and a mask, or one
        of the mode's three entries only, or none."""
        perm = lambda: self.r.randrange(8)
        named = self.r.random() < 0.7
        ents = [(0x01, perm(), 0xffffffff)]
        if named:
            ents.append((0x02, perm(), 65534))
        ents.append((0x04, perm(), 0xffffffff))
        if named:
            ents += [(0x08, perm(), 65534), (0x10, perm(), 0xffffffff)]
        ents.append((0x20, perm(), 0xffffffff))
        name = self.r.choice(("system.posix_acl_access",
                              "system.posix_acl_default"))
        if self.r.random() < 0.2:
            os.removexattr(self.name(), name, follow_symlinks=False)
        else:
            os.setxattr(self.name(), name, struct.pack("<I", 2) +
                        b"".join(struct.pack("<HHI", *e) for e in ents),
                        follow_symlinks=False)

    def op_chmod(self):
        os.chmod(self.name(), self.r.choice((0o644, 0o600, 0o755, 0o4755)))

    def op_chown(self):
        os.chown(self.name(), self.r.choice((0, 65534)),
                 self.r.choice((0, 65534)), follow_symlinks=False)

    def op_utimes(self):
        t = self.r.randrange(1 << 31)
        os.utime(self.name(), ns=(t * 10**9 + 1, t * 10**9 + 999999999),
                 follow_symlinks=False)

    def op_fsync(self):
        fd = os.open(self.name(), os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    def op_readdir(self):
        d = self.sdir()
        for n in os.listdir(d):
            try:
                os.lstat(os.path.join(d, n))
            except FileNotFoundError:
                pass

    def op_stat(self):
        os.lstat(self.name())

    # --- own files: checked against the model -------------------------
    def own_name(self):
        return "f%d" % self.r.randrange(4)

    def own_check(self, n):
        p = os.path.join(self.own, n)
        with open(p, "rb") as f:
            got = f.read()
        want = self.model[n]
        if got != want:
            k = next((i for i in range(min(len(got), len(want)))
                      if got[i] != want[i]), min(len(got), len(want)))
            raise AssertionError("%s: %d bytes, expected %d, first "
                                 "difference at %d" %
                                 (p, len(got), len(want), k))
        xs = {x: os.getxattr(p, x) for x in os.listxattr(p)
              if x.startswith("user.")}
        if xs != self.xmodel[n]:
            raise AssertionError("%s: xattrs %s, expected %s" %
                                 (p, sorted(xs), sorted(self.xmodel[n])))

    @staticmethod
    def own_size(m, size):
        if size < len(m):
            del m[size:]
        else:
            m.extend(bytes(size - len(m)))

    @staticmethod
    def own_put(m, off, data):
        if data and off > len(m):
            m.extend(bytes(off - len(m)))
        m[off:off + len(data)] = data

    def own_direct(self, p, m):
        """Whole pages through O_DIRECT, from page-aligned memory."""
        off = self.r.randrange((len(m) + 65536) // PAGE + 1) * PAGE
        length = self.r.randrange(1, 17) * PAGE
        fd = os.open(p, os.O_WRONLY | os.O_DIRECT)
        try:
            with mmap.mmap(-1, length) as buf:
                buf.write(self.data(length))
                done = os.pwrite(fd, buf, off)
                self.own_put(m, off, bytes(buf[:done]))
        finally:
            os.close(fd)

    def own_mmap(self, p, m):
        """A store through a shared mapping, inside the file, written back
        by msync or by an fsync after the unmap. Only these report an
        error of the writeback (close does not have to, and on a full
        copy-on-write filesystem an overwrite can fail for want of space:
        the kernel then drops the pages' changes)."""
        if not m:
            return
        off = self.r.randrange(len(m))
        data = self.data(min(self.r.randrange(1, 65536), len(m) - off))
        base = off // PAGE * PAGE
        fd = os.open(p, os.O_RDWR)
        try:
            sync = self.r.random() < 0.5
            with mmap.mmap(fd, off + len(data) - base, offset=base) as mp:
                mp[off - base:off - base + len(data)] = data
                if sync:
                    mp.flush()
            if not sync:
                os.fsync(fd)
        finally:
            os.close(fd)
        self.own_put(m, off, data)

    def own_copy(self, p, m):
        """copy_file_range from another file of ours, or within this one."""
        src = self.own_name()
        if src not in self.model:
            return
        sm = self.model[src]
        soff = self.r.randrange(len(sm) + 1)
        doff = self.r.randrange(len(m) + 65536)
        length = self.r.randrange(1, 65536)
        if sm is m and soff < doff + length and doff < soff + length:
            return  # overlapping ranges of one file: EINVAL
        fd = os.open(p, os.O_WRONLY)
        try:
            sfd = os.open(os.path.join(self.own, src), os.O_RDONLY)
            try:
                done = os.copy_file_range(sfd, fd, length, soff, doff)
            finally:
                os.close(sfd)
        finally:
            os.close(fd)
        if done > 0:
            self.own_put(m, doff, bytes(sm[soff:soff + done]))

    def own_zero(self, p, m):
        """Punch a hole, or zero a range (which may extend the file)."""
        off = self.r.randrange(len(m) + 65536)
        length = self.r.randrange(1, 65536)
        punch = self.r.random() < 0.5
        fd = os.open(p, os.O_WRONLY)
        try:
            check(libc.fallocate(fd, FALLOC_FL_PUNCH_HOLE |
                                 FALLOC_FL_KEEP_SIZE if punch else
                                 FALLOC_FL_ZERO_RANGE, off, length))
        except OSError as e:
            if e.errno != errno.EOPNOTSUPP:  # an older kernel's FUSE
                raise
            return
        finally:
            os.close(fd)
        if not punch:
            self.own_put(m, off, bytes(length))
        elif off < len(m):
            self.own_put(m, off, bytes(min(length, len(m) - off)))

    def op_own(self):
        n = self.own_name()
        p = os.path.join(self.own, n)
        if n not in self.model:
            # Left by an earlier run (one killed): start afresh.
            if os.path.lexists(p):
                os.unlink(p)
            with open(p, "wb"):
                pass
            self.model[n] = bytearray()
            self.xmodel[n] = {}
        m = self.model[n]
        what = self.r.randrange(9)
        if what == 0:
            off = self.r.randrange(len(m) + 65536)
            data = self.data(self.r.randrange(1, 65536))
            fd = os.open(p, os.O_WRONLY)
            try:
                # A nearly full filesystem may write only a part (a short
                # write, as POSIX allows): the model takes what was written.
                data = data[:os.pwrite(fd, data, off)]
            finally:
                os.close(fd)
            self.own_put(m, off, data)
        elif what == 1:
            size = self.r.randrange(len(m) + 65536)
            os.truncate(p, size)
            self.own_size(m, size)
        elif what == 2:
            x = "user.o%d" % self.r.randrange(3)
            v = self.data(self.r.choice((1, 100, 2000)))
            os.setxattr(p, x, v)
            self.xmodel[n][x] = v
        elif what == 3:
            x = "user.o%d" % self.r.randrange(3)
            try:
                os.removexattr(p, x)
            except OSError as e:
                if e.errno != errno.ENODATA or x in self.xmodel[n]:
                    raise
            self.xmodel[n].pop(x, None)
        elif what == 4:
            # Rename it away and back: the model follows the inode.
            q = p + ".moved"
            os.rename(p, q)
            os.rename(q, p)
        elif what == 5:
            self.own_direct(p, m)
        elif what == 6:
            self.own_mmap(p, m)
        elif what == 7:
            self.own_copy(p, m)
        else:
            self.own_zero(p, m)
        self.own_check(n)

    def save_model(self, path):
        with open(path, "w") as f:
            json.dump({n: [hashlib.sha256(m).hexdigest(),
                           {x: v.hex() for x, v in self.xmodel[n].items()}]
                       for n, m in self.model.items()}, f)

    # --- the loop -----------------------------------------------------
    OPS = [("create", 8), ("tmpfile", 2), ("mkdir", 4), ("rmdir", 3),
           ("unlink", 5), ("rename", 6), ("exchange", 2), ("whiteout", 1),
           ("link", 3), ("symlink", 3),
           ("readlink", 2), ("write", 8), ("read", 5), ("truncate", 3),
           ("punch", 2), ("zero", 1), ("dwrite", 2), ("copy", 2),
           ("setxattr", 3), ("getxattr", 2), ("listxattr", 2),
           ("removexattr", 2), ("setacl", 2), ("chmod", 2), ("chown", 2),
           ("utimes", 2),
           ("fsync", 2), ("readdir", 4), ("stat", 4), ("own", 12)]

    def run(self, nops, deadline, lenient):
        try:
            os.makedirs(self.own, exist_ok=True)
        except OSError as e:
            if lenient and gone(e, self.own):
                return "gone"
            if e.errno == FULL:
                return "full"
            raise
        names = [n for n, _ in self.OPS]
        weights = [w for _, w in self.OPS]
        for _ in range(nops):
            if time.monotonic() > deadline:
                break
            op = self.r.choices(names, weights)[0]
            self.counts[op] = self.counts.get(op, 0) + 1
            try:
                getattr(self, "op_" + op)()
            except OSError as e:
                if lenient and gone(e, self.own):
                    return "gone"
                if e.errno == FULL and op == "own":
                    return "full"
                if e.errno not in RACE | {FULL} or op == "own":
                    raise OSError(e.errno, "%s: %s" % (op, e.strerror),
                                  e.filename)
                k = "%s %s" % (op, errno.errorcode.get(e.errno, e.errno))
                self.errs[k] = self.errs.get(k, 0) + 1
        return "done"


def model_path(d, me):
    """Where the model of process ME's files in D is kept: beside D."""
    d = os.path.abspath(d)
    return os.path.join(os.path.dirname(d),
                        "fsstress.model.%s.%d" % (os.path.basename(d), me))


def child(a, me, wfd):
    w = Worker(a.dir, me, a.seed)
    try:
        how = w.run(a.ops, time.monotonic() + a.secs, a.lenient)
        if how == "done":
            try:
                w.save_model(model_path(a.dir, me))
            except OSError as e:
                if e.errno != FULL:
                    raise
                how = "full"
        out = {"ok": True, "how": how, "counts": w.counts, "errs": w.errs}
    except (OSError, AssertionError) as e:
        out = {"ok": False, "why": "process %d: %s" % (me, e)}
    os.write(wfd, json.dumps(out).encode())
    os._exit(0)


def run(a):
    try:
        setup(a)
    except OSError as e:
        if a.lenient and gone(e, a.dir):
            print("fsstress: the mount went away before the run")
            return
        raise
    stress(a)


def setup(a):
    for me in range(64):
        try:
            os.unlink(model_path(a.dir, me))
        except FileNotFoundError:
            pass
    for s in range(NSHARED):
        os.makedirs(os.path.join(a.dir, "s%d" % s), exist_ok=True)


def stress(a):
    kids = []
    for me in range(a.procs):
        rfd, wfd = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(rfd)
            child(a, me, wfd)
        os.close(wfd)
        kids.append((pid, rfd))
    # A child that does not finish a minute past its deadline hangs.
    end = time.monotonic() + a.secs + 60
    bad = []
    total = {}
    errs = {}
    hows = {}
    for me, (pid, rfd) in enumerate(kids):
        while True:
            done, _ = os.waitpid(pid, os.WNOHANG)
            if done:
                break
            if time.monotonic() > end:
                bad.append("process %d hangs" % me)
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                break
            time.sleep(0.1)
        raw = os.read(rfd, 1 << 20)
        os.close(rfd)
        if not raw:
            bad.append("process %d died without a word" % me)
            continue
        out = json.loads(raw)
        if not out["ok"]:
            bad.append(out["why"])
            continue
        hows[out["how"]] = hows.get(out["how"], 0) + 1
        for k, v in out["counts"].items():
            total[k] = total.get(k, 0) + v
        for k, v in out["errs"].items():
            errs[k] = errs.get(k, 0) + v
    if bad:
        for b in bad:
            print("fsstress: FAIL: " + b, file=sys.stderr)
        sys.exit(1)
    print("fsstress: %d processes (%s), %d operations; expected errors: %s"
          % (a.procs, ", ".join("%d %s" % (v, k) for k, v in hows.items()),
             sum(total.values()),
           ", ".join("%s %d" % kv for kv in sorted(errs.items()))))


def walk(a):
    n = 0
    for d, dirs, files in os.walk(a.dir):
        for x in dirs + files:
            p = os.path.join(d, x)
            st = os.lstat(p)
            os.listxattr(p, follow_symlinks=False)
            if os.path.islink(p):
                os.readlink(p)
            elif os.path.isfile(p):
                with open(p, "rb") as f:
                    while f.read(1 << 20):
                        pass
            n += 1
    checked = 0
    for me in range(64):
        mf = model_path(a.dir, me)
        if not os.path.exists(mf):
            continue
        with open(mf) as f:
            model = json.load(f)
        for name, (digest, xs) in model.items():
            p = os.path.join(a.dir, "p%d" % me, name)
            with open(p, "rb") as f:
                got = hashlib.sha256(f.read()).hexdigest()
            gotx = {x: os.getxattr(p, x).hex() for x in os.listxattr(p)
                    if x.startswith("user.")}
            if got != digest or gotx != xs:
                print("fsstress: FAIL: %s differs from its model" % p,
                      file=sys.stderr)
                sys.exit(1)
            checked += 1
    print("fsstress: walked %d entries, %d modelled files match" %
          (n, checked))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=("run", "walk"))
    ap.add_argument("-p", "--procs", type=int, default=4)
    ap.add_argument("-n", "--ops", type=int, default=2000)
    ap.add_argument("-s", "--seed", type=int, default=1)
    ap.add_argument("--secs", type=float, default=600)
    ap.add_argument("--lenient", action="store_true")
    ap.add_argument("dir")
    a = ap.parse_args()
    if a.mode == "run":
        run(a)
    else:
        walk(a)


if __name__ == "__main__":
    main()
