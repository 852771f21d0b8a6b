#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# A device and a mount point given as relative paths, the daemon in the
# background (it changes to /): the mount table names the device by its
# absolute path, and SIGTERM and SIGINT commit, unmount and exit, leaving
# no dead mount behind, also when a shell started the mount in the
# background (SIGINT ignored), and nothing is lost when it started with
# stdin, stdout and stderr closed. Relative paths that do not exist get
# one line. A device path with a comma and a backslash mounts and is
# named whole.
. "${srcdir:-.}/tests/fs/lib.sh"
OPS="${srcdir:-.}/tests/fs/fsops.py"
# Names unique to this run: the daemon is found by its arguments.
Z=zl.$$
M=mnt.$$

make_zloop "$T/$Z"
mkdir -p "$T/$M"
# The programs by absolute path (the build directory may be relative), then
# work from $T.
for v in MOUNT MKFS AUDIT OPS CTL; do
	eval "p=\$$v"
	eval "$v=\$(cd \"\$(dirname \"\$p\")\" && pwd)/\$(basename \"\$p\")" ||
		fail "no directory for $p"
done
cd "$T" || fail "cd $T"

# The pid of the background daemon started as "$MOUNT $Z $M -o commit=600".
daemon_pid() {
	for d in /proc/[0-9]*; do
		[ "$(tr '\0' ' ' 2>/dev/null <"$d/cmdline")" = \
			"$MOUNT $Z $M -o commit=600 " ] &&
			echo "${d#/proc/}" && return 0
	done
	return 1
}

note "relative paths that do not exist"
expect_fail "missing relative device" "$MOUNT" nothing.$$ "$M"
grep -qi "no such" "$T/out" || fail "missing device message: $(cat "$T/out")"
[ "$(wc -l <"$T/out")" -eq 1 ] || fail "more than one line: $(cat "$T/out")"
expect_fail "missing relative mount point" "$MOUNT" "$Z" nodir.$$
grep -qi "no such" "$T/out" || fail "missing mount point: $(cat "$T/out")"
[ "$(wc -l <"$T/out")" -eq 1 ] || fail "more than one line: $(cat "$T/out")"

for sig in TERM INT; do
	note "relative paths, background daemon, SIG$sig"
	"$MKFS" -f "$T/$Z" >/dev/null || fail "mkfs"
	# As a shell's background job, which starts with SIGINT ignored.
	"$MOUNT" "$Z" "$M" -o commit=600 &
	wait $! || fail "background mount"
	MOUNTS="$MOUNTS $T/$M"
	pid=$(daemon_pid) || fail "the daemon is not running"
	PIDS="$PIDS $pid"
	is_mounted "$T/$M" || fail "not mounted when the helper returned"
	src=$(awk -v m="$T/$M" '$2 == m { print $1 }' /proc/self/mounts)
	[ "$src" = "$T/$Z" ] || fail "mount table names the device '$src'"
	python3 "$OPS" ops "$M" >/dev/null || fail "operations"
	kill -"$sig" "$pid" || fail "kill -$sig"
	wait_gone "$pid" || fail "the daemon did not exit on SIG$sig"
	is_mounted "$T/$M" && fail "SIG$sig left a mount behind: $(
		grep " $T/$M " /proc/self/mounts)"
	# What only the exit's commit wrote (commit=600) is on the device.
	mount_fs "$T/$Z" "$T/$M"
	python3 "$OPS" verify "$T/$M" || fail "verify after SIG$sig"
	umount_fs "$T/$M"
done

# Closed, 0, 1 and 2 would go to the first files the daemon opens (the
# device's), which it then points at /dev/null when it detaches.
note "background daemon started with stdin, stdout and stderr closed"
"$MKFS" -f "$T/$Z" >/dev/null || fail "mkfs"
"$MOUNT" "$Z" "$M" -o commit=600 <&- >&- 2>&- || fail "mount, stdio closed"
MOUNTS="$MOUNTS $T/$M"
pid=$(daemon_pid) || fail "the daemon is not running"
PIDS="$PIDS $pid"
python3 "$OPS" ops "$M" >/dev/null || fail "operations, stdio closed"
fusermount3 -u "$T/$M" || fail "unmount"
wait_gone "$pid" || fail "the daemon did not exit after the unmount"
mount_fs "$T/$Z" "$T/$M"
python3 "$OPS" verify "$T/$M" || fail "verify after a mount with stdio closed"
umount_fs "$T/$M"

# libfuse splits its options at commas and takes backslashes as escapes:
# the device's path, the default name in the mount table, must get there
# whole.
note "a device path with a comma and a backslash"
Y="$T/z,l\\x.$$"
make_zloop "$Y"
"$MKFS" "$Y" >/dev/null || fail "mkfs of $Y"
mount_fs "$Y" "$T/$M"
# (The table writes a backslash as \134.)
src=$(awk -v m="$T/$M" '$2 == m { print $1 }' /proc/self/mounts)
want=$(printf '%s\n' "$Y" | sed 's/\\/\\134/g')
[ "$src" = "$want" ] || fail "mount table names the device '$src', not '$want'"
python3 "$OPS" ops "$T/$M" >/dev/null || fail "operations, odd path"
umount_fs "$T/$M"
exit 0
