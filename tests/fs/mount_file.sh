#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# mkfs and mount a regular file; use it, copy a tree in, write from several
# processes at once, remount it, find everything; mkfs refuses a file that
# holds another filesystem unless -f; the allocator named at mount
# (alloc=) reads what the one named at mkfs wrote.
. "${srcdir:-.}/tests/fs/lib.sh"
OPS="${srcdir:-.}/tests/fs/fsops.py"
IMG=$T/img
M=$T/mnt

truncate -s 256M "$IMG" || fail "truncate"
if command -v mkfs.ext4 >/dev/null; then
	note "mkfs refuses an ext4 image"
	mkfs.ext4 -q -F "$IMG" >/dev/null 2>&1 || fail "mkfs.ext4"
	expect_fail "mkfs over ext4" "$MKFS" "$IMG"
	grep -q "ext4" "$T/out" || fail "refusal names ext4: $(cat "$T/out")"
	"$MKFS" -f "$IMG" >/dev/null || fail "mkfs -f over ext4"
else
	"$MKFS" "$IMG" >/dev/null || fail "mkfs"
fi

note "mount and use"
mount_fs "$IMG" "$M"
python3 "$OPS" ops "$M" || fail "operations"

note "a source tree copied in with cp -a compares equal"
SRC=${srcdir:-.}/src
cp -a "$SRC" "$M/tree" || fail "cp -a"
diff -r "$SRC" "$M/tree" >/dev/null || fail "diff -r of the copied tree"

note "four writers at once"
for i in 1 2 3 4; do
	head -c $((3 * 1024 * 1024 + i * 1000)) /dev/urandom >"$T/rnd$i"
done
writers=""
for i in 1 2 3 4; do
	cp "$T/rnd$i" "$M/par$i" &
	writers="$writers $!"
done
for w in $writers; do
	wait "$w" || fail "a parallel cp failed"
done
for i in 1 2 3 4; do
	cmp "$T/rnd$i" "$M/par$i" || fail "parallel writer $i"
done
umount_fs "$M"

note "remount"
mount_fs "$IMG" "$M"
python3 "$OPS" verify "$M" || fail "verify after remount"
diff -r "$SRC" "$M/tree" >/dev/null || fail "copied tree after remount"
for i in 1 2 3 4; do
	cmp "$T/rnd$i" "$M/par$i" || fail "parallel file $i after remount"
done
rm -r "$M/tree" || fail "rm -r"
umount_fs "$M"
grep -q "mounted on" "$T/daemon.err" ||
	fail "no mount line logged: $(cat "$T/daemon.err")"

note "log=error: no line but errors"
mount_fs "$IMG" "$M" log=error
python3 "$OPS" verify "$M" || fail "verify with log=error"
umount_fs "$M"
[ ! -s "$T/daemon.err" ] || fail "log=error logged: $(cat "$T/daemon.err")"

# A loop device has 512-byte sectors, so mkfs makes 512-byte blocks on it;
# its backing file (4096 by default) mounts at the filesystem's block size.
note "made on a 512-byte-sector block device, mounted from its file"
FSCK=${SMRFS_FSCK:-$B/fsck/fsck.smrfs}
truncate -s 64M "$T/lo.img" || fail "truncate"
LOOP=""
if command -v losetup >/dev/null &&
	LOOP=$(losetup -f --show "$T/lo.img" 2>/dev/null); then
	CLEANUP_HOOK='[ -z "$LOOP" ] || losetup -d "$LOOP"'
	"$MKFS" "$LOOP" >"$T/out" 2>&1 || fail "mkfs $LOOP: $(cat "$T/out")"
	if grep -q "block size 512" "$T/out"; then
		mount_fs "$LOOP" "$M"
		cp "$T/rnd1" "$M/f" || fail "cp onto $LOOP"
		umount_fs "$M"
		losetup -d "$LOOP" || fail "losetup -d"
		LOOP=""
		mount_fs "$T/lo.img" "$M"
		cmp "$T/rnd1" "$M/f" || fail "the file through the image"
		cp "$T/rnd2" "$M/g" || fail "cp onto the image"
		umount_fs "$M"
		if [ -x "$FSCK" ]; then
			"$FSCK" -n "$T/lo.img" >"$T/out" 2>&1 ||
				fail "fsck.smrfs -n: $(cat "$T/out")"
		fi
	else
		note "skipped: $LOOP does not have 512-byte sectors"
	fi
else
	note "skipped: no loop device"
fi

note "alloc= switches between rotational and flash, both ways"
# Followed by other options, as in an fstab line.
mount_fs "$IMG" "$M" alloc=rotational,commit=5
cmp "$T/rnd1" "$M/par1" || fail "a file read with alloc=rotational"
cp "$T/rnd3" "$M/rot" || fail "cp with alloc=rotational"
umount_fs "$M"
mount_fs "$IMG" "$M"
cmp "$T/rnd3" "$M/rot" || fail "what alloc=rotational wrote, read back"
umount_fs "$M"
if [ -x "$FSCK" ]; then
	"$FSCK" -n "$IMG" >"$T/out" 2>&1 ||
		fail "fsck.smrfs -n after alloc=rotational: $(cat "$T/out")"
fi

note "an smrfs of another size is refused as such"
truncate -s 64M "$T/grown.img" || fail "truncate"
"$MKFS" "$T/grown.img" >/dev/null || fail "mkfs"
truncate -s 96M "$T/grown.img" || fail "truncate"
expect_fail "mount of a grown image" "$MOUNT" "$T/grown.img" "$M" -f
grep -q "made for another device" "$T/out" || fail "message: $(cat "$T/out")"
[ "$(wc -l <"$T/out")" -eq 1 ] || fail "not one line: $(cat "$T/out")"
exit 0
