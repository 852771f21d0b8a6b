#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# Several processes at once create, rename, link, unlink, write, truncate,
# punch and set xattrs on the same names (tests/fs/fsstress.py), on a zoned
# loop directory small enough that the cleaner runs and on a plain file:
# no error a race cannot explain, no hang, the files each process models
# hold what it wrote, fsck.smrfs -n finds nothing after the unmount, and
# after the remount everything reads. Then kill -9 of the daemon under the
# same load, a few times: after each death fsck.smrfs -n finds nothing and
# everything reads after the remount. The zoned device is run twice, the
# second time with the kernel's writeback cache.
#
# FSSTRESS_PROCS processes (default 4) of FSSTRESS_OPS operations (default
# 1500) for each seed of FSSTRESS_SEEDS (default 1), FSSTRESS_KILLS deaths
# (default 3), FSSTRESS_MOUNT_OPTS more mount options for every mount; a
# long run: FSSTRESS_PROCS=8 FSSTRESS_OPS=20000 FSSTRESS_SEEDS="$(seq 4)"
# FSSTRESS_KILLS=20.
. "${srcdir:-.}/tests/fs/lib.sh"
STRESS="${srcdir:-.}/tests/fs/fsstress.py"
FSCK=${SMRFS_FSCK:-$B/fsck/fsck.smrfs}
[ -x "$FSCK" ] || skip "$FSCK not built"
PROCS=${FSSTRESS_PROCS:-4}
OPS=${FSSTRESS_OPS:-1500}
SEEDS=${FSSTRESS_SEEDS:-1}
KILLS=${FSSTRESS_KILLS:-3}
MORE=${FSSTRESS_MOUNT_OPTS:+,$FSSTRESS_MOUNT_OPTS}
M=$T/mnt

fsck_clean() {
	"$FSCK" -n "$1" >"$T/fsck.out" 2>&1 ||
		fail "fsck.smrfs -n $1 ($2): $(cat "$T/fsck.out")"
}

run() { # run DEVICE OPTS
	for seed in $SEEDS; do
		mount_fs "$1" "$M" "$2"
		python3 "$STRESS" run -p "$PROCS" -n "$OPS" -s "$seed" \
			"$M/s$seed" >"$T/stress.out" 2>&1 ||
			fail "seed $seed on $1: $(cat "$T/stress.out")"
		cut -c1-200 "$T/stress.out"
		python3 "$STRESS" walk "$M/s$seed" ||
			fail "walk after seed $seed"
		umount_fs "$M"
		fsck_clean "$1" "after seed $seed"
		mount_fs "$1" "$M" "$2"
		python3 "$STRESS" walk "$M/s$seed" ||
			fail "walk after the remount, seed $seed"
		umount_fs "$M"
	done
}

# kills DEVICE OPTS: kill -9 of the daemon under the load, KILLS times.
kills() {
	k=0
	while [ $k -lt "$KILLS" ]; do
		k=$((k + 1))
		mount_fs "$1" "$M" "$2"
		python3 "$STRESS" walk "$M/k" >"$T/walk.out" 2>&1 ||
			fail "kill $k: walk after the remount: $(cat "$T/walk.out")"
		python3 "$STRESS" run --lenient --secs 30 -p "$PROCS" \
			-n 1000000 -s "$k" "$M/k" >"$T/stress.out" 2>&1 &
		load=$!
		sleep "$((1 + k % 3)).$((k * 7 % 10))"
		kill -KILL "$DAEMON"
		wait "$DAEMON"
		wait "$load" || fail "kill $k: the load: $(cat "$T/stress.out")"
		fusermount3 -u "$M" 2>/dev/null || fusermount3 -uz "$M" ||
			fail "kill $k: cannot remove the dead mount"
		fsck_clean "$1" "after kill $k"
	done
	mount_fs "$1" "$M" "$2"
	python3 "$STRESS" walk "$M/k" || fail "walk after the last kill"
	umount_fs "$M"
	fsck_clean "$1" "at the end"
}

note "zoned, 4 MiB zones, the cleaner kept busy"
"$CTL" zloop create "$T/zl" --capacity 96M --zone-size 4M --conv-zones 2 \
	--max-open 6 >/dev/null || fail "smrfsctl zloop create"
"$MKFS" "$T/zl" >/dev/null || fail "mkfs zoned"
run "$T/zl" gc_low=8,gc_high=12$MORE
kills "$T/zl" gc_low=8,gc_high=12$MORE

note "zoned, with the kernel's writeback cache"
"$CTL" zloop create "$T/zlw" --capacity 96M --zone-size 4M --conv-zones 2 \
	--max-open 6 >/dev/null || fail "smrfsctl zloop create"
"$MKFS" "$T/zlw" >/dev/null || fail "mkfs zoned"
run "$T/zlw" gc_low=8,gc_high=12,writeback_cache$MORE
kills "$T/zlw" gc_low=8,gc_high=12,writeback_cache$MORE

note "a plain file"
truncate -s 128M "$T/img" || fail "truncate"
"$MKFS" "$T/img" >/dev/null || fail "mkfs file"
run "$T/img" commit=5$MORE
kills "$T/img" commit=5$MORE
exit 0
