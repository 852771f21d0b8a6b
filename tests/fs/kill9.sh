#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# kill -9 of the daemon, at random moments of a mixed workload and at each
# named failpoint inside the commit and the cleaner (SMRFS_FAILPOINT, see
# docs/design/failures.md): after every death fsck.smrfs -n finds no error,
# the filesystem mounts again, and every file the workload made durable
# (fsync'd, directory fsync'd) holds what it held then. Every other random
# kill finds the daemon mounted with the kernel's writeback cache, whose
# unwritten pages die with it: what was fsync'd must not.
#
# KILL9_CYCLES sets the number of cycles (default 20, about a minute and a
# half; "make check-kill9" runs 200). KILL9_SEED makes a run repeatable.
# KILL9_DEV runs it on that device instead of a zoned loop directory (made
# afresh with mkfs.smrfs -f): a kernel zoned device in the zoned VM, where
# KILL9_WAIT (seconds, default 0) should put the random kills off until
# the emulated machine has started the workload.
. "${srcdir:-.}/tests/fs/lib.sh"
LOAD="${srcdir:-.}/tests/fs/killload.py"
FSCK=${SMRFS_FSCK:-$B/fsck/fsck.smrfs}
[ -x "$FSCK" ] || skip "$FSCK not built"
CYCLES=${KILL9_CYCLES:-20}
SEED=${KILL9_SEED:-$$}
Z=${KILL9_DEV:-$T/zl}
M=$T/mnt
STATE=$T/state.json

# Small zones, so that the workload makes the cleaner run within a few
# cycles and the cleaner's failpoints are reached.
if [ -z "${KILL9_DEV:-}" ]; then
	"$CTL" zloop create "$Z" --capacity 128M --zone-size 4M \
		--conv-zones 2 --max-open 6 >/dev/null ||
		fail "smrfsctl zloop create"
fi
"$MKFS" -f "$Z" >/dev/null || fail "mkfs"

FAILPOINTS="commit.after_nodes commit.after_flush commit.after_checkpoint
commit.before_reset clean.after_relocate clean.before_commit
clean.before_reset log.after_write"
nfp=$(echo $FAILPOINTS | wc -w)
# A small generator of our own: the same KILL9_SEED gives the same run.
rnd=$SEED
rand() { # rand N: R = 0..N-1 (not in $(...): the state must advance)
	rnd=$(( (rnd * 1103515245 + 12345) % 2147483648 ))
	R=$(( (rnd / 65536) % $1 ))
}

note "seed $SEED, $CYCLES cycles"
random=0 fp_hit=0 fp_missed=0
start=$(date +%s)
c=0
while [ $c -lt "$CYCLES" ]; do
	c=$((c + 1))
	# Every other cycle a failpoint, in turn; the others a random kill.
	fp=""
	if [ $((c % 2)) -eq 0 ]; then
		i=$(( (c / 2 - 1) % nfp + 1 ))
		fp=$(echo $FAILPOINTS | cut -d' ' -f$i)
		# Commits come by the dozen, cleaning seldom.
		case $fp in
		commit.after* | log.*) rand 40 ;;
		*) rand 2 ;;
		esac
		fp="$fp:$((R + 1))"
	fi
	opts=gc_low=6,gc_high=10
	KILLLOAD_EIO_GONE=
	if [ $((c % 4)) -eq 1 ]; then
		opts=$opts,writeback_cache
		KILLLOAD_EIO_GONE=1
	fi
	export KILLLOAD_EIO_GONE
	mount_fs "$Z" "$M" "$opts"
	python3 "$LOAD" verify "$M" "$STATE" >"$T/verify.out" ||
		fail "cycle $c: the check of the durable files after the last kill"
	if [ -n "$fp" ]; then
		# The cleaner may reach its failpoints at once: mount again
		# with it armed only once the check is done.
		umount_fs "$M"
		SMRFS_FAILPOINT=$fp mount_fs "$Z" "$M" gc_low=6,gc_high=10
	fi
	if [ -n "$fp" ]; then
		# Run until the failpoint kills the daemon, 20 s at most.
		python3 "$LOAD" run "$M" "$STATE" "$SEED$c" 20 >"$T/run.out" ||
			fail "cycle $c: workload: $(cat "$T/run.out")"
	else
		python3 "$LOAD" run "$M" "$STATE" "$SEED$c" 30 >"$T/run.out" &
		LOADPID=$!
		rand 30
		sleep "$((${KILL9_WAIT:-0} + R / 10)).$((R % 10))"
	fi
	if kill -0 "$DAEMON" 2>/dev/null; then
		kill -KILL "$DAEMON"
		if [ -n "$fp" ]; then
			fp_missed=$((fp_missed + 1))
		else
			random=$((random + 1))
		fi
	else
		fp_hit=$((fp_hit + 1))
		grep -q "failpoint" "$T/daemon.err" ||
			fail "cycle $c: the daemon died: $(cat "$T/daemon.err")"
	fi
	wait "$DAEMON"
	if [ -z "$fp" ]; then
		wait "$LOADPID" || fail "cycle $c: workload: $(cat "$T/run.out")"
	fi
	fusermount3 -u "$M" 2>/dev/null || fusermount3 -uz "$M" ||
		fail "cycle $c: cannot remove the dead mount"
	echo "cycle $c ${fp:-random} ($opts): $(cat "$T/run.out")"
	"$FSCK" -n "$Z" >"$T/fsck.out" 2>&1 ||
		fail "cycle $c (${fp:-random kill}): fsck.smrfs -n: $(cat "$T/fsck.out")"
done

note "final check"
mount_fs "$Z" "$M"
python3 "$LOAD" verify "$M" "$STATE" || fail "durable data lost"
umount_fs "$M"
"$FSCK" -n "$Z" >"$T/fsck.out" 2>&1 || fail "fsck: $(cat "$T/fsck.out")"
echo "kill9: $CYCLES cycles in $(( $(date +%s) - start )) s: $random random" \
	"kills, $fp_hit at failpoints, $fp_missed failpoints not reached" \
	"(killed at the end instead); $(python3 -c "import json,sys; \
s=json.load(open(sys.argv[1])); print(s['ops'], 'operations,', \
len(s['files']), 'durable files checked after the last')" "$STATE")"
exit 0
