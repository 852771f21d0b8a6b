#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# statfs tells the truth at every moment, on a zoned loop directory and on a
# regular file: filled to ENOSPC it says (about) nothing is available; after
# a delete it rises at once, with commits held off, and a writer really gets
# what it says, also when the freed space lies among live data (every other
# file deleted) and must be cleaned to be had.
. "${srcdir:-.}/tests/fs/lib.sh"
M=$T/mnt

# avail: bytes available to a writer on $M, as df computes them.
avail() {
	python3 -c 'import os, sys; v = os.statvfs(sys.argv[1]); print(v.f_bavail * v.f_frsize)' "$M"
}

# fill FILE: write until ENOSPC; print the bytes written.
fill() {
	dd if=/dev/zero of="$1" bs=1M 2>"$T/dd.err"
	grep -q "No space left on device" "$T/dd.err" ||
		fail "dd to $1 ended without ENOSPC: $(cat "$T/dd.err")"
	stat -c %s "$1"
}

check_dev() {
	dev=$1
	mkdir -p "$M"
	# Commits only at the end: what statfs says must not wait for them.
	mount_fs "$dev" "$M" commit=3600
	total=$(avail)
	note "$dev: $total bytes available when empty"

	wrote=$(fill "$M/a")
	left=$(avail)
	note "$dev: wrote $wrote bytes to ENOSPC; statfs then says $left"
	# About nothing: less than 1% of what the empty filesystem offered.
	[ "$left" -lt $((total / 100)) ] ||
		fail "$dev: $left bytes available after ENOSPC"
	[ "$wrote" -ge $((total * 9 / 10)) ] ||
		fail "$dev: only $wrote of $total bytes could be written"

	# An O_DIRECT write larger than what a truncate freed: a short count
	# (or ENOSPC), with what it counts on the file, never EIO.
	python3 - "$M" <<'EOF' || fail "$dev: O_DIRECT write near full"
import errno, mmap, os, sys
m = sys.argv[1]
fd = os.open(os.path.join(m, "a"), os.O_RDWR)
os.ftruncate(fd, os.fstat(fd).st_size - 256 * 1024)
os.close(fd)
fd = os.open(os.path.join(m, "d"), os.O_RDWR | os.O_CREAT | os.O_DIRECT)
size = 1024 * 1024
with mmap.mmap(-1, size) as buf:
    buf[:] = bytes(range(256)) * (size // 256)
    try:
        n = os.pwrite(fd, buf, 0)
    except OSError as e:
        if e.errno != errno.ENOSPC:
            sys.exit("O_DIRECT write of %d bytes: %s" % (size, e))
        n = 0
    want = buf[:n]
os.close(fd)
with open(os.path.join(m, "d"), "rb") as f:
    got = f.read()
if got != want:
    sys.exit("O_DIRECT write returned %d, the file holds %d bytes%s" %
             (n, len(got), "" if len(got) != n else " that differ"))
print("--- O_DIRECT write of %d bytes near full: %d written" % (size, n))
EOF
	rm "$M/a" "$M/d" || fail "rm"
	# The kernel forgets the inode shortly after the unlink. What comes
	# back is what the empty filesystem offered: on a zoned device a
	# writer may go past it into the room the cleaner keeps (statfs says
	# 0 then), but the size statfs reports leaves that room out.
	[ "$wrote" -lt "$total" ] && had=$wrote || had=$total
	i=0
	while back=$(avail) && [ "$back" -lt $((had * 95 / 100)) ]; do
		i=$((i + 1))
		[ $i -le 50 ] || fail "$dev: statfs says $back after freeing $wrote"
		sleep 0.1
	done
	note "$dev: after the delete statfs says $back"

	again=$(fill "$M/b")
	note "$dev: wrote $again bytes again"
	[ "$again" -ge $((back * 95 / 100)) ] ||
		fail "$dev: statfs promised $back bytes, a writer got $again"
	left=$(avail)
	[ "$left" -lt $((total / 100)) ] ||
		fail "$dev: $left bytes available after the second ENOSPC"
	rm "$M/b" || fail "rm"

	# Many files, every other one deleted: the dead space is spread over
	# zones that still hold live data, and a writer gets it only by
	# cleaning; the relocated data then fills part of a zone. Filled to
	# what statfs offers, so that what a delete frees is the writer's.
	python3 - "$M" <<'EOF' || fail "$dev: small files"
import os, sys
m, buf, n = sys.argv[1], os.urandom(256 * 1024), 0
try:
    while True:
        v = os.statvfs(m)
        if v.f_bavail * v.f_frsize < len(buf):
            break
        with open(os.path.join(m, "s%05d" % n), "wb") as f:
            f.write(buf)
        n += 1
except OSError as e:
    if e.errno != 28:
        raise
for k in range(0, n, 2):
    os.unlink(os.path.join(m, "s%05d" % k))
print("%d files, half deleted" % n)
EOF
	sleep 1
	back=$(avail)
	note "$dev: after deleting every other file statfs says $back"
	[ "$back" -ge $((had / 4)) ] ||
		fail "$dev: only $back available after deleting half of $had"
	again=$(fill "$M/c")
	note "$dev: wrote $again bytes again"
	[ "$again" -ge $((back * 95 / 100)) ] ||
		fail "$dev: statfs promised $back bytes, a writer got $again"
	umount_fs "$M"
}

make_zloop "$T/zl"
"$MKFS" "$T/zl" >/dev/null || fail "mkfs zloop"
check_dev "$T/zl"

# Files written 4 KiB at a time to ENOSPC, every other one deleted, then
# filled again 4 KiB at a time: the cleaner moves the survivors while the
# writer goes on, and the writer gets what statfs promised. (The metadata
# of data written in small pieces and then moved grew by an item and a
# reverse-map entry per block, and took 6% of it.)
"$CTL" zloop create "$T/zs" --capacity 256M --zone-size 16M --conv-zones 2 \
	--max-open 6 >/dev/null || fail "smrfsctl zloop create $T/zs"
"$MKFS" "$T/zs" >/dev/null || fail "mkfs $T/zs"
mount_fs "$T/zs" "$M"
python3 - "$M" <<'EOF' || fail "4 KiB writes after deleting every other file"
import os, sys, time
m, blk = sys.argv[1], os.urandom(4096)

def fill(prefix):
    n = i = 0
    try:
        while True:
            fd = os.open(os.path.join(m, "%s%05d" % (prefix, i)),
                         os.O_WRONLY | os.O_CREAT, 0o644)
            try:
                for k in range(256):
                    n += os.write(fd, blk)
            finally:
                os.close(fd)
            i += 1
    except OSError as e:
        if e.errno != 28:
            raise
    return n

had = fill("w")
for name in sorted(os.listdir(m))[::2]:
    os.unlink(os.path.join(m, name))
time.sleep(1)
v = os.statvfs(m)
back = v.f_bavail * v.f_frsize
again = fill("v")
print("--- 4 KiB writes: %d bytes, every other file deleted; statfs then "
      "said %d, a writer got %d" % (had, back, again))
if again < back * 97 // 100:
    sys.exit("statfs promised %d bytes, a writer got %d" % (back, again))
EOF
umount_fs "$M"

truncate -s 256M "$T/img" || fail "truncate"
"$MKFS" "$T/img" >/dev/null || fail "mkfs file"
check_dev "$T/img"
exit 0
