#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# The guest half of bench/zoned-compare.sh: runs inside the zoned VM, from
# the build directory, on $ZONED_DEV. For each filesystem (smrfs, f2fs,
# btrfs) and each workload it makes a fresh filesystem, mounts it, runs the
# workload, unmounts it, and prints one line
#
#   RESULT fs workload seconds user_bytes device_bytes [smrfs_user smrfs_dev
#          smrfs_relocated smrfs_zones_cleaned]
#
# where seconds run from the start of the workload to the end of the
# unmount (so everything is on the device), device_bytes is the growth of
# the sectors written in /sys/block/*/stat of every device the filesystem
# uses, over the same span, and the last fields are the growth of smrfsctl
# stat's user_bytes_written, device_bytes_written, relocated_bytes and
# zones_cleaned (smrfs only).
# Then a line on the writes the zoned device ($ZONED_DEV) completed over the
# same span, from its /sys/block/*/stat:
#
#   IOSTAT fs workload writes sectors write_ms
#
# the number of write requests, the sectors they wrote and the milliseconds
# they spent in the device queue, summed over requests: sectors / writes is
# the mean write size, write_ms / (1000 * seconds) the mean number of writes
# in flight.
# A workload that fails prints "FAILED fs workload reason" and the run goes
# on with the next one.
#
# Workloads:
#   seq        one file of ZC_SEQ_MIB MiB (default 1024, at most half the
#              free space) written in 1 MiB blocks
#   overwrite  a file filling ZC_FILL% of the free space after mkfs (not
#              measured), then random 4 KiB overwrites of it, buffered, an
#              fsync every ZC_FSYNC writes, ZC_OVERWRITE_MIB MiB in all
#              (default: ZC_OVERWRITE_PCT% of the free space after mkfs) or
#              ZC_RUNTIME seconds, what ends first
#   files      ZC_ROUNDS rounds of: create ZC_FILES files of 4 KiB in 16
#              directories, sync, delete them all, sync (smrfs, a FUSE
#              filesystem, does not see sync(2), but writes file data at
#              once and commits every 5 s and at unmount)
#
# Usage: bench/zoned-compare-guest.sh [BUILD_DIR]   (default: .)
#   ZC_FS       filesystems to run (default "smrfs f2fs btrfs")
#   ZC_WORKLOADS workloads to run (default "seq overwrite files")
#   ZC_SMRFS_OPTS mount options for smrfs (mount.smrfs -o), such as
#              writeback_cache (default none)
#   The other ZC_ variables above; defaults are printed at the start.
# Exit status: 0 when the run went through (failed workloads are reported
# in the output), 1 when it could not start, 77 without a zoned device.

set -u

B=${1:-.}
MKFS=$B/mkfs/mkfs.smrfs
MOUNT=$B/src/fuse/mount.smrfs
CTL=$B/ctl/smrfsctl
PY=/usr/bin/python3
[ -x "$PY" ] || PY=$(command -v python3)

[ -n "${ZONED_DEV:-}" ] || { echo "SKIP: no \$ZONED_DEV"; exit 77; }
D=$ZONED_DEV
SCRATCH=${SCRATCH_DEV:-}
for p in "$MKFS" "$MOUNT" "$CTL"; do
	[ -x "$p" ] || { echo "zoned-compare: $p not built" >&2; exit 1; }
done
for p in fio mkfs.f2fs mkfs.btrfs "$PY"; do
	command -v "$p" >/dev/null ||
		{ echo "zoned-compare: $p missing in the guest" >&2; exit 1; }
done

fss=${ZC_FS:-smrfs f2fs btrfs}
workloads=${ZC_WORKLOADS:-seq overwrite files}
seq_mib=${ZC_SEQ_MIB:-1024}
fill=${ZC_FILL:-75}
ow_pct=${ZC_OVERWRITE_PCT:-100}
ow_mib=${ZC_OVERWRITE_MIB:-}
fsync_every=${ZC_FSYNC:-256}
runtime=${ZC_RUNTIME:-300}
nfiles=${ZC_FILES:-2000}
rounds=${ZC_ROUNDS:-2}

T=$(mktemp -d /tmp/zoned-compare.XXXXXX) || exit 1
M=/mnt/zoned-compare
mkdir -p "$M"
DAEMON=""
mounted() { awk -v m="$M" '$2 == m { f = 1 } END { exit !f }' /proc/self/mounts; }
cleanup() {
	if mounted; then
		umount "$M" 2>/dev/null || umount -l "$M"
	fi
	[ -z "$DAEMON" ] || kill "$DAEMON" 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

echo "device $D ($ZONED_DEV_TYPE): $ZONED_NR_ZONES zones" \
	"($ZONED_NR_CONV conventional) of $ZONED_ZONE_SIZE_MB MiB, capacity" \
	"$ZONED_ZONE_CAP_MB MiB, scratch ${SCRATCH:-none}"
ow_what="$ow_pct% of the free space"
[ -n "$ow_mib" ] && ow_what="$ow_mib MiB"
echo "seq $seq_mib MiB; overwrite: fill $fill%, $ow_what" \
	"or ${runtime}s, fsync every $fsync_every; files: $rounds x $nfiles;" \
	"smrfs mount options: ${ZC_SMRFS_OPTS:-none}"

# The devices a filesystem writes to, and their sectors written so far.
devs() {
	if [ "$1" = f2fs ] && [ "$ZONED_NR_CONV" -eq 0 ]; then
		echo "$D $SCRATCH"
	else
		echo "$D"
	fi
}
sectors() {
	s=0
	for d in $(devs "$1"); do
		s=$((s + $(awk '{ print $7 }' "/sys/block/${d#/dev/}/stat")))
	done
	echo $s
}
# Writes completed, sectors written and write milliseconds of the zoned
# device so far.
wstat() {
	awk '{ print $5, $7, $8 }' "/sys/block/${D#/dev/}/stat"
}
# smrfs_ctr WHERE FIELD: a counter of smrfsctl stat --json, asked through
# the daemon (WHERE the mount point) or read from the unmounted device.
smrfs_ctr() {
	"$CTL" stat "$1" --json | "$PY" -c \
		"import json, sys; print(json.load(sys.stdin)['$2'])"
}
now() { date +%s.%N; }

# mkfs_fs FS: a fresh filesystem on the device (zones reset by each mkfs).
mkfs_fs() {
	case $1 in
	smrfs) "$MKFS" -f "$D" ;;
	f2fs)
		if [ "$ZONED_NR_CONV" -gt 0 ]; then
			mkfs.f2fs -f -m "$D"
		elif [ -n "$SCRATCH" ]; then
			# No conventional zones: the metadata goes on a
			# regular device, the zoned one follows it.
			mkfs.f2fs -f -m -c "$D" "$SCRATCH"
		else
			echo "f2fs needs conventional zones or --scratch"
			return 1
		fi
		;;
	btrfs) mkfs.btrfs -f -O zoned "$D" ;;
	esac >"$T/mkfs.out" 2>&1 || { cat "$T/mkfs.out"; return 1; }
}

mount_fs() {
	case $1 in
	smrfs)
		"$MOUNT" "$D" "$M" -f ${ZC_SMRFS_OPTS:+-o "$ZC_SMRFS_OPTS"} \
			2>"$T/daemon.log" &
		DAEMON=$!
		i=0
		until mounted; do
			kill -0 "$DAEMON" 2>/dev/null ||
				{ DAEMON=""; cat "$T/daemon.log"; return 1; }
			i=$((i + 1))
			[ $i -le 600 ] || return 1
			sleep 0.1
		done
		;;
	f2fs)
		if [ "$ZONED_NR_CONV" -gt 0 ]; then
			mount -t f2fs "$D" "$M"
		else
			mount -t f2fs "$SCRATCH" "$M"
		fi
		;;
	btrfs) mount -t btrfs "$D" "$M" ;;
	esac
}

umount_fs() {
	case $1 in
	smrfs)
		fusermount3 -u "$M" || return 1
		wait "$DAEMON"
		st=$?
		DAEMON=""
		[ $st -eq 0 ] || { cat "$T/daemon.log"; return 1; }
		;;
	*) umount "$M" ;;
	esac
}

# Free bytes of the mounted filesystem.
avail() { df -B1 --output=avail "$M" | tail -1 | tr -d ' '; }

# fio_run NAME ARGS...: one fio job on $M, prints the bytes it wrote.
fio_run() {
	name=$1
	shift
	fio --name="$name" --directory="$M" --ioengine=psync \
		--output-format=json --output="$T/fio.json" "$@" \
		>"$T/fio.out" 2>&1 || { cat "$T/fio.out" >&2; return 1; }
	"$PY" -c 'import json, sys
j = json.load(open(sys.argv[1]))["jobs"][0]
if j["error"]:
    sys.exit("fio error %d" % j["error"])
print(j["write"]["io_bytes"])' "$T/fio.json"
}

small_files() {
	"$PY" - "$M" "$nfiles" "$rounds" <<'EOF'
import os, sys
root, n, rounds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
buf = os.urandom(4096)
for r in range(rounds):
    for d in range(16):
        os.makedirs(os.path.join(root, "d%d" % d), exist_ok=True)
    for i in range(n):
        with open(os.path.join(root, "d%d" % (i % 16), "f%d" % i), "wb") as f:
            f.write(buf)
    os.sync()
    for i in range(n):
        os.unlink(os.path.join(root, "d%d" % (i % 16), "f%d" % i))
    os.sync()
print(n * rounds * 4096)
EOF
}

# run FS WORKLOAD: one measured run; prints RESULT or FAILED.
run() {
	fs=$1
	wl=$2
	fail() { echo "FAILED $fs $wl $*"; mounted && umount_fs "$fs"; return 1; }
	mkfs_fs "$fs" || { echo "FAILED $fs $wl mkfs"; return 1; }
	mount_fs "$fs" || { echo "FAILED $fs $wl mount"; return 1; }
	free0=$(avail)
	if [ "$wl" = overwrite ]; then
		# The fill is not measured: unmount after it.
		size=$((free0 * fill / 100 / 1048576))
		fio_run fill --filename=data --rw=write --bs=1M \
			--size=${size}M --end_fsync=1 >/dev/null ||
			{ fail "fill of ${size} MiB"; return 1; }
		umount_fs "$fs" || { echo "FAILED $fs $wl umount"; return 1; }
		mount_fs "$fs" || { echo "FAILED $fs $wl mount"; return 1; }
	fi
	sync
	[ "$fs" = smrfs ] && {
		u0=$(smrfs_ctr "$M" user_bytes_written)
		d0=$(smrfs_ctr "$M" device_bytes_written)
		r0=$(smrfs_ctr "$M" relocated_bytes)
		z0=$(smrfs_ctr "$M" zones_cleaned)
	}
	s0=$(sectors "$fs")
	w0=$(wstat)
	t0=$(now)
	case $wl in
	seq)
		# Scaled down to half the free space on a small device.
		n=$((free0 / 2 / 1048576))
		[ "$seq_mib" -lt "$n" ] && n=$seq_mib
		user=$(fio_run seq --filename=seq --rw=write --bs=1M \
			--size=${n}M --end_fsync=1) ||
			{ fail "fio"; return 1; }
		;;
	overwrite)
		io=${ow_mib:-$((free0 / 1048576 * ow_pct / 100))}
		user=$(fio_run overwrite --filename=data --rw=randwrite \
			--bs=4k --size=${size}M --io_size=${io}M \
			--fsync=$fsync_every --end_fsync=1 --runtime=$runtime \
			--randrepeat=1) || { fail "fio"; return 1; }
		;;
	files)
		user=$(small_files) || { fail "small files"; return 1; }
		;;
	esac
	umount_fs "$fs" || { echo "FAILED $fs $wl umount"; return 1; }
	t1=$(now)
	s1=$(sectors "$fs")
	w1=$(wstat)
	extra=""
	[ "$fs" = smrfs ] &&
		extra="$(($(smrfs_ctr "$D" user_bytes_written) - u0))
$(($(smrfs_ctr "$D" device_bytes_written) - d0))
$(($(smrfs_ctr "$D" relocated_bytes) - r0))
$(($(smrfs_ctr "$D" zones_cleaned) - z0))"
	secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')
	echo "RESULT $fs $wl $secs $user $(((s1 - s0) * 512))" $extra
	echo "$w0 $w1" | awk -v fs="$fs" -v wl="$wl" \
		'{ print "IOSTAT", fs, wl, $4 - $1, $5 - $2, $6 - $3 }'
}

for wl in $workloads; do
	for fs in $fss; do
		echo "--- $fs $wl ($(date +%T))"
		run "$fs" "$wl"
	done
done
dmesg | grep -iE 'f2fs|btrfs' | grep -iE 'error|fail|no space|read-only' |
	tail -20 | sed 's/^/kernel: /'
exit 0
