#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# Overwrites of every other block of a big file on a nearly full plain
# file leave the free space cut into holes of one block, shorter than a
# B-tree node. Metadata was allocated from whatever the rotational and
# flash allocators handed out next, a commit gave up after 16 holes, and
# the filesystem went read-only with most of its space free; later the
# allocator state, written in at most 8 extents, found no room either.
# Metadata must always find room in whole nodes: writers may get ENOSPC,
# the filesystem stays writable, and fsck finds nothing.
. "${srcdir:-.}/tests/fs/lib.sh"
FSCK=${SMRFS_FSCK:-$B/fsck/fsck.smrfs}
[ -x "$FSCK" ] || skip "$FSCK not built"
M=$T/mnt

for alloc in flash rotational; do
	note "-o alloc=$alloc"
	rm -f "$T/img"
	truncate -s 32M "$T/img" || fail "truncate"
	"$MKFS" "$T/img" >/dev/null || fail "mkfs"
	mount_fs "$T/img" "$M" "alloc=$alloc"
	python3 - "$M" <<'PY' || fail "$alloc: $(tail -3 "$T/daemon.err")"
import errno, os, sys
d, B = sys.argv[1], 4096

def data(f, *a):
    # Writers may be refused space; nothing else may fail.
    try:
        f(*a)
    except OSError as e:
        if e.errno != errno.ENOSPC:
            raise

fd = os.open(d + "/big", os.O_CREAT | os.O_WRONLY, 0o644)
mib = os.urandom(1 << 20)
n = 0
try:
    while True:
        os.write(fd, mib)
        n += 1
except OSError as e:
    if e.errno != errno.ENOSPC:
        raise
os.fsync(fd)
os.ftruncate(fd, (n * 3 // 4) << 20)
os.fsync(fd)
os.sync()
os.sync()
for b in range(0, (n * 3 // 4) * (1 << 20) // B, 2):
    data(os.pwrite, fd, b"x" * B, b * B)
    if b % 64 == 0:
        os.fsync(fd)
os.fsync(fd)
os.close(fd)
for i in range(400):
    p = "%s/d%d" % (d, i % 20)
    os.makedirs(p, exist_ok=True)
    f = os.open("%s/f%d" % (p, i), os.O_CREAT | os.O_WRONLY, 0o644)
    data(os.write, f, b"y" * B)
    os.fsync(f)
    os.close(f)
    if i % 50 == 0:
        os.sync()
PY
	touch "$M/still-writable" ||
		fail "$alloc: read-only: $(tail -3 "$T/daemon.err")"
	! grep -q "read-only" "$T/daemon.err" ||
		fail "$alloc: $(cat "$T/daemon.err")"
	umount_fs "$M"
	"$FSCK" -n "$T/img" >"$T/fsck.out" 2>&1 ||
		fail "$alloc: fsck.smrfs -n: $(cat "$T/fsck.out")"
done
exit 0
