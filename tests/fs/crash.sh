#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# Data that was fsync'd survives kill -9 of the daemon; the filesystem
# mounts again afterwards; SIGTERM commits everything and unmounts.
. "${srcdir:-.}/tests/fs/lib.sh"
OPS="${srcdir:-.}/tests/fs/fsops.py"
Z=$T/zl
M=$T/mnt

make_zloop "$Z"
"$MKFS" "$Z" >/dev/null || fail "mkfs"
mount_fs "$Z" "$M" commit=3600
python3 "$OPS" fsync "$M" || fail "write and fsync"
echo "not synced" >"$M/unsynced"
note "kill -9 the daemon"
kill -KILL "$DAEMON"
wait "$DAEMON"
fusermount3 -u "$M" 2>/dev/null || fusermount3 -uz "$M" ||
	fail "cannot remove the dead mount"
note "remount"
mount_fs "$Z" "$M"
python3 "$OPS" synced "$M" || fail "fsync'd data lost"

note "SIGTERM commits everything and unmounts"
echo "committed at exit" >"$M/at-exit"
kill -TERM "$DAEMON"
wait "$DAEMON"
st=$?
[ $st -eq 0 ] || fail "daemon exit status $st after SIGTERM"
is_mounted "$M" && fail "still mounted after SIGTERM"
mount_fs "$Z" "$M"
[ "$(cat "$M/at-exit")" = "committed at exit" ] ||
	fail "data written before SIGTERM lost"
umount_fs "$M"
exit 0
