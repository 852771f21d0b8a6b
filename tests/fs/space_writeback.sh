#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# With the kernel's writeback cache (-o writeback_cache) a write() only
# fills the page cache; the data reaches the daemon later, and a failure
# there comes back at close or fsync. On a filesystem left with a few
# blocks free, a file is written at random offsets and truncated, and read
# back after every step: what was written must read back, until a close
# (or a write) says ENOSPC. The kernel takes any count the daemon answers
# its writeback with as all written, so a short count would drop the rest
# of the pages without a word.
. "${srcdir:-.}/tests/fs/lib.sh"
M=$T/mnt
SEEDS=${SPACE_WB_SEEDS:-1 2 3 4}

full=0
for seed in $SEEDS; do
	"$CTL" zloop create "$T/zl$seed" --capacity 96M --zone-size 4M \
		--conv-zones 2 --max-open 6 >/dev/null ||
		fail "smrfsctl zloop create"
	"$MKFS" "$T/zl$seed" >/dev/null || fail "mkfs"
	mount_fs "$T/zl$seed" "$M" writeback_cache
	avail=$(df -k "$M" | awk 'NR == 2 { print $4 }')
	dd if=/dev/zero of="$M/fill" bs=1k count=$((avail - 200)) \
		2>/dev/null || fail "the fill"
	sync
	python3 - "$M/f" "$seed" >"$T/out" 2>&1 <<'EOF' ||
import errno, os, random, sys

p, seed = sys.argv[1], int(sys.argv[2])
r = random.Random(seed)
open(p, "wb").close()
m = bytearray()
for i in range(3000):
    try:
        if r.randrange(3):
            off = r.randrange(len(m) + 65536)
            data = r.randbytes(r.randrange(1, 65536))
            fd = os.open(p, os.O_WRONLY)
            try:
                data = data[:os.pwrite(fd, data, off)]
            finally:
                os.close(fd)
            if data and off > len(m):
                m.extend(bytes(off - len(m)))
            m[off:off + len(data)] = data
        else:
            size = r.randrange(len(m) + 65536)
            os.truncate(p, size)
            del m[size:]
            m.extend(bytes(size - len(m)))
    except OSError as e:
        if e.errno != errno.ENOSPC:
            raise
        print("ENOSPC at step %d" % i)
        break
    # A fresh open reads what the daemon holds (the cache is dropped).
    fd = os.open(p, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        got = b"".join(iter(lambda: os.read(fd, 1 << 20), b""))
    finally:
        os.close(fd)
    if got != m:
        k = next((j for j in range(min(len(got), len(m)))
                  if got[j] != m[j]), min(len(got), len(m)))
        sys.exit("step %d: %d bytes, expected %d, first difference at %d"
                 % (i, len(got), len(m), k))
EOF
		fail "seed $seed: $(cat "$T/out")"
	cat "$T/out"
	grep -q ENOSPC "$T/out" && full=$((full + 1))
	umount_fs "$M"
done
# The point is the writes the space runs out in.
[ "$full" -gt 0 ] || fail "no seed ran out of space"
echo "space_writeback: $full of $(echo $SEEDS | wc -w) seeds ran out of space, nothing lost"
