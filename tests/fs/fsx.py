# SPDX-License-Identifier: GPL-2.0-or-later
"""fsx.py - random file operations checked against a model, in the manner
of fsx: every byte the filesystem returns must be the byte the model says.

Usage: python3 fsx.py [--ops N] [--seed S] [--maxlen BYTES] [--direct] DIR
       python3 fsx.py --verify DIR

Works on the files DIR/fsx-0 and DIR/fsx-1 (created). Operations, chosen at
random: write (anywhere, also past the end), read, truncate (up and down),
fallocate (punch hole, zero range with and without keep size, keep size,
mode 0; each dropped for the run when the filesystem says EOPNOTSUPP, as
fsx does: smrfs honours the punch and the zeroing, a copy-on-write
filesystem cannot reserve space for later writes), writes and
reads through mmap,
copy_file_range (within a file and between the two), fsync, fdatasync,
close and reopen, and a look at SEEK_DATA/SEEK_HOLE (every byte the model
holds that is not zero must lie in data). With --direct, also reads and
writes of whole pages through a second descriptor opened O_DIRECT (fsx -Z),
mixed with all of the above. Every read is compared with the
model, and every 500 operations the whole of both files. At the end the
model's digest is written to DIR/../fsx.model, so that "--verify" can check
the files after an unmount and a remount. Exit status 1 with the operation
log tail on the first mismatch.
"""
import argparse
import ctypes
import errno
import hashlib
import mmap
import os
import random
import sys

FALLOC_FL_KEEP_SIZE = 1
FALLOC_FL_PUNCH_HOLE = 2
FALLOC_FL_ZERO_RANGE = 0x10
SEEK_DATA = getattr(os, "SEEK_DATA", 3)
SEEK_HOLE = getattr(os, "SEEK_HOLE", 4)
PAGE = mmap.PAGESIZE
NFILES = 2

libc = ctypes.CDLL(None, use_errno=True)
libc.fallocate.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_long,
                           ctypes.c_long]


def fallocate(fd, mode, off, length):
    if libc.fallocate(fd, mode, off, length) != 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))


class Fsx:
    def __init__(self, d, seed, maxlen, direct=False):
        self.d = d
        self.rnd = random.Random(seed)
        self.maxlen = maxlen
        self.model = [bytearray() for _ in range(NFILES)]
        self.fds = [self.open(i, True) for i in range(NFILES)]
        self.log = []
        self.counts = {}
        self.off = set()  # operations the filesystem does not support
        self.dfds = []
        if direct:
            try:
                self.dfds = [os.open(self.path(i), os.O_RDWR | os.O_DIRECT)
                             for i in range(NFILES)]
            except OSError as e:
                if e.errno != errno.EINVAL:
                    raise
                self.off.add("direct")

    def path(self, i):
        return os.path.join(self.d, "fsx-%d" % i)

    def open(self, i, create=False):
        flags = os.O_RDWR | (os.O_CREAT | os.O_TRUNC if create else 0)
        return os.open(self.path(i), flags, 0o644)

    def fail(self, msg):
        sys.stderr.write("fsx: %s\nlast operations:\n" % msg)
        for line in self.log[-25:]:
            sys.stderr.write("  %s\n" % line)
        sys.exit(1)

    def note(self, what, *args):
        self.counts[what] = self.counts.get(what, 0) + 1
        self.log.append(what + " " + " ".join(str(a) for a in args))
        if len(self.log) > 1000:
            del self.log[:500]

    def check(self, i, off, got, how):
        want = bytes(self.model[i][off:off + len(got)])
        if len(got) != len(want) or got != want:
            bad = next((k for k in range(min(len(got), len(want)))
                        if got[k] != want[k]), min(len(got), len(want)))
            self.fail("%s of file %d at %d: %d bytes, expected %d; first "
                      "difference at %d (got %r, expected %r)" %
                      (how, i, off, len(got), len(want), off + bad,
                       got[bad:bad + 8], want[bad:bad + 8]))

    def rand_range(self, size_bias):
        size = max(size_bias, 1)
        off = self.rnd.randrange(0, size + self.maxlen // 2)
        if self.rnd.random() < 0.3:
            off -= off % 4096
        length = self.rnd.randrange(1, self.maxlen)
        return off, length

    # ---- operations -------------------------------------------------
    def op_write(self, i):
        off, length = self.rand_range(len(self.model[i]))
        data = self.rnd.randbytes(length)
        self.note("write", i, off, length)
        if os.pwrite(self.fds[i], data, off) != length:
            self.fail("short write")
        self.model_write(i, off, data)

    def model_write(self, i, off, data):
        m = self.model[i]
        if off > len(m):
            m.extend(bytes(off - len(m)))
        m[off:off + len(data)] = data

    def op_read(self, i):
        off, length = self.rand_range(len(self.model[i]))
        self.note("read", i, off, length)
        self.check(i, off, os.pread(self.fds[i], length, off), "read")

    def op_truncate(self, i):
        m = self.model[i]
        size = self.rnd.randrange(0, len(m) + self.maxlen)
        self.note("truncate", i, size)
        os.ftruncate(self.fds[i], size)
        if size < len(m):
            del m[size:]
        else:
            m.extend(bytes(size - len(m)))

    def op_falloc(self, i):
        kind = self.rnd.choice(["punch", "keep", "extend", "zero",
                                "zero-keep"])
        if kind in self.off:
            return
        off, length = self.rand_range(len(self.model[i]))
        mode = {"punch": FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
                "keep": FALLOC_FL_KEEP_SIZE, "extend": 0,
                "zero": FALLOC_FL_ZERO_RANGE,
                "zero-keep": FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE}[kind]
        self.note("fallocate-" + kind, i, off, length)
        try:
            fallocate(self.fds[i], mode, off, length)
        except OSError as e:
            if e.errno == errno.EOPNOTSUPP:
                self.off.add(kind)
                return
            raise
        m = self.model[i]
        if kind in ("punch", "zero", "zero-keep"):
            end = min(off + length, len(m))
            if off < end:
                m[off:end] = bytes(end - off)
        if kind in ("extend", "zero") and off + length > len(m):
            m.extend(bytes(off + length - len(m)))

    def op_mapwrite(self, i):
        m = self.model[i]
        if len(m) < PAGE:
            return
        off, length = self.rand_range(len(m))
        off %= len(m)
        length = min(length, len(m) - off)
        data = self.rnd.randbytes(length)
        base = off - off % PAGE
        self.note("mapwrite", i, off, length)
        with mmap.mmap(self.fds[i], off + length - base,
                       offset=base) as mp:
            mp[off - base:off - base + length] = data
            if self.rnd.random() < 0.5:
                mp.flush()
        m[off:off + length] = data

    def op_mapread(self, i):
        m = self.model[i]
        if not m:
            return
        off, length = self.rand_range(len(m))
        off %= len(m)
        length = min(length, len(m) - off)
        base = off - off % PAGE
        self.note("mapread", i, off, length)
        with mmap.mmap(self.fds[i], off + length - base, offset=base,
                       prot=mmap.PROT_READ) as mp:
            got = mp[off - base:off - base + length]
        self.check(i, off, got, "mmap read")

    def op_copy(self, i):
        if "copy" in self.off:
            return
        j = self.rnd.randrange(NFILES)
        src = self.model[j]
        if not src:
            return
        soff = self.rnd.randrange(0, len(src))
        length = self.rnd.randrange(1, self.maxlen)
        doff, _ = self.rand_range(len(self.model[i]))
        if i == j and soff < doff + length and doff < soff + length:
            return  # overlapping ranges of one file: EINVAL by the rules
        self.note("copy_file_range", j, soff, "->", i, doff, length)
        try:
            n = os.copy_file_range(self.fds[j], self.fds[i], length,
                                   soff, doff)
        except OSError as e:
            if e.errno in (errno.EOPNOTSUPP, errno.EXDEV, errno.ENOSYS):
                self.off.add("copy")
                return
            raise
        want = bytes(src[soff:soff + length])
        if n != len(want):
            self.fail("copy_file_range copied %d, expected %d" %
                      (n, len(want)))
        d = self.model[i]
        if doff > len(d):
            d.extend(bytes(doff - len(d)))
        d[doff:doff + n] = want

    def direct_range(self, i):
        off, length = self.rand_range(len(self.model[i]))
        off -= off % PAGE
        length = max(length - length % PAGE, PAGE)
        return off, length

    def op_dwrite(self, i):
        if not self.dfds:
            return
        off, length = self.direct_range(i)
        data = self.rnd.randbytes(length)
        self.note("direct-write", i, off, length)
        with mmap.mmap(-1, length) as buf:  # page-aligned memory
            buf[:] = data
            if os.pwrite(self.dfds[i], buf, off) != length:
                self.fail("short direct write")
        self.model_write(i, off, data)

    def op_dread(self, i):
        if not self.dfds:
            return
        off, length = self.direct_range(i)
        self.note("direct-read", i, off, length)
        with mmap.mmap(-1, length) as buf:
            n = os.preadv(self.dfds[i], [buf], off)
            got = buf[:n]
        self.check(i, off, got, "direct read")

    def op_sync(self, i):
        how = self.rnd.choice(["fsync", "fdatasync"])
        self.note(how, i)
        (os.fsync if how == "fsync" else os.fdatasync)(self.fds[i])

    def op_reopen(self, i):
        self.note("reopen", i)
        os.close(self.fds[i])
        self.fds[i] = self.open(i)

    def op_seek(self, i):
        m = self.model[i]
        self.note("seek", i)
        pos = 0
        while pos < len(m):
            try:
                hole = os.lseek(self.fds[i], pos, SEEK_HOLE)
            except OSError as e:
                self.fail("SEEK_HOLE at %d: %s" % (pos, e))
            hole = min(hole, len(m))
            try:
                nxt = os.lseek(self.fds[i], hole, SEEK_DATA)
            except OSError as e:
                if e.errno != errno.ENXIO:
                    self.fail("SEEK_DATA at %d: %s" % (hole, e))
                nxt = len(m)
            if any(m[hole:nxt]):
                k = next(k for k in range(hole, nxt) if m[k])
                self.fail("SEEK_HOLE/SEEK_DATA: byte %d of file %d is %d "
                          "but lies in a hole [%d, %d)" %
                          (k, i, m[k], hole, nxt))
            pos = max(nxt, pos + 1)

    def check_all(self, how):
        for i in range(NFILES):
            st = os.fstat(self.fds[i])
            if st.st_size != len(self.model[i]):
                self.fail("%s: file %d has size %d, expected %d" %
                          (how, i, st.st_size, len(self.model[i])))
            self.check(i, 0, os.pread(self.fds[i], len(self.model[i]) + 1,
                                      0), how)

    def run(self, nops):
        ops = [(self.op_write, 30), (self.op_read, 20),
               (self.op_truncate, 5), (self.op_falloc, 8),
               (self.op_mapwrite, 8), (self.op_mapread, 8),
               (self.op_copy, 8), (self.op_sync, 4), (self.op_reopen, 3),
               (self.op_seek, 2), (self.op_dwrite, 8), (self.op_dread, 6)]
        funcs = [f for f, _ in ops]
        weights = [w for _, w in ops]
        for n in range(1, nops + 1):
            f = self.rnd.choices(funcs, weights)[0]
            try:
                f(self.rnd.randrange(NFILES))
            except OSError as e:
                self.fail("%s: %s" % (f.__name__, e))
            if n % 500 == 0:
                self.check_all("whole-file check after %d ops" % n)
        self.check_all("final check")
        for fd in self.fds:
            os.fsync(fd)
            os.close(fd)
        for fd in self.dfds:
            os.close(fd)


def digest(chunks):
    h = hashlib.sha256()
    for c in chunks:
        h.update(len(c).to_bytes(8, "little"))
        h.update(c)
    return h.hexdigest()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ops", type=int, default=3000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--maxlen", type=int, default=65536)
    ap.add_argument("--verify", action="store_true")
    ap.add_argument("--direct", action="store_true")
    ap.add_argument("dir")
    a = ap.parse_args()
    mfile = os.path.join(os.path.dirname(os.path.abspath(a.dir)) or "/",
                         "fsx.model")
    if a.verify:
        got = []
        for i in range(NFILES):
            with open(os.path.join(a.dir, "fsx-%d" % i), "rb") as f:
                got.append(f.read())
        with open(mfile) as f:
            want = f.read().strip()
        if digest(got) != want:
            sys.stderr.write("fsx: the files differ from the model after "
                             "the remount\n")
            sys.exit(1)
        print("fsx: files match the model after the remount")
        return
    fx = Fsx(a.dir, a.seed, a.maxlen, a.direct)
    fx.run(a.ops)
    with open(mfile, "w") as f:
        f.write(digest([bytes(m) for m in fx.model]) + "\n")
    print("fsx: seed %d, %d operations, sizes %s; %s; not supported: %s" %
          (a.seed, a.ops, [len(m) for m in fx.model],
           ", ".join("%s %d" % kv for kv in sorted(fx.counts.items())),
           ", ".join(sorted(fx.off)) or "none"))


if __name__ == "__main__":
    main()
