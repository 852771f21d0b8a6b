#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# umount.smrfs (what umount(8) runs, as umount.fuse.smrfs): it returns only
# once the daemon has written its last commit, exited and let go of the
# device, so a check or a copy of the device right after it sees
# everything; -r remounts a busy filesystem read-only; -l detaches at once
# and does not wait; a stopped daemon does not hold it up; it unmounts
# nothing but an smrfs.
. "${srcdir:-.}/tests/fs/lib.sh"
M=$T/mnt
Z=$T/zl

make_zloop "$Z"
"$MKFS" "$Z" >/dev/null || fail "mkfs"

note "the last commit is on the device when it returns"
# commit=600: nothing of this is committed before the unmount. The daemon
# stops itself after the unmount, before its last commit, until continued.
export SMRFS_FAILPOINT=daemon.before_close:stop
mount_fs "$Z" "$M" commit=600
unset SMRFS_FAILPOINT
head -c 3000000 /dev/urandom >"$T/data"
mkdir "$M/d" || fail "mkdir"
i=0
while [ $i -lt 400 ]; do
	echo "$i" >"$M/d/f$i" || fail "create f$i"
	i=$((i + 1))
done
cp "$T/data" "$M/data" || fail "write data"
# The note that makes root's umount(8) run umount.smrfs (see posix_tools.sh).
if [ "$(id -u)" = 0 ]; then
	grep -q "TARGET=$M .*helper=smrfs" "$UTAB" ||
		fail "no helper=smrfs for $M in $UTAB"
fi
"$UMOUNT" -v "$M" >"$T/out" 2>&1 &
U=$!
i=0
until grep -q '^[0-9]* (.*) T' "/proc/$DAEMON/stat" 2>/dev/null; do
	i=$((i + 1))
	[ $i -le 200 ] || fail "the daemon did not reach its last commit"
	sleep 0.1
done
sleep 0.5
! exited "$U" || fail "umount.smrfs returned before the last commit"
! flock -n "$Z" true || fail "the device is free before the last commit"
kill -CONT "$DAEMON"
wait "$U" || fail "umount.smrfs: $(cat "$T/out")"
exited "$DAEMON" || fail "the daemon still runs after umount.smrfs"
flock -n "$Z" true || fail "the device is still held after umount.smrfs"
grep -q "waiting for its daemon" "$T/out" ||
	fail "umount.smrfs -v did not wait: $(cat "$T/out")"
! is_mounted "$M" || fail "still mounted"
! grep -qs "TARGET=$M " "$UTAB" || fail "the note outlived the mount"
wait "$DAEMON" || fail "the daemon's exit status"
"$AUDIT" "$Z" || fail "audit after umount.smrfs"
mount_fs "$Z" "$M" ro
cmp "$T/data" "$M/data" || fail "data after the unmount"
[ "$(cat "$M/d/f399")" = 399 ] || fail "d/f399 after the unmount"
"$UMOUNT" "$M" || fail "umount.smrfs of a read-only mount"
wait "$DAEMON" || fail "the daemon's exit status (ro)"

note "busy: refused, or remounted read-only with -r"
mount_fs "$Z" "$M"
exec 3<"$M/data"
expect_fail "umount.smrfs of a busy filesystem" "$UMOUNT" "$M"
is_mounted "$M" || fail "a busy filesystem was unmounted"
exec 4>>"$M/data"
expect_fail "umount.smrfs -r with a file open for writing" "$UMOUNT" -r "$M"
exec 4>&-
"$UMOUNT" -r "$M" >"$T/out" 2>&1 || fail "umount.smrfs -r: $(cat "$T/out")"
awk -v m="$M" '$2 == m { print $4 }' /proc/self/mounts | grep -q '^ro,' ||
	fail "not read-only after umount.smrfs -r"
"$CTL" stat --json "$M" | grep -q '"read_only": true' ||
	fail "the daemon is not read-only after umount.smrfs -r"
exec 3<&-
"$UMOUNT" "$M" || fail "umount.smrfs once no longer busy"
wait "$DAEMON" || fail "the daemon's exit status (-r)"

note "-l detaches at once; the daemon ends when the last file closes"
mount_fs "$Z" "$M"
exec 3<"$M/data"
"$UMOUNT" -l "$M" || fail "umount.smrfs -l"
! is_mounted "$M" || fail "still mounted after -l"
sleep 0.3
! exited "$DAEMON" || fail "the daemon ended while a file was open"
exec 3<&-
wait_gone "$DAEMON" || fail "the daemon runs on after -l"
wait "$DAEMON" || fail "the daemon's exit status (-l)"

note "a daemon that does not answer: unmounted, not waited for"
mount_fs "$Z" "$M"
echo held >"$M/held" || fail "write held"
kill -STOP "$DAEMON"
# (timeout: a helper that hangs fails the test instead of hanging it.)
timeout 60 "$UMOUNT" -v "$M" >"$T/out" 2>&1 ||
	{ kill -CONT "$DAEMON"; fail "umount.smrfs, daemon stopped: $(cat "$T/out")"; }
grep -q "does not answer" "$T/out" ||
	{ kill -CONT "$DAEMON"; fail "a stopped daemon waited for: $(cat "$T/out")"; }
! is_mounted "$M" || fail "still mounted (daemon stopped)"
kill -CONT "$DAEMON"
wait "$DAEMON" || fail "the stopped daemon's exit status"
"$AUDIT" "$Z" || fail "audit after the stopped daemon's unmount"

note "only an smrfs, and only a mounted one"
status=0
"$UMOUNT" "$M" 2>"$T/err" || status=$?
[ $status -eq 32 ] || fail "not mounted: status $status"
grep -q "not mounted" "$T/err" || fail "not mounted: $(cat "$T/err")"
status=0
"$UMOUNT" -t ext4 "$M" 2>"$T/err" || status=$?
[ $status -eq 1 ] || fail "-t ext4: status $status"
if [ "$(id -u)" = 0 ]; then
	mkdir "$T/tmpfs"
	mount -t tmpfs tmpfs "$T/tmpfs" || fail "mount a tmpfs"
	MOUNTS="$MOUNTS $T/tmpfs"
	CLEANUP_HOOK='umount "$T/tmpfs" 2>/dev/null'
	status=0
	"$UMOUNT" "$T/tmpfs" 2>"$T/err" || status=$?
	is_mounted "$T/tmpfs" || fail "umount.smrfs unmounted a tmpfs"
	[ $status -eq 32 ] || fail "tmpfs: status $status"
	umount "$T/tmpfs" || fail "umount the tmpfs"
fi
"$UMOUNT" --help | grep -q "^Usage: umount.smrfs" || fail "--help"
exit 0
