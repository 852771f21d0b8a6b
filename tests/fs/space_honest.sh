#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# The size statfs reports can be filled and kept overwritten: on small zoned
# devices, fill every byte statfs says is available, then overwrite random
# blocks of it for several times the device's size, uniformly (the hardest
# case for the cleaner), by one writer or by several at once with writes of
# any size and offset. No write may fail with ENOSPC or hang, every byte
# must read back as last written, and the device must be clean for fsck.
# smrfsctl stat reports the same size and available space as statfs.
. "${srcdir:-.}/tests/fs/lib.sh"
FSCK=${SMRFS_FSCK:-$B/fsck/fsck.smrfs}
[ -x "$FSCK" ] || skip "$FSCK not built"
command -v timeout >/dev/null || skip "no timeout(1)"
M=$T/mnt

# check_geometry CAPACITY ZONE_SIZE PASSES [WRITERS]
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

	timeout 120 python3 - "$M" "$3" "${4:-1}" <<'EOF' ||
import os, random, sys, threading
m, passes, writers = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
FILE, BLK = 1 << 20, 64 << 10
v = os.statvfs(m)
avail = v.f_bavail * v.f_frsize // BLK * BLK
rnd = random.Random(avail + writers)
sizes = [FILE] * (avail // FILE)
if avail % FILE:
    sizes.append(avail % FILE)
def block(f, b):
    return bytes([(f * 7 + b * 3) & 0xff]) * BLK
# What each file should hold.
want = []
# The files' own metadata takes a little of what statfs offered: the
# fill may end with ENOSPC a few blocks short (writes cannot go past the
# size, and the last may be short), but not more.
fds, filled = [], 0
for f, s in enumerate(sizes):
    fd = os.open(os.path.join(m, "f%04d" % f), os.O_CREAT | os.O_RDWR, 0o644)
    fds.append(fd)
    want.append(bytearray())
    for b in range(s // BLK):
        try:
            k = os.pwrite(fd, block(f, b), b * BLK)
        except OSError as e:
            if e.errno != 28:
                raise
            k = 0
        want[f] += block(f, b)[:k]
        filled += k
        if k < BLK:
            if avail - filled > max(avail // 100, 4 * BLK):
                sys.exit("fill ended %d bytes short of %d available"
                         % (avail - filled, avail))
            break
    if filled < sum(sizes[:f + 1]):
        break
# Whole blocks only, which the writers below take for granted.
keep = len(want[-1]) // BLK * BLK
os.ftruncate(fds[-1], keep)
filled -= len(want[-1]) - keep
del want[-1][keep:]
if not want[-1]:
    os.close(fds.pop())
    want.pop()
left = os.statvfs(m).f_bavail * v.f_frsize
print("--- filled %d of %d bytes in %d files; statfs then says %d available"
      % (filled, avail, len(want), left))
# Each writer overwrites files of its own: one writer whole blocks, several
# also pieces of blocks at any offset.
total = passes * v.f_blocks * v.f_frsize
errors = []
def overwrite(j):
    r = random.Random(rnd.random())
    mine = list(range(j, len(want), writers))
    done = 0
    while done < total // writers and not errors:
        f = r.choice(mine)
        if writers == 1 or r.random() < 0.5:
            n = BLK
            off = r.randrange(len(want[f]) // BLK) * BLK
        else:
            n = r.randrange(1, min(4 * BLK, len(want[f])) + 1)
            off = r.randrange(len(want[f]) - n + 1)
        data = os.urandom(n)
        try:
            k = os.pwrite(fds[f], data, off)
        except OSError as e:
            errors.append("writer %d after %d bytes: %d at %d of file %d: %s"
                          % (j, done, n, off, f, e))
            return
        want[f][off:off + k] = data[:k]
        if k != n:
            errors.append("writer %d: short write, %d of %d" % (j, k, n))
            return
        done += n
threads = [threading.Thread(target=overwrite, args=(j,))
           for j in range(writers)]
for t in threads:
    t.start()
for t in threads:
    t.join()
if errors:
    sys.exit("; ".join(errors))
for f, fd in enumerate(fds):
    if os.pread(fd, len(want[f]) + 1, 0) != want[f]:
        sys.exit("file %d does not read back as last written" % f)
    os.close(fd)
print("--- %d writer(s) overwrote %d bytes, all read back" % (writers, total))
EOF
		{
			# What the space looked like: where it went.
			timeout 10 "$CTL" stat "$M" | grep -E "zones|free|reclaim|reserved"
			timeout 10 "$CTL" zones "$M" | grep -v legend
			fail "$1 in zones of $2: fill and overwrite (a timeout means a hang)"
		}
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
# Several writers on a device whose users' space is a single zone: each
# holds back what it writes until the old copy is freed. And several on
# small zones, where the best victim is often a zone whose last blocks a
# writer has taken and not yet written.
check_geometry 256M 32M 4 3
check_geometry 128M 4M 3 4
exit 0
