#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# Random file operations checked byte for byte against a model
# (tests/fs/fsx.py: writes past the end, truncates, fallocate, mmap,
# copy_file_range, fsync, reopen, SEEK_DATA/SEEK_HOLE, O_DIRECT reads and
# writes mixed with the rest as fsx -Z does), on a zoned loop
# directory with zones small enough that the cleaner moves the files while
# the run goes on (also with the kernel's writeback cache), and on a plain
# file. Then unmount, fsck.smrfs -n,
# remount: the files must still be what the model says.
#
# FSX_OPS operations per seed (default 2500), FSX_SEEDS the seeds (default
# "1 2"); a long run: FSX_OPS=100000 FSX_SEEDS="$(seq 10)".
. "${srcdir:-.}/tests/fs/lib.sh"
FSX="${srcdir:-.}/tests/fs/fsx.py"
FSCK=${SMRFS_FSCK:-$B/fsck/fsck.smrfs}
[ -x "$FSCK" ] || skip "$FSCK not built"
OPS=${FSX_OPS:-2500}
SEEDS=${FSX_SEEDS:-1 2}
M=$T/mnt

# Punching holes and zeroing ranges are honoured; preallocation (keep size, mode 0) must be
# refused, not faked. A run of a few hundred operations tries every mode.
check_falloc() {
	[ "$OPS" -ge 500 ] || return 0
	unsup=$(sed -n 's/.*not supported: //p' "$T/fsx.out")
	case ", $unsup," in
	*" punch,"* | *" zero,"* | *" zero-keep,"*)
		fail "fallocate punch hole or zero range refused" ;;
	esac
	case ", $unsup," in
	*" extend,"*" keep,"*) ;;
	*) fail "preallocation not refused (not supported: $unsup)" ;;
	esac
}

run() { # run DEVICE OPTS: every seed, then the check after a remount
	for seed in $SEEDS; do
		mount_fs "$1" "$M" "$2"
		mkdir -p "$M/s$seed" || fail "mkdir"
		python3 "$FSX" --direct --ops "$OPS" --seed "$seed" "$M/s$seed" \
			>"$T/fsx.out" || fail "fsx seed $seed on $1"
		cat "$T/fsx.out"
		check_falloc
		umount_fs "$M"
		"$FSCK" -n "$1" >"$T/fsck.out" 2>&1 ||
			fail "fsck.smrfs -n $1: $(cat "$T/fsck.out")"
		mount_fs "$1" "$M" "$2"
		python3 "$FSX" --verify "$M/s$seed" || fail "after the remount"
		umount_fs "$M"
	done
}

note "zoned, 4 MiB zones, the cleaner kept busy"
"$CTL" zloop create "$T/zl" --capacity 64M --zone-size 4M --conv-zones 2 \
	--max-open 6 >/dev/null || fail "smrfsctl zloop create"
"$MKFS" "$T/zl" >/dev/null || fail "mkfs zoned"
run "$T/zl" gc_low=8,gc_high=12
"$CTL" stat "$T/zl" >"$T/stat" || fail "smrfsctl stat"
grep -E "relocated|zones reset|cleaner" "$T/stat" || true

note "zoned, with the kernel's writeback cache"
"$CTL" zloop create "$T/zlw" --capacity 64M --zone-size 4M --conv-zones 2 \
	--max-open 6 >/dev/null || fail "smrfsctl zloop create"
"$MKFS" "$T/zlw" >/dev/null || fail "mkfs zoned"
run "$T/zlw" gc_low=8,gc_high=12,writeback_cache

note "a plain file"
truncate -s 128M "$T/img" || fail "truncate"
"$MKFS" "$T/img" >/dev/null || fail "mkfs file"
run "$T/img" commit=5
