#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# mkfs and mount a regular file; use it, remount it, find everything; mkfs
# refuses a file that holds another filesystem unless -f.
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
umount_fs "$M"

note "remount"
mount_fs "$IMG" "$M"
python3 "$OPS" verify "$M" || fail "verify after remount"
umount_fs "$M"
exit 0
