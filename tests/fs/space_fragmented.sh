#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# A zoned device filled to 85% of the size statfs reports by one file, then
# overwritten in random 4 KiB writes: every block of the file becomes an
# extent of its own, the extent map grows to a few percent of the data, and
# a cleaning pass that moves one zone's blocks rewrites about every node of
# it. With room to move one zone per pass, each pass wrote more metadata
# than it won, and within seconds a commit found no room and the filesystem
# turned read-only. Every write must succeed, and fsck finds nothing.
. "${srcdir:-.}/tests/fs/lib.sh"
FSCK=${SMRFS_FSCK:-$B/fsck/fsck.smrfs}
[ -x "$FSCK" ] || skip "$FSCK not built"
M=$T/mnt
WRITES=${SPACE_FRAGMENTED_WRITES:-250000}

"$CTL" zloop create "$T/zl" --capacity 512M --zone-size 8M >/dev/null ||
	fail "smrfsctl zloop create"
"$MKFS" "$T/zl" >/dev/null || fail "mkfs"
mount_fs "$T/zl" "$M"
python3 - "$M" "$WRITES" <<'EOF' || fail "random 4 KiB overwrites near full"
import os, random, sys, time
m, writes = sys.argv[1], int(sys.argv[2])
v = os.statvfs(m)
size = v.f_blocks * v.f_frsize * 85 // 100 // (1 << 20) * (1 << 20)
fd = os.open(os.path.join(m, "big"), os.O_CREAT | os.O_RDWR, 0o644)
chunk = os.urandom(1 << 20)
for off in range(0, size, 1 << 20):
    os.pwrite(fd, chunk, off)
os.fsync(fd)
r, blocks, t0 = random.Random(1), size // 4096, time.time()
last = {}
for i in range(writes):
    b = r.randrange(blocks)
    try:
        os.pwrite(fd, (b * writes + i).to_bytes(8, "little") * 512, b * 4096)
    except OSError as e:
        sys.exit("write %d of %d (after %.0f s), 4 KiB at %d of a file of %d "
                 "bytes: %s" % (i, writes, time.time() - t0, b * 4096, size,
                                e))
    last[b] = i
os.fsync(fd)
for b, i in last.items():
    if os.pread(fd, 8, b * 4096) != (b * writes + i).to_bytes(8, "little"):
        sys.exit("block %d does not hold its last write" % b)
os.close(fd)
print("--- %d random 4 KiB writes into %d bytes in %.0f s, all read back"
      % (writes, size, time.time() - t0))
EOF
"$CTL" stat "$M" | grep -E "write amplification|cleaner" || true
umount_fs "$M"
"$FSCK" -n "$T/zl" >"$T/fsck.out" 2>&1 ||
	fail "fsck.smrfs -n: $(cat "$T/fsck.out")"
exit 0
