#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# The size statfs reports can be filled and kept overwritten: on small zoned
# devices, fill every byte statfs says is available, then overwrite random
# blocks of it for several times the device's size, uniformly (the hardest
# case for the cleaner). No write may fail with ENOSPC or hang, every byte
# must read back as last written, and the device must be clean for fsck.
# smrfsctl stat reports the same size and available space as statfs.
. "${srcdir:-.}/tests/fs/lib.sh"
FSCK=${SMRFS_FSCK:-$B/fsck/fsck.smrfs}
[ -x "$FSCK" ] || skip "$FSCK not built"
command -v timeout >/dev/null || skip "no timeout(1)"
M=$T/mnt

# check_geometry CAPACITY ZONE_SIZE PASSES
check_geometry() {
	Z=$T/zl.$1.$2
	"$CTL" zloop create "$Z" --capacity "$1" --zone-size "$2" \
		--conv-zones 2 --max-open 6 >/dev/null ||
		fail "smrfsctl zloop create $1 $2"
	"$MKFS" "$Z" >/dev/null || fail "mkfs $Z"
	mount_fs "$Z" "$M"

	python3 - "$M" "$CTL" <<'EOF' || fail "$1 in zones of $2: size and available"
import json, os, subprocess, sys
m, ctl = sys.argv[1], sys.argv[2]
v = os.statvfs(m)
st = json.loads(subprocess.check_output([ctl, "stat", "--json", m]))
size, avail = v.f_blocks * v.f_frsize, v.f_bavail * v.f_frsize
print("--- statfs: size %d, available %d; stat: capacity %d, overhead %d"
      % (size, avail, st["capacity_bytes"], st["overhead_bytes"]))
if st["size_bytes"] != size or st["available_bytes"] != avail:
    sys.exit("smrfsctl stat says size %d, available %d"
             % (st["size_bytes"], st["available_bytes"]))
if not 0 < avail <= size < st["capacity_bytes"]:
    sys.exit("implausible: size %d, available %d" % (size, avail))
EOF

	timeout 120 python3 - "$M" "$3" <<'EOF' ||
import os, random, sys
m, passes = sys.argv[1], int(sys.argv[2])
FILE, BLK = 1 << 20, 64 << 10
v = os.statvfs(m)
avail = v.f_bavail * v.f_frsize // BLK * BLK
rnd = random.Random(avail)
sizes = [FILE] * (avail // FILE)
if avail % FILE:
    sizes.append(avail % FILE)
# The content of each block is named by a version byte: a file's blocks
# are checked against the last version written to them.
ver = [[0] * (s // BLK) for s in sizes]
def block(f, b, n):
    return bytes([(f * 7 + b * 3 + n) & 0xff]) * BLK
# The files' own metadata takes a little of what statfs offered: the
# fill may end with ENOSPC a few blocks short (writes cannot go past the
# size), but not more.
fds, filled = [], 0
for f, s in enumerate(sizes):
    fd = os.open(os.path.join(m, "f%04d" % f), os.O_CREAT | os.O_RDWR, 0o644)
    fds.append(fd)
    for b in range(s // BLK):
        try:
            os.pwrite(fd, block(f, b, 0), b * BLK)
        except OSError as e:
            if e.errno != 28 or avail - filled > max(avail // 100, 4 * BLK):
                raise
            del ver[f][b:]
            break
        filled += BLK
    if filled < sum(sizes[:f + 1]):
        break
ver = ver[:len(fds)]
if not ver[-1]:
    os.close(fds.pop())
    ver.pop()
sizes = sizes[:len(ver)]
left = os.statvfs(m).f_bavail * v.f_frsize
print("--- filled %d of %d bytes in %d files; statfs then says %d available"
      % (filled, avail, len(ver), left))
writes = passes * v.f_blocks * v.f_frsize // BLK
for w in range(writes):
    f = rnd.randrange(len(sizes))
    b = rnd.randrange(len(ver[f]))
    ver[f][b] += 1
    try:
        os.pwrite(fds[f], block(f, b, ver[f][b]), b * BLK)
    except OSError as e:
        sys.exit("write %d of %d (file %d, block %d): %s"
                 % (w, writes, f, b, e))
for f, fd in enumerate(fds):
    for b, n in enumerate(ver[f]):
        if os.pread(fd, BLK, b * BLK) != block(f, b, n):
            sys.exit("file %d block %d is not version %d" % (f, b, n))
    os.close(fd)
print("--- %d overwrites of %d bytes, all read back" % (writes, BLK))
EOF
		fail "$1 in zones of $2: fill and overwrite (a timeout means a hang)"
	"$CTL" stat "$M" | grep -E "write amp|size|available" || true
	umount_fs "$M"
	"$FSCK" -n "$Z" >"$T/fsck.out" 2>&1 ||
		fail "fsck.smrfs -n $Z: $(cat "$T/fsck.out")"
	rm -rf "$Z"
}

check_geometry 256M 32M 4
check_geometry 256M 16M 3
check_geometry 64M 4M 4
check_geometry 128M 4M 3
exit 0
