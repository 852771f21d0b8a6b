# SPDX-License-Identifier: GPL-2.0-or-later
# lib.sh - what the shell integration tests share: finding the programs,
# skipping (exit 77) where FUSE is not usable, a scratch directory, and
# mounting with a cleanup that unmounts everything and stops every daemon
# the test started, even when the test fails. With SMRFS_TEST_KEEP=DIR, a
# failed test's scratch directory (its devices and logs) is moved into DIR.
#
# Tests run from the build directory (automake's test harness does so);
# SMRFS_BUILDDIR overrides it.

set -u

B=${SMRFS_BUILDDIR:-${top_builddir:-.}}
MKFS=${SMRFS_MKFS:-$B/mkfs/mkfs.smrfs}
MOUNT=${SMRFS_MOUNT:-$B/src/fuse/mount.smrfs}
UMOUNT=${SMRFS_UMOUNT:-$B/src/fuse/umount.smrfs}
CTL=${SMRFS_CTL:-$B/ctl/smrfsctl}
AUDIT=${SMRFS_AUDIT:-$B/tests/fs/ns_audit}
# libmount's table where a daemon run as root notes its mount for umount(8)
# (make check points it into the build tree).
UTAB=${LIBMOUNT_UTAB:-/run/mount/utab}

skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*" >&2; exit 1; }
note() { echo "--- $*"; }

[ -x "$MKFS" ] || skip "$MKFS not built"
[ -x "$MOUNT" ] || skip "$MOUNT not built"
[ -x "$UMOUNT" ] || skip "$UMOUNT not built"
[ -x "$CTL" ] || skip "$CTL not built"
[ -x "$AUDIT" ] || skip "$AUDIT not built"
[ -c /dev/fuse ] || skip "no /dev/fuse"
[ -r /dev/fuse ] && [ -w /dev/fuse ] || skip "/dev/fuse not usable by $(id -un)"
command -v fusermount3 >/dev/null || skip "no fusermount3"
command -v python3 >/dev/null || skip "no python3"

T=$(mktemp -d "${TMPDIR:-/tmp}/smrfs-fs.XXXXXX") || fail "mktemp"
MOUNTS=""
PIDS=""
# A command prefix that runs the daemon as another user (user_mount.sh).
RUNAS=""
# The device of the last mount_fs.
DEVICE=""
# Extra cleanup a test needs (evaluated first).
CLEANUP_HOOK=""

# Is something mounted at $1? (From the mount table: stat(2) of another
# user's FUSE mount fails even for root.)
is_mounted() {
	awk -v m="$1" '$2 == m { found = 1 } END { exit !found }' /proc/self/mounts
}

cleanup() {
	rc=$?
	[ -z "$CLEANUP_HOOK" ] || eval "$CLEANUP_HOOK"
	for m in $MOUNTS; do
		if is_mounted "$m"; then
			fusermount3 -u "$m" 2>/dev/null || fusermount3 -uz "$m"
		fi
	done
	for p in $PIDS; do
		if kill -0 "$p" 2>/dev/null; then
			# (One a test held stopped takes the signal once continued.)
			kill -TERM "$p" 2>/dev/null
			kill -CONT "$p" 2>/dev/null
			wait_gone "$p" || kill -KILL "$p" 2>/dev/null
		fi
	done
	if [ $rc -ne 0 ] && [ $rc -ne 77 ] && [ -n "${SMRFS_TEST_KEEP:-}" ] &&
		mkdir -p "$SMRFS_TEST_KEEP" && mv "$T" "$SMRFS_TEST_KEEP/"; then
		echo "kept $SMRFS_TEST_KEEP/${T##*/}" >&2
	else
		rm -rf "$T"
	fi
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# The process $1 has exited (a zombie, until waited for, has too).
exited() {
	! kill -0 "$1" 2>/dev/null ||
		grep -q '^[0-9]* (.*) Z' "/proc/$1/stat" 2>/dev/null
}

# Wait (up to 20 s) for a process of ours to exit.
wait_gone() {
	i=0
	until exited "$1"; do
		i=$((i + 1))
		[ $i -le 200 ] || return 1
		sleep 0.1
	done
	return 0
}

# make_zloop DIR: a small zoned loop directory (8 x 32 MiB zones, 2 of them
# conventional, at most 6 open).
make_zloop() {
	"$CTL" zloop create "$1" --capacity 256M --zone-size 32M \
		--conv-zones 2 --max-open 6 >/dev/null ||
		fail "smrfsctl zloop create $1"
}

# make_fs KIND IMG: a fresh filesystem on a zoned loop directory (zl, as
# make_zloop makes it) or on a regular file of 256 MiB (file).
make_fs() {
	if [ "$1" = zl ]; then
		make_zloop "$2"
	else
		truncate -s 256M "$2" || fail "truncate $2"
	fi
	"$MKFS" "$2" >/dev/null || fail "mkfs $1 $2"
}

# mount_fs DEV MNT [OPTS]: start the daemon in the foreground (so that we
# know its pid, in $DAEMON), and wait until the mount is there.
mount_fs() {
	DEVICE=$1
	mkdir -p "$2"
	if [ $# -ge 3 ]; then
		$RUNAS "$MOUNT" "$1" "$2" -f -o "$3" 2>"$T/daemon.err" &
	else
		$RUNAS "$MOUNT" "$1" "$2" -f 2>"$T/daemon.err" &
	fi
	DAEMON=$!
	PIDS="$PIDS $DAEMON"
	MOUNTS="$MOUNTS $2"
	i=0
	until is_mounted "$2"; do
		kill -0 "$DAEMON" 2>/dev/null ||
			fail "mount.smrfs $1 exited: $(cat "$T/daemon.err")"
		i=$((i + 1))
		[ $i -le 200 ] || fail "mount of $1 did not appear"
		sleep 0.1
	done
}

# umount_fs MNT: unmount, check that the daemon exits with status 0, and
# audit the namespace it left on the device.
umount_fs() {
	fusermount3 -u "$1" || fail "fusermount3 -u $1: $(cat "$T/daemon.err")"
	wait "$DAEMON"
	st=$?
	[ $st -eq 0 ] || fail "mount.smrfs exited with $st: $(cat "$T/daemon.err")"
	[ -z "$DEVICE" ] || "$AUDIT" "$DEVICE" ||
		fail "namespace audit of $DEVICE after unmount"
}

# python_for PREFIX...: set $PY to a python3 that the command PREFIX (say
# setpriv --reuid=...) can run, or skip.
python_for() {
	PY=""
	for p in python3 /usr/bin/python3; do
		if "$@" $p -c "" 2>/dev/null; then
			PY=$p
			return 0
		fi
	done
	skip "no python3 that $* can run"
}

# expect_fail WHAT CMD...: CMD must exit non-zero.
expect_fail() {
	what=$1
	shift
	if "$@" >"$T/out" 2>&1; then
		fail "$what: succeeded but should not have"
	fi
}
