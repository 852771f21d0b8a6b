#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# Short crash workloads in the manner of CrashMonkey/ACE (tests/fs/ace.py):
# one to three operations on a small file set and fsync or fdatasync of a
# file or a directory, then kill -9 of the daemon as soon as the call
# returns; fsck.smrfs -n of the crashed device, a remount, and a check that
# what fsync promised is there (with a long commit interval, so that only
# fsync makes anything durable). Where the daemon has an fsync mode that
# commits everything, the whole workload directory must be exactly as it
# was at the kill; every mode the daemon offers is run, and the log mode
# again with the kernel's writeback cache, which keeps written data in the
# kernel until fsync, or the kernel's own writeback, sends it.
#
# ACE_COUNT workloads per mode (default 100), ACE_SEED (default 1); a long
# run: ACE_COUNT=2000 ACE_SEED=$RANDOM.
. "${srcdir:-.}/tests/fs/lib.sh"
ACE="${srcdir:-.}/tests/fs/ace.py"
FSCK=${SMRFS_FSCK:-$B/fsck/fsck.smrfs}
[ -x "$FSCK" ] || skip "$FSCK not built"
COUNT=${ACE_COUNT:-100}
SEED=${ACE_SEED:-1}
M=$T/mnt
mkdir -p "$M"
# ace.py runs the daemons itself; whatever it leaves on a failure goes.
CLEANUP_HOOK='is_mounted "$M" && fusermount3 -uz "$M"'

# run OPTS [--exact]: a fresh device, then the workloads.
run() {
	rm -rf "$T/zl"
	make_zloop "$T/zl"
	"$MKFS" "$T/zl" >/dev/null || fail "mkfs"
	python3 "$ACE" --mount "$MOUNT" --fsck "$FSCK" -o "$1" \
		--seed "$SEED" --count "$COUNT" ${2:-} "$T/zl" "$M" ||
		fail "crash workloads with -o $1"
}

if "$MOUNT" --help 2>&1 | grep -q "fsync="; then
	note "fsync=commit: fsync commits everything"
	run commit=3600,fsync=commit --exact
	note "fsync=log: the remounts must replay records"
	run commit=3600,fsync=log --want-replays
	note "writeback_cache: fsync must send what the kernel holds"
	run commit=3600,fsync=log,writeback_cache --want-replays
else
	note "fsync commits everything"
	run commit=3600 --exact
fi
exit 0
