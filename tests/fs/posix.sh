#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# The POSIX rules of every system call that changes names, modes, owners
# and times (tests/fs/posix.py), as root and as ordinary users, first on a
# tmpfs as the reference and then on smrfs: whatever passes on the
# reference must pass on smrfs. Then the audit of what the cases left.
. "${srcdir:-.}/tests/fs/lib.sh"
[ "$(id -u)" -eq 0 ] || skip "needs root to switch users and mount tmpfs"
M=$T/mnt
R=$T/ref
# The other users must reach both mounts.
chmod 755 "$T" || fail "chmod scratch"
mkdir -p "$R"
mount -t tmpfs -o size=64M,mode=755 smrfs-posix-ref "$R" ||
	skip "cannot mount a tmpfs as the reference"
CLEANUP_HOOK='umount "$R"'

make_zloop "$T/zl"
"$MKFS" "$T/zl" >/dev/null || fail "mkfs"
# No allow_other: a mount by root lets other users in by default. Then
# the same with the kernel's writeback cache, which sends the times it
# keeps on its own.
for opts in "" writeback_cache; do
	note "mount options: ${opts:-none}"
	mount_fs "$T/zl" "$M" ${opts:+"$opts"}
	chmod 755 "$M" || fail "chmod root"
	POSIX_WRITEBACK=$opts python3 "${srcdir:-.}/tests/fs/posix.py" \
		"$R" "$M" || fail "POSIX rules, mount options: ${opts:-none}"
	umount_fs "$M"
done
exit 0
