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
# No allow_other: a mount by root lets other users in by default.
mount_fs "$T/zl" "$M"
chmod 755 "$M" || fail "chmod root"
python3 "${srcdir:-.}/tests/fs/posix.py" "$R" "$M" || fail "POSIX rules"
umount_fs "$M"
exit 0
