#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# mkfs and mount a regular file; use it, copy a tree in, write from several
# processes at once, remount it, find everything; mkfs refuses a file that
# holds another filesystem unless -f.
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
exit 0
