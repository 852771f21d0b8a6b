# SPDX-License-Identifier: GPL-2.0-or-later
"""fs-workload.py - a mixed, reproducible workload on a mounted filesystem,
and the check of what it left behind.

Usage:
  python3 fs-workload.py round MOUNTPOINT STATE --bytes N [--seed S]
                                                        [--jobs J]
      Run one round of operations writing about N bytes of data in all:
      files of many sizes made with writes of uneven sizes, appends,
      overwrites in place, holes, truncations, whole rewrites, renames of
      files (some over existing ones) and of directories, symbolic links,
      deletes of files and of trees, some fsync calls. J writers run at
      once, each in its own top directory. The model of what the tree must
      hold is loaded from STATE (when it exists) and saved there.
  python3 fs-workload.py churn MOUNTPOINT STATE --bytes N [--seed S]
                                        [--jobs J] [--ballast B]
      Overwrite about N bytes without growing the tree: mostly writes in
      place inside files (4 KiB to 1 MiB at random offsets), which leave
      every zone partly dead, and some whole rewrites at the same size and
      files replaced by new ones of the same size. The live data stays as
      it was, so N larger than the free space can only be written if the
      filesystem reclaims the dead space, which takes cleaning. B bytes of
      new files of 4 to 8 MiB are written first: the fuller the
      filesystem, the more of each zone is still live when it must be
      cleaned. In-place writes pick files by their size.
  python3 fs-workload.py verify MOUNTPOINT STATE [--manifest FILE]
      Check that the tree holds exactly the model: the same entries, types,
      sizes, link targets and bytes; write "sha256  path" of every file to
      FILE.
  python3 fs-workload.py zone-load DEVICE FILE
      Until killed (SIGTERM), read the zone report of the zoned block
      device DEVICE 20 times a second and keep "OPEN ACTIVE SAMPLES" in
      FILE: the most sequential zones seen open and active at once. One
      process and an ioctl per sample, so that samples are cheap enough
      to catch a zone held only briefly.

File data is made of 4 KiB blocks that each start with the file's number,
its generation and the block's offset, followed by bytes of a seeded random
pool: a block that lands in the wrong file or at the wrong place is told
apart, and the model needs no copy of the data. Any error of a system call
is a failure (exit 1), reported with the operation and the path.
"""
import argparse
import errno
import fcntl
import hashlib
import json
import os
import random
import signal
import stat
import struct
import sys
import threading
import time

POOL_SIZE = 8 << 20
BLOCK = 4096
_pool = None


def pool():
    global _pool
    if _pool is None:
        _pool = random.Random(20261203).randbytes(POOL_SIZE)
    return _pool


def content(fid, gen, length):
    """The bytes of generation gen of file fid (independent of offsets)."""
    p = pool()
    start = (fid * 7919 + gen * 104729) % (POOL_SIZE - 2 * BLOCK)
    out = bytearray(length)
    pos = 0
    while pos < length:
        n = min(BLOCK, length - pos)
        src = (start + pos * 3) % (POOL_SIZE - 2 * BLOCK)
        blk = bytearray(p[src:src + BLOCK])
        blk[0:16] = struct.pack("<IIQ", fid, gen, pos)
        out[pos:pos + n] = blk[:n]
        pos += n
    return out


def expected(f):
    """Materialise the content the model gives for a file."""
    buf = bytearray()
    for op in f["ops"]:
        if op[0] == "w":
            _, off, length, gen = op
            if off > len(buf):
                buf.extend(bytes(off - len(buf)))
            buf[off:off + length] = content(f["fid"], gen, length)
        else:
            _, size = op
            if size < len(buf):
                del buf[size:]
            else:
                buf.extend(bytes(size - len(buf)))
    return bytes(buf)


class Failure(Exception):
    pass


class Worker:
    """One writer: owns the subtree "j<N>" and its part of the model."""

    def __init__(self, mnt, model, rng, budget, fid_base):
        self.mnt = mnt
        self.m = model  # {"files": {rel: f}, "dirs": [rel], "links": {}}
        self.rng = rng
        self.budget = budget
        self.written = 0
        self.nops = 0
        self.fid_next = model.get("fid_next", fid_base)
        self.counts = {}

    def p(self, rel):
        return os.path.join(self.mnt, rel)

    def call(self, what, rel, fn, *args):
        try:
            return fn(*args)
        except OSError as e:
            raise Failure("%s %s: %s (errno %s)" % (
                what, rel, e.strerror, errno.errorcode.get(e.errno, e.errno)))

    # ----- choosing
    def size(self):
        r = self.rng.random()
        left = max(self.budget - self.written, BLOCK)
        if r < 0.15:
            n = self.rng.choice([0, 1, 511, 512, 4095, 4096, 4097, 8192,
                                 12289, 65536, 131071])
        elif r < 0.55:
            n = self.rng.randrange(1, 64 << 10)
        elif r < 0.88:
            n = self.rng.randrange(64 << 10, 2 << 20)
        else:
            n = self.rng.randrange(2 << 20, 24 << 20)
        return min(n, left)

    def pick_dir(self):
        return self.rng.choice(self.m["dirs"])

    def pick_file(self, by_size=False):
        if not self.m["files"]:
            return None
        names = sorted(self.m["files"])
        if by_size:
            sizes = [self.f_size(self.m["files"][k]) for k in names]
            if sum(sizes):
                return self.rng.choices(names, sizes)[0]
        return self.rng.choice(names)

    def new_name(self, d, prefix):
        while True:
            name = "%s%d" % (prefix, self.rng.randrange(1 << 20))
            rel = os.path.join(d, name)
            if (rel not in self.m["files"] and rel not in self.m["dirs"]
                    and rel not in self.m["links"]):
                return rel

    # ----- writing
    def write_range(self, fd, rel, off, data):
        """Write data at off in pieces of uneven sizes."""
        pos = 0
        while pos < len(data):
            if self.rng.random() < 0.7:
                n = 1 << 20  # what the kernel sends at most
            else:
                n = self.rng.choice([BLOCK, 3000, 65536, 131072 + 17])
            n = min(len(data) - pos, n)
            done = self.call("pwrite", rel, os.pwrite, fd,
                             memoryview(data)[pos:pos + n], off + pos)
            if done != n:
                raise Failure("pwrite %s: %d of %d bytes at %d" % (
                    rel, done, n, off + pos))
            pos += n
        self.written += len(data)

    def maybe_fsync(self, fd, rel):
        if self.rng.random() < 0.05:
            self.call("fsync", rel, os.fsync, fd)

    def op_create(self, n=None):
        rel = self.new_name(self.pick_dir(), "f")
        if n is None:
            n = self.size()
        fid = self.fid_next
        self.fid_next += 1
        fd = self.call("create", rel, os.open, self.p(rel),
                       os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            self.write_range(fd, rel, 0, content(fid, 0, n))
            self.maybe_fsync(fd, rel)
        finally:
            os.close(fd)
        self.m["files"][rel] = {"fid": fid, "gen": 0, "size": n,
                                "ops": [["w", 0, n, 0]]}

    def modify(self, kind):
        rel = self.pick_file(by_size=kind == "poke")
        if rel is None:
            return self.op_create()
        f = self.m["files"][rel]
        size = self.f_size(f)
        if size == 0 and kind in ("poke", "resize"):
            kind = "rewrite"  # nothing to write over
        f["gen"] += 1
        gen = f["gen"]
        flags = os.O_WRONLY
        if kind in ("rewrite", "resize"):
            flags |= os.O_TRUNC
        fd = self.call("open", rel, os.open, self.p(rel), flags)
        try:
            if kind == "overwrite":
                off = self.rng.randrange(0, size + 1)
                n = min(self.rng.choice([1, 100, BLOCK, 5000, 65536,
                                         300000, 1 << 20]),
                        max(self.budget - self.written, 1))
                self.write_range(fd, rel, off, content(f["fid"], gen, n))
                f["ops"].append(["w", off, n, gen])
            elif kind == "append":
                n = min(self.rng.randrange(1, 256 << 10),
                        max(self.budget - self.written, 1))
                self.write_range(fd, rel, size, content(f["fid"], gen, n))
                f["ops"].append(["w", size, n, gen])
            elif kind == "hole":
                off = size + self.rng.randrange(1, 1 << 20)
                n = self.rng.randrange(1, 64 << 10)
                self.write_range(fd, rel, off, content(f["fid"], gen, n))
                f["ops"].append(["w", off, n, gen])
            elif kind == "truncate":
                if self.rng.random() < 0.6:
                    n = self.rng.randrange(0, size + 1)
                else:
                    n = size + self.rng.randrange(1, 2 << 20)
                self.call("ftruncate", rel, os.ftruncate, fd, n)
                f["ops"].append(["t", n])
            elif kind == "poke":  # in place, the size kept
                n = min(self.rng.choice([BLOCK, 3 * BLOCK, 5000, 65536,
                                         256 << 10, 1 << 20]), size)
                off = self.rng.randrange(0, size - n + 1)
                self.write_range(fd, rel, off, content(f["fid"], gen, n))
                f["ops"].append(["w", off, n, gen])
            elif kind == "resize":  # the same size again
                self.write_range(fd, rel, 0, content(f["fid"], gen, size))
                f["ops"] = [["w", 0, size, gen]]
            else:  # rewrite
                n = self.size()
                self.write_range(fd, rel, 0, content(f["fid"], gen, n))
                f["ops"] = [["w", 0, n, gen]]
            self.maybe_fsync(fd, rel)
        finally:
            os.close(fd)
        f["size"] = self.m_size(f)

    @classmethod
    def f_size(cls, f):
        """The size of a file of the model (kept since the last change)."""
        return f["size"] if "size" in f else cls.m_size(f)

    @staticmethod
    def m_size(f):
        size = 0
        for op in f["ops"]:
            if op[0] == "w":
                size = max(size, op[1] + op[2])
            else:
                size = op[1]
        return size

    # ----- namespace
    def op_mkdir(self):
        rel = self.new_name(self.pick_dir(), "d")
        self.call("mkdir", rel, os.mkdir, self.p(rel), 0o755)
        self.m["dirs"].append(rel)

    def op_symlink(self):
        rel = self.new_name(self.pick_dir(), "l")
        target = "target-%d" % self.rng.randrange(1 << 30)
        if self.rng.random() < 0.2:
            target = "x" * self.rng.randrange(100, 1000)
        self.call("symlink", rel, os.symlink, target, self.p(rel))
        self.m["links"][rel] = target

    def op_rename_file(self):
        rel = self.pick_file()
        if rel is None:
            return
        if self.rng.random() < 0.3 and len(self.m["files"]) > 1:
            dst = self.pick_file()  # replace an existing file
            if dst == rel:
                return
        else:
            dst = self.new_name(self.pick_dir(), "r")
        self.call("rename", rel + " -> " + dst, os.rename, self.p(rel),
                  self.p(dst))
        self.m["files"][dst] = self.m["files"].pop(rel)

    def subtree(self, d):
        pre = d + "/"
        return [x for x in self.m["dirs"] if x.startswith(pre)]

    def op_rename_dir(self):
        cands = [d for d in self.m["dirs"] if "/" in d]
        if not cands:
            return
        d = self.rng.choice(cands)
        dest_parent = self.pick_dir()
        if dest_parent == d or dest_parent.startswith(d + "/"):
            return
        dst = self.new_name(dest_parent, "m")
        self.call("rename", d + " -> " + dst, os.rename, self.p(d),
                  self.p(dst))

        def move(key):
            if key == d:
                return dst
            if key.startswith(d + "/"):
                return dst + key[len(d):]
            return key
        self.m["dirs"] = [move(x) for x in self.m["dirs"]]
        self.m["files"] = {move(k): v for k, v in self.m["files"].items()}
        self.m["links"] = {move(k): v for k, v in self.m["links"].items()}

    def op_replace(self):
        """A file deleted and a new one of the same size made."""
        rel = self.pick_file()
        if rel is None:
            return self.op_create()
        size = self.f_size(self.m["files"][rel])
        self.call("unlink", rel, os.unlink, self.p(rel))
        del self.m["files"][rel]
        self.op_create(size)

    def op_unlink(self):
        if self.m["links"] and self.rng.random() < 0.2:
            rel = self.rng.choice(sorted(self.m["links"]))
            self.call("unlink", rel, os.unlink, self.p(rel))
            del self.m["links"][rel]
            return
        rel = self.pick_file()
        if rel is None:
            return
        self.call("unlink", rel, os.unlink, self.p(rel))
        del self.m["files"][rel]

    def op_rmtree(self):
        cands = [d for d in self.m["dirs"] if "/" in d]
        if not cands:
            return
        d = self.rng.choice(cands)
        pre = d + "/"
        for k in sorted(self.m["files"]):
            if k.startswith(pre):
                self.call("unlink", k, os.unlink, self.p(k))
                del self.m["files"][k]
        for k in sorted(self.m["links"]):
            if k.startswith(pre):
                self.call("unlink", k, os.unlink, self.p(k))
                del self.m["links"][k]
        for k in sorted(self.subtree(d) + [d], key=len, reverse=True):
            self.call("rmdir", k, os.rmdir, self.p(k))
            self.m["dirs"].remove(k)

    OPS = [
        ("create", 34), ("overwrite", 14), ("append", 8), ("hole", 3),
        ("truncate", 4), ("rewrite", 4), ("mkdir", 5), ("symlink", 2),
        ("rename_file", 10), ("rename_dir", 2), ("unlink", 10),
        ("rmtree", 1),
    ]

    # The live data stays the same: every byte written is one made dead.
    CHURN_OPS = [("poke", 90), ("resize", 4), ("replace", 6)]

    def fill(self, nbytes):
        """New files of 4 to 8 MiB, nbytes in all."""
        end = self.written + nbytes
        while self.written < end:
            self.op_create(min(self.rng.randrange(4 << 20, 8 << 20),
                               max(end - self.written, BLOCK)))
        return self.written

    def run(self, ops):
        names = [o for o, _ in ops]
        weights = [w for _, w in ops]
        while self.written < self.budget:
            op = self.rng.choices(names, weights)[0]
            self.counts[op] = self.counts.get(op, 0) + 1
            self.nops += 1
            if op in ("overwrite", "append", "hole", "truncate", "rewrite",
                      "poke", "resize"):
                self.modify(op)
            else:
                getattr(self, "op_" + op)()
        self.m["fid_next"] = self.fid_next


def load(state):
    if os.path.exists(state):
        with open(state) as f:
            return json.load(f)
    return {"rounds": 0, "jobs": {}}


def do_round(args):
    """A round (mode "round") or an overwrite round (mode "churn")."""
    st = load(args.state)
    churn = args.mode == "churn"
    rng = random.Random(args.seed * 1000 + st["rounds"] + 500 * churn)
    workers = []
    for j in range(args.jobs):
        top = "j%d" % j
        m = st["jobs"].get(top)
        if m is None:
            os.mkdir(os.path.join(args.mnt, top), 0o755)
            m = {"files": {}, "dirs": [top], "links": {}}
            st["jobs"][top] = m
        w = Worker(args.mnt, m, random.Random(rng.random()),
                   args.bytes // args.jobs, (j + 1) << 24)
        workers.append(w)
    errors = []

    def body(w):
        try:
            if churn and args.ballast:
                w.ballast = w.fill(args.ballast // args.jobs)
                w.written = 0
            w.run(Worker.CHURN_OPS if churn else Worker.OPS)
        except Failure as e:
            errors.append(str(e))
        except Exception as e:  # a bug here must fail the test too
            errors.append("%s: %s" % (type(e).__name__, e))

    t0 = time.monotonic()
    threads = [threading.Thread(target=body, args=(w,)) for w in workers]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    secs = time.monotonic() - t0
    if errors:
        for e in errors:
            print("FAIL: " + e, file=sys.stderr)
        return 1
    st["rounds"] += 1
    with open(args.state, "w") as f:
        json.dump(st, f)
    written = sum(w.written for w in workers)
    counts = {}
    for w in workers:
        for k, v in w.counts.items():
            counts[k] = counts.get(k, 0) + v
    print("%s %d: %d operations, %.1f MiB written in %.1f s "
          "(%.1f MiB/s) by %d writers" % (
              args.mode, st["rounds"], sum(w.nops for w in workers), written / 2**20,
              secs, written / 2**20 / max(secs, 1e-3), args.jobs))
    print("  " + " ".join("%s=%d" % kv for kv in sorted(counts.items())))
    if churn and args.ballast:
        print("  and first %.1f MiB of new files" % (
            sum(w.ballast for w in workers) / 2**20))
    return 0


def do_verify(args):
    st = load(args.state)
    bad = []
    want = {}
    for m in st["jobs"].values():
        for d in m["dirs"]:
            want[d] = ("d", None)
        for k, v in m["files"].items():
            want[k] = ("f", v)
        for k, v in m["links"].items():
            want[k] = ("l", v)
    have = {}
    for root, dirs, files in os.walk(args.mnt):
        for n in dirs + files:
            full = os.path.join(root, n)
            rel = os.path.relpath(full, args.mnt)
            have[rel] = os.lstat(full)
    for rel in sorted(set(have) - set(want)):
        bad.append("unexpected entry %s" % rel)
    for rel in sorted(set(want) - set(have)):
        bad.append("missing %s" % rel)
    t0 = time.monotonic()
    total = 0
    nfiles = 0
    man = []
    for rel in sorted(set(want) & set(have)):
        kind, v = want[rel]
        st_ = have[rel]
        full = os.path.join(args.mnt, rel)
        if kind == "d":
            if not stat.S_ISDIR(st_.st_mode):
                bad.append("%s: not a directory" % rel)
        elif kind == "l":
            if not stat.S_ISLNK(st_.st_mode):
                bad.append("%s: not a symbolic link" % rel)
            elif os.readlink(full) != v:
                bad.append("%s: link target differs" % rel)
        else:
            if not stat.S_ISREG(st_.st_mode):
                bad.append("%s: not a regular file" % rel)
                continue
            exp = expected(v)
            try:
                with open(full, "rb") as f:
                    got = f.read()
            except OSError as e:
                bad.append("%s: read: %s" % (rel, e.strerror))
                continue
            total += len(got)
            nfiles += 1
            if st_.st_size != len(exp):
                bad.append("%s: size %d, expected %d" % (
                    rel, st_.st_size, len(exp)))
            if got != exp:
                i = next((i for i in range(min(len(got), len(exp)))
                          if got[i] != exp[i]), min(len(got), len(exp)))
                blk = i - i % BLOCK
                hdr = got[blk:blk + 16]
                who = (struct.unpack("<IIQ", hdr) if len(hdr) == 16
                       else None)
                bad.append("%s: content differs from byte %d (%d read, "
                           "%d expected; the block read starts with "
                           "file/gen/offset %r)" % (rel, i, len(got),
                                                    len(exp), who))
            man.append("%s  %s" % (hashlib.sha256(got).hexdigest(), rel))
    secs = time.monotonic() - t0
    if args.manifest:
        with open(args.manifest, "w") as f:
            f.write("\n".join(man) + "\n")
    print("verify: %d files, %d directories, %d links, %.1f MiB read in "
          "%.1f s" % (nfiles, sum(1 for k in want.values() if k[0] == "d"),
                      sum(1 for k in want.values() if k[0] == "l"),
                      total / 2**20, secs))
    for b in bad[:30]:
        print("FAIL: " + b, file=sys.stderr)
    if len(bad) > 30:
        print("FAIL: ... and %d more" % (len(bad) - 30), file=sys.stderr)
    return 1 if bad else 0


# <linux/blkzoned.h>: BLKREPORTZONE = _IOWR(0x12, 130, struct
# blk_zone_report), a 16-byte header followed by 64-byte struct blk_zone.
BLKREPORTZONE = 0xC0101282
ZONE_HDR = struct.Struct("=QII")
ZONE = struct.Struct("=QQQBBBB4xQ24x")
COND_OPEN = (0x2, 0x3)  # implicitly, explicitly open
COND_CLOSED = 0x4
TYPE_CONV = 0x1


def zone_load(fd, nr):
    """(open, active): sequential zones open, and open or closed."""
    buf = bytearray(ZONE_HDR.size + nr * ZONE.size)
    ZONE_HDR.pack_into(buf, 0, 0, nr, 0)
    fcntl.ioctl(fd, BLKREPORTZONE, buf)
    got = ZONE_HDR.unpack_from(buf, 0)[1]
    nopen = nactive = 0
    for i in range(got):
        z = ZONE.unpack_from(buf, ZONE_HDR.size + i * ZONE.size)
        if z[3] == TYPE_CONV:
            continue
        if z[4] in COND_OPEN:
            nopen += 1
        if z[4] in COND_OPEN or z[4] == COND_CLOSED:
            nactive += 1
    return nopen, nactive


def do_zone_load(args):
    name = os.path.basename(os.path.realpath(args.mnt))
    with open("/sys/block/%s/queue/nr_zones" % name) as f:
        nr = int(f.read())
    fd = os.open(args.mnt, os.O_RDONLY)
    peak = [0, 0, 0]

    def save():
        tmp = args.state + ".tmp"
        with open(tmp, "w") as f:
            f.write("%d %d %d\n" % tuple(peak))
        os.replace(tmp, args.state)

    def stop(signum, frame):
        save()
        sys.exit(0)
    signal.signal(signal.SIGTERM, stop)
    last = 0.0
    while True:
        o, a = zone_load(fd, nr)
        peak[2] += 1
        if o > peak[0] or a > peak[1] or time.monotonic() - last > 1:
            peak[0] = max(peak[0], o)
            peak[1] = max(peak[1], a)
            save()
            last = time.monotonic()
        time.sleep(0.05)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["round", "churn", "verify",
                                     "zone-load"])
    ap.add_argument("mnt")
    ap.add_argument("state")
    ap.add_argument("--bytes", type=int, default=64 << 20)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--jobs", type=int, default=3)
    ap.add_argument("--manifest")
    ap.add_argument("--ballast", type=int, default=0)
    args = ap.parse_args()
    if args.mode in ("round", "churn"):
        return do_round(args)
    if args.mode == "zone-load":
        return do_zone_load(args)
    return do_verify(args)


if __name__ == "__main__":
    sys.exit(main())
