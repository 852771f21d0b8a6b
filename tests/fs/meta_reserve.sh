#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# Creates and unlinks of empty files, each with an fsync, write almost no
# data but a commit's worth of metadata nodes each time; a few nodes in
# every zone stay live. Only the cleaner gives those zones back, and
# nothing woke it but data writes: on a small zoned device the commits
# filled the reserve and one failed, turning the filesystem read-only
# with under 1 MiB live. The cleaner must keep up, with the default
# policy and with gc=off (which still cleans once data has no zone left).
. "${srcdir:-.}/tests/fs/lib.sh"
FSCK=${SMRFS_FSCK:-$B/fsck/fsck.smrfs}
[ -x "$FSCK" ] || skip "$FSCK not built"
OPS=${META_RESERVE_OPS:-6000}
M=$T/mnt

for opts in commit=3600 commit=3600,gc=off; do
	note "-o $opts: $OPS creates and unlinks with fsync"
	rm -rf "$T/zl"
	"$CTL" zloop create "$T/zl" --capacity 16M --zone-size 1M \
		--conv-zones 2 --max-open 6 >/dev/null ||
		fail "smrfsctl zloop create"
	"$MKFS" "$T/zl" >/dev/null || fail "mkfs"
	mount_fs "$T/zl" "$M" "$opts"
	python3 - "$M" "$OPS" <<'PY' || fail "-o $opts: $(tail -3 "$T/daemon.err")"
import os, random, sys
d, n = sys.argv[1], int(sys.argv[2])
r = random.Random(1)
os.mkdir(d + "/keep")
for i in range(n):
    p = "%s/f%d" % (d, r.randrange(2000))
    try:
        if os.path.exists(p):
            os.unlink(p)
        else:
            fd = os.open(p, os.O_CREAT | os.O_WRONLY, 0o644)
            os.fsync(fd)
            os.close(fd)
        if i % 7 == 0:
            # Names that stay: live nodes left behind in every zone.
            os.close(os.open("%s/keep/k%d" % (d, i), os.O_CREAT, 0o644))
    except OSError as e:
        sys.exit("operation %d: %s" % (i, e))
PY
	"$CTL" stat "$M" | grep -E "cleaner" || true
	umount_fs "$M"
	"$FSCK" -n "$T/zl" >"$T/fsck.out" 2>&1 ||
		fail "fsck.smrfs -n: $(cat "$T/fsck.out")"
done

# Names, xattrs and symlinks are metadata users make: once data has filled
# the filesystem they get ENOSPC too, rather than take the reserve the
# commits need (the filesystem turned read-only), and when thousands of
# them are made or deleted at once the engine commits before their dirty
# nodes outgrow the reserve.
meta_fill() { # meta_fill DEVICE
	mount_fs "$1" "$M"
	python3 - "$M" <<'PY' || fail "$1: $(tail -3 "$T/daemon.err")"
import errno, os, random, sys
m, r, made = sys.argv[1], random.Random(1), []
def full(e, what):
    if e.errno != errno.ENOSPC:
        sys.exit("%s: %s" % (what, e))
try:
    with open(m + "/data", "wb") as f:
        while True:
            f.write(os.urandom(1 << 20))
            f.flush()
except OSError as e:
    full(e, "data")
for rnd in range(3):
    fails, i = 0, 0
    while fails < 50:
        i += 1
        p = "%s/d%d/x%d_%d" % (m, i % 20, rnd, i)
        try:
            os.makedirs(os.path.dirname(p), exist_ok=True)
            if i % 3 == 0:
                os.symlink("y" * r.randrange(100, 4095), p)
            else:
                open(p, "w").close()
                os.setxattr(p, "user.big", os.urandom(r.randrange(1000, 65536)))
            made.append(p)
        except OSError as e:
            full(e, "making %s" % p)
            fails += 1
            if os.path.lexists(p):
                made.append(p)
    r.shuffle(made)
    for p in made[:len(made) // 2]:
        try:
            os.unlink(p)
        except OSError as e:
            sys.exit("unlink %s: %s" % (p, e))
    made = made[len(made) // 2:]
    if rnd == 1:
        os.truncate(m + "/data", os.path.getsize(m + "/data") // 2)
print("--- %d names kept" % len(made))
PY
	umount_fs "$M"
	"$FSCK" -n "$1" >"$T/fsck.out" 2>&1 ||
		fail "fsck.smrfs -n $1: $(cat "$T/fsck.out")"
}
note "names and xattrs on a full filesystem"
rm -rf "$T/zl"
"$CTL" zloop create "$T/zl" --capacity 64M --zone-size 4M --conv-zones 2 \
	--max-open 6 >/dev/null || fail "smrfsctl zloop create"
"$MKFS" "$T/zl" >/dev/null || fail "mkfs"
meta_fill "$T/zl"
truncate -s 32M "$T/img" || fail "truncate"
"$MKFS" "$T/img" >/dev/null || fail "mkfs file"
meta_fill "$T/img"

# Names alone fill the filesystem, then every other one goes: each unlink
# dirties leaves whose other names stay, so the commits write node after
# node into the reserve, and the dead nodes are scattered over zones that
# stay mostly live. The unlinks outran the cleaner until a commit found no
# room (128 MiB of 4 MiB zones, and 512 MiB of 16 MiB): they now clean in
# the foreground once the commits take the reserve. Then names fill it
# again: at least half as many as went must fit.
note "names alone fill the filesystem, then half of them are unlinked"
rm -rf "$T/zl"
"$CTL" zloop create "$T/zl" --capacity 128M --zone-size 4M >/dev/null ||
	fail "smrfsctl zloop create"
"$MKFS" "$T/zl" >/dev/null || fail "mkfs"
mount_fs "$T/zl" "$M"
python3 - "$M" <<'PY' || fail "names alone: $(tail -3 "$T/daemon.err")"
import errno, os, sys
m, made, k, gone = sys.argv[1], [], 0, 0
for rnd in range(2):
    had = len(made)
    try:
        while True:
            p = "%s/f%07d_%s" % (m, k, "n" * 150)
            k += 1
            os.close(os.open(p, os.O_CREAT | os.O_WRONLY, 0o644))
            made.append(p)
            os.setxattr(p, "user.a", b"v" * 200)
    except OSError as e:
        if e.errno != errno.ENOSPC:
            sys.exit("round %d, name %d: %s" % (rnd, k, e))
    # The new names' inodes and readdir items have keys above all the
    # old ones: the space of the half-emptied leaves comes back only if
    # they merge (once, of 43,929 names gone, 3,675 could be made again).
    if gone and len(made) - had < gone // 2:
        sys.exit("%d names unlinked, only %d made again" %
                 (gone, len(made) - had))
    gone = len(made[::2])
    for p in made[::2]:
        try:
            os.unlink(p)
        except OSError as e:
            sys.exit("round %d, unlink %s: %s" % (rnd, p, e))
    made = made[1::2]
print("--- %d names kept" % len(made))
PY
umount_fs "$M"
"$FSCK" -n "$T/zl" >"$T/fsck.out" 2>&1 ||
	fail "fsck.smrfs -n: $(cat "$T/fsck.out")"
exit 0
