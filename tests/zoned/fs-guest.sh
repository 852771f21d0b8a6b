#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
#
# The whole filesystem on a real kernel zoned block device: runs inside the
# zoned VM (see run-fs-tests.sh) on $ZONED_DEV, from the build directory.
#
#  1. mkfs.smrfs on the fresh device; its zone report is the reference.
#  2. mkfs.smrfs -f again at once: the same zone report.
#  3. An earlier filesystem: mount, write, unmount; mkfs.smrfs without -f
#     refuses the device and changes no zone. Then raw writes leave
#     more zones open and one full, as another user of the disk would:
#     mkfs.smrfs -f resets every dirty zone: the reference report again.
#  4. Mount, a mixed workload (fs-workload.py: files of many sizes,
#     directories, renames, overwrites, truncations, deletes, fsync) from
#     several writers at once, unmount; remount and verify every byte;
#     a second round.
#  5. Mount, new files over FS_BALLAST percent of the free space, then
#     overwrites (fs-workload.py churn) of more than the rest of it while
#     the live data stays the same: only cleaned zones make room.
#     smrfsctl stat --json must count more zones reset ("zones_reset") and
#     cleaned ("zones_cleaned") than before. mount -o remount,ro: no zone
#     may change for longer than the commit interval, reads and all, then
#     remount,rw. Unmount; fsck.smrfs --scrub
#     reads every data block; remount read-only and verify every byte (the
#     zones must not change); unmount.
#  6. The checkpoints lost (zone 0 zeroed where it is conventional, else
#     the two zones of the checkpoint log reset): fsck.smrfs -y rebuilds
#     the checkpoint from the trees (status 1); every file is the same.
#  After every unmount fsck.smrfs -n must find nothing, and the namespace
#  audit runs on the device (when tests/fs/ns_audit is built). From step 4
#  on, the zone report is sampled several times a second: no more zones may
#  ever be open or active than the device allows, and on a device with a
#  limit, the smaller of the two must be reached at some point (smrfs uses
#  every zone the limit leaves it when all its streams are busy, as while
#  cleaning). The daemon runs in the foreground with its
#  log captured: any error line in it, any I/O error in the kernel log, any
#  failed system call of the workload or a daemon exit status other than 0
#  is a failure. The device refuses writes that break the zone rules (EIO,
#  EREMOTEIO), so write pointer violations show up as such errors.
#
# Usage: tests/zoned/fs-guest.sh [BUILD_DIR]   (default: .)
#   FS_FILL     percent of the free space the two rounds write (default 55)
#   FS_BALLAST  percent of the free space step 5 fills first (default 40)
#   FS_CHURN    percent of the free space left that step 5 then overwrites
#               (default 120)
#   FS_JOBS     writers at once (default 3)
#   FS_SEED     workload seed (default 1)
#   FS_MOUNT_OPTS  mount options for every mount (mount.smrfs -o), such as
#               writeback_cache
# Exit status: 0 passed, 1 failed, 77 no zoned device.

set -u

B=${1:-.}
here=$(cd "$(dirname "$0")" && pwd)
MKFS=$B/mkfs/mkfs.smrfs
MOUNT=$B/src/fuse/mount.smrfs
FSCK=$B/fsck/fsck.smrfs
CTL=$B/ctl/smrfsctl
AUDIT=$B/tests/fs/ns_audit
WL=$here/fs-workload.py
# The system's interpreter: a wrapper in PATH (pyenv) costs seconds per
# start under emulation.
PY=/usr/bin/python3
[ -x "$PY" ] || PY=$(command -v python3)
fill=${FS_FILL:-55}
churn=${FS_CHURN:-120}
ballast=${FS_BALLAST:-40}
jobs=${FS_JOBS:-3}
seed=${FS_SEED:-1}

note() { echo "--- $*"; }
fail() {
	echo "FAIL: $*" >&2
	[ -s "$T/daemon.log" ] && sed 's/^/  daemon: /' "$T/daemon.log" >&2
	exit 1
}

[ -n "${ZONED_DEV:-}" ] || { echo "SKIP: no \$ZONED_DEV"; exit 77; }
D=$ZONED_DEV
for p in "$MKFS" "$MOUNT" "$FSCK" "$CTL"; do
	[ -x "$p" ] || { echo "FAIL: $p not built" >&2; exit 1; }
done
[ -n "$PY" ] || { echo "FAIL: no python3" >&2; exit 1; }

T=$(mktemp -d /tmp/smrfs-zvm.XXXXXX) || exit 1
M=/mnt/smrfs-zvm
mkdir -p "$M"
DAEMON=""
WATCH=""
cleanup() {
	[ -z "$WATCH" ] || kill "$WATCH" 2>/dev/null
	if awk -v m="$M" '$2 == m { f = 1 } END { exit !f }' /proc/self/mounts
	then
		fusermount3 -u "$M" 2>/dev/null || fusermount3 -uz "$M"
	fi
	[ -z "$DAEMON" ] || kill "$DAEMON" 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

n=${D#/dev/}
sysq=/sys/block/$n/queue
max_open=$(cat "$sysq/max_open_zones" 2>/dev/null || echo 0)
max_active=$(cat "$sysq/max_active_zones" 2>/dev/null || echo 0)
echo "device $D ($ZONED_DEV_TYPE): $(cat "$sysq/zoned"), $ZONED_NR_ZONES" \
	"zones ($ZONED_NR_CONV conventional) of $ZONED_ZONE_SIZE_MB MiB," \
	"capacity $ZONED_ZONE_CAP_MB MiB, $ZONED_LBS-byte blocks," \
	"max open $max_open, max active $max_active," \
	"scheduler $(sed 's/.*\[\(.*\)\].*/\1/' "$sysq/scheduler")"

# The sequential zones as "index start cap wp cond", from libzbd's report.
zones() {
	zbd report "$D" | tr -d ',:' | awk '$3 == "swr" || $3 == "swp" {
		printf "%.0f %.0f %.0f %.0f %s\n", $2, $5, $9, $11, $12 }'
}
# Zone counts by condition, and the open/active counts against the limits.
zone_summary() {
	zones | awk -v mo="$max_open" -v ma="$max_active" '
		{ c[$5]++ }
		$5 == "oi" || $5 == "oe" { open++ }
		$5 == "oi" || $5 == "oe" || $5 == "cl" { act++ }
		END {
			printf "zones: %d empty, %d open, %d closed, %d full; " \
				"open %d/%s, active %d/%s\n", c["em"], \
				c["oi"] + c["oe"], c["cl"], c["fu"], open, \
				mo ? mo : "-", act, ma ? ma : "-"
			if ((mo && open > mo) || (ma && act > ma))
				exit 1
		}'
}

klog_start=$(dmesg | wc -l)
# Kernel messages since the start that tell of a failed request.
check_klog() {
	dmesg | tail -n +$((klog_start + 1)) >"$T/klog"
	if grep -iE 'I/O error|critical|blk_update_request|unaligned|Remote I/O|medium error|zone.*(fail|invalid)|WARNING|BUG' \
		"$T/klog" >"$T/klog.bad"; then
		sed 's/^/  kernel: /' "$T/klog.bad" >&2
		fail "kernel log shows failed I/O ($1)"
	fi
}

# mount_fs: start the daemon in the foreground, log to $T/daemon.log.
mount_fs() {
	: >"$T/daemon.log"
	"$MOUNT" "$D" "$M" -f ${FS_MOUNT_OPTS:+-o "$FS_MOUNT_OPTS"} "$@" \
		2>"$T/daemon.log" &
	DAEMON=$!
	i=0
	until awk -v m="$M" '$2 == m { f = 1 } END { exit !f }' /proc/self/mounts
	do
		kill -0 "$DAEMON" 2>/dev/null || { wait "$DAEMON"; DAEMON=""
			fail "mount.smrfs exited before mounting"; }
		i=$((i + 1))
		[ $i -le 600 ] || fail "the mount did not appear in 60 s"
		sleep 0.1
	done
}

# umount_fs WHAT: unmount, the daemon must exit 0 with a clean log; then
# audit the namespace and check the zone limits and the kernel log.
umount_fs() {
	fusermount3 -u "$M" || fail "fusermount3 -u ($1)"
	wait "$DAEMON"
	st=$?
	DAEMON=""
	[ $st -eq 0 ] || fail "mount.smrfs exited with $st ($1)"
	sed 's/^/  daemon: /' "$T/daemon.log"
	if grep -vE 'mounted on|unmounted cleanly' "$T/daemon.log" |
		grep -qiE 'error|fail|corrupt|refus|warn|I/O|EIO|denied|space'
	then
		fail "the daemon logged an error ($1)"
	fi
	: >"$T/daemon.log"
	"$FSCK" -n --no-progress "$D" >"$T/fsck" 2>&1
	st=$?
	[ $st -eq 0 ] ||
		{ cat "$T/fsck" >&2; fail "fsck.smrfs -n exited with $st ($1)"; }
	tail -n 1 "$T/fsck"
	if [ -x "$AUDIT" ]; then
		"$AUDIT" "$D" >"$T/audit" 2>&1 ||
			{ cat "$T/audit" >&2; fail "namespace audit ($1)"; }
	fi
	zone_summary || fail "more zones open or active than allowed ($1)"
	[ -z "$WATCH" ] || zone_peak
	check_klog "$1"
}

# zone_peak: the most zones open and active in the samples so far, and
# their number, into $T/v; and said.
zone_peak() {
	[ -s "$T/load" ] && cp "$T/load" "$T/v" || echo "0 0 0" >"$T/v"
	awk -v mo="$max_open" -v ma="$max_active" '{ printf "zone load, %d " \
		"samples: at most %d open and %d active (limits %s and %s)\n",
		$3, $1, $2, mo ? mo : "none", ma ? ma : "none" }' "$T/v"
}

mkfs() {
	"$MKFS" "$@" "$D" >"$T/mkfs.out" 2>&1
}

elapsed() { awk -v s="$1" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f", e - s }'; }

note "1. mkfs on the fresh device"
zones >"$T/zones.fresh"
mkfs -L zvm || { cat "$T/mkfs.out" >&2; fail "mkfs.smrfs"; }
cat "$T/mkfs.out"
zones >"$T/zones.ref"
zone_summary

note "2. mkfs -f again at once"
mkfs -f -L zvm || { cat "$T/mkfs.out" >&2; fail "second mkfs.smrfs -f"; }
zones >"$T/zones.2"
diff "$T/zones.ref" "$T/zones.2" >&2 ||
	fail "zones after the second mkfs differ from the first"

note "3. an earlier filesystem, then raw writes; mkfs over them"
mount_fs
df -k "$M" | awk 'NR == 2 { print $4 }' >"$T/avail"
avail=$(($(cat "$T/avail") * 1024))
"$PY" "$WL" round "$M" "$T/old.state" --bytes $((24 << 20)) --seed 99 \
	--jobs 2 || fail "workload on the earlier filesystem"
umount_fs "earlier filesystem"
# mkfs refuses the device and changes nothing on it.
zones >"$T/zones.old"
if mkfs; then
	fail "mkfs.smrfs without -f accepted a device holding smrfs"
fi
grep -qi smrfs "$T/mkfs.out" || fail "mkfs refusal: $(cat "$T/mkfs.out")"
zones >"$T/zones.refused"
diff "$T/zones.old" "$T/zones.refused" >&2 ||
	fail "the refused mkfs changed zones"
# More dirty zones: some left open (as many as the limits allow, up to 3),
# one full, in empty zones from the end of the device.
act=$(awk '$5 == "oi" || $5 == "oe" || $5 == "cl"' "$T/zones.old" | wc -l)
room=3
lim=$max_active
[ "$max_open" -gt 0 ] && { [ "$lim" -eq 0 ] || [ "$max_open" -lt "$lim" ]; } &&
	lim=$max_open
[ "$lim" -gt 0 ] && [ $((lim - act - 1)) -lt $room ] && room=$((lim - act - 1))
[ $room -lt 0 ] && room=0
awk '$5 == "em"' "$T/zones.old" | sort -k1,1nr | head -n $((room + 1)) \
	>"$T/dirty"
first=1
while read -r idx start cap wp cond; do
	if [ $first = 1 ]; then
		bs=1048576 # all of it: full
		count=$((cap / bs))
		first=0
	else
		bs=12288 # a part, left open
		count=$((((idx % 5) + 1) * 64 + 1))
	fi
	dd if=/dev/urandom of="$D" bs=$bs count=$count seek="$start" \
		oflag=direct,seek_bytes conv=notrunc status=none ||
		fail "raw write to zone $idx"
done <"$T/dirty"
zones >"$T/zones.dirty"
echo "dirty before mkfs: $(awk '$5 != "em"' "$T/zones.dirty" | wc -l) zones" \
	"not empty (reference: $(awk '$5 != "em"' "$T/zones.ref" | wc -l));" \
	"$(zone_summary)"
mkfs -f -L zvm || { cat "$T/mkfs.out" >&2; fail "mkfs.smrfs -f on dirty zones"; }
zones >"$T/zones.3"
diff "$T/zones.ref" "$T/zones.3" >&2 ||
	fail "zones after mkfs over dirty zones differ from a fresh mkfs"
echo "mkfs -f reset them: the same zones as after a mkfs on the fresh device"

# The zone load, sampled from here on: "OPEN ACTIVE SAMPLES", the most
# zones open and active at once, in $T/load.
"$PY" "$WL" zone-load "$D" "$T/load" &
WATCH=$!

# stat_key KEY...: the values of KEYs in smrfsctl stat --json of the
# mount, on one line in $T/v.
stat_key() {
	"$CTL" stat --json "$M" >"$T/stat.json" ||
		fail "smrfsctl stat --json $M"
	"$PY" -c 'import json, sys
d = json.load(open(sys.argv[1]))
print(" ".join(str(d[k]) for k in sys.argv[2:]))' "$T/stat.json" "$@" \
		>"$T/v" ||
		fail "smrfsctl stat --json: no $* in $(cat "$T/stat.json")"
}

note "4. mount, workload, remount and verify, twice"
mount_fs
df -k "$M" | awk 'NR == 2 { print $4 }' >"$T/avail"
avail=$(($(cat "$T/avail") * 1024))
total=$((avail / 100 * fill))
b1=$((total / 5 * 3))
b2=$((total - b1))
echo "free after mkfs: $((avail >> 20)) MiB; writing $((total >> 20)) MiB" \
	"($fill%) in two rounds, $jobs writers"
s=$(date +%s.%N)
"$PY" "$WL" round "$M" "$T/state" --bytes $b1 --seed "$seed" \
	--jobs "$jobs" || fail "workload, round 1"
echo "round 1: $(elapsed "$s") s"
df -h "$M" | tail -n 1
umount_fs "round 1"

mount_fs
s=$(date +%s.%N)
"$PY" "$WL" verify "$M" "$T/state" || fail "verify after round 1 and a remount"
echo "verify: $(elapsed "$s") s"
s=$(date +%s.%N)
"$PY" "$WL" round "$M" "$T/state" --bytes $b2 --seed "$seed" \
	--jobs "$jobs" || fail "workload, round 2"
echo "round 2: $(elapsed "$s") s"
df -h "$M" | tail -n 1
umount_fs "round 2"

note "5. overwrites of more than the free space, then verify"
mount_fs
stat_key zones_reset zones_cleaned
read -r reset0 cleaned0 <"$T/v"
df -k "$M" | awk 'NR == 2 { print $4 }' >"$T/avail"
avail=$(($(cat "$T/avail") * 1024))
fill_b=$((avail / 100 * ballast))
total=$(((avail - fill_b) / 100 * churn))
echo "free: $((avail >> 20)) MiB; new files $((fill_b >> 20)) MiB" \
	"($ballast%), then overwriting $((total >> 20)) MiB ($churn% of the" \
	"rest), $jobs writers; zones reset $reset0, cleaned $cleaned0"
s=$(date +%s.%N)
"$PY" "$WL" churn "$M" "$T/state" --bytes $total --ballast $fill_b \
	--seed "$seed" --jobs "$jobs" || fail "overwrites"
echo "overwrites: $(elapsed "$s") s"
df -h "$M" | tail -n 1
stat_key zones_reset zones_cleaned relocated_bytes write_amplification
read -r reset cleaned reloc wa <"$T/v"
echo "zones reset $reset, cleaned $cleaned; relocated $((reloc >> 20)) MiB;" \
	"write amplification $wa"
[ "$reset" -gt "$reset0" ] || fail "no zone was reset (zones_reset $reset)"
[ "$cleaned" -gt "$cleaned0" ] ||
	fail "the cleaner cleaned no zone (zones_cleaned $cleaned)"
# Read-only by a remount: everything was committed, and nothing more is
# written, neither the timer's commit nor an atime, until remount,rw.
"$MOUNT" "$D" "$M" -o remount,ro || fail "remount,ro"
zones >"$T/zones.ro"
find "$M" -type f | head -n 20 | xargs cat >/dev/null ||
	fail "reads while remounted read-only"
sleep 6
zones >"$T/zones.ro2"
diff "$T/zones.ro" "$T/zones.ro2" >&2 ||
	fail "zones changed while remounted read-only"
"$MOUNT" "$D" "$M" -o remount,rw || fail "remount,rw"
echo "remount,ro: no zone changed in 6 s; remount,rw"
umount_fs "overwrites"
s=$(date +%s.%N)
"$FSCK" -n --scrub --json --no-progress "$D" >"$T/scrub" 2>"$T/scrub.err"
st=$?
[ $st -eq 0 ] || { cat "$T/scrub" "$T/scrub.err" >&2
	fail "fsck.smrfs -n --scrub exited with $st"; }
"$PY" -c 'import json, sys
c = json.load(open(sys.argv[1]))["checked"]
print(c["scrubbed_bytes"], c["bad_data_blocks"])' "$T/scrub" >"$T/v" ||
	fail "fsck.smrfs --scrub --json: $(cat "$T/scrub")"
read -r scrubbed bad <"$T/v"
echo "fsck.smrfs --scrub: $((scrubbed >> 20)) MiB of data read, $bad bad" \
	"blocks, $(elapsed "$s") s"
[ "$scrubbed" -gt 0 ] || fail "fsck.smrfs --scrub read no data"

zones >"$T/zones.before-ro"
mount_fs -o ro
"$PY" "$WL" verify "$M" "$T/state" --manifest "$T/manifest" ||
	fail "verify after the overwrites and a remount"
echo "checksums of $(wc -l <"$T/manifest") files: $(sha256sum "$T/manifest" |
	cut -c1-16)..."
umount_fs "final check"
zones >"$T/zones.after-ro"
diff "$T/zones.before-ro" "$T/zones.after-ro" >&2 ||
	fail "a read-only mount changed zones"
kill "$WATCH" 2>/dev/null
wait "$WATCH" 2>/dev/null
WATCH=""
zone_peak >/dev/null
read -r peak_open peak_active samples <"$T/v"
[ "$max_open" -eq 0 ] || [ "$peak_open" -le "$max_open" ] ||
	fail "$peak_open zones open, more than the device's limit $max_open"
[ "$max_active" -eq 0 ] || [ "$peak_active" -le "$max_active" ] ||
	fail "$peak_active zones active, more than the device's limit $max_active"
# The binding limit: the smaller of the two (every open zone is active).
if [ "$max_open" -gt 0 ] && { [ "$max_active" -eq 0 ] ||
	[ "$max_open" -le "$max_active" ]; }; then
	[ "$peak_open" -ge "$max_open" ] ||
		fail "never $max_open zones open: the limit was not reached"
elif [ "$max_active" -gt 0 ]; then
	[ "$peak_active" -ge "$max_active" ] ||
		fail "never $max_active zones active: the limit was not reached"
fi
zones | awk '{ used += $5 == "fu" ? $3 : $4 - $2; cap += $3 } END {
	printf "sequential zones: %.1f MiB written of %.1f MiB\n",
		used / 1048576, cap / 1048576 }'

note "6. the checkpoints lost: rebuilt from the trees, every byte verified"
# Zone 0 holds the superblock and the checkpoint records where it is
# conventional; otherwise zones 0 and 1 are the checkpoint log. Gone, as
# a zeroed or reset disk start leaves them; fsck rebuilds the checkpoint
# from the B-tree nodes it finds.
zs=$((ZONED_ZONE_SIZE_MB * 1048576))
if [ "$ZONED_NR_CONV" -gt 0 ]; then
	dd if=/dev/zero of="$D" bs=1M count="$ZONED_ZONE_SIZE_MB" oflag=direct \
		conv=notrunc 2>/dev/null || fail "zeroing zone 0"
else
	zbd reset -ofst 0 -len $((2 * zs)) "$D" >/dev/null ||
		fail "resetting zones 0 and 1"
fi
"$FSCK" -y --no-progress "$D" >"$T/fsck" 2>&1
st=$?
[ $st -eq 1 ] || { cat "$T/fsck" >&2
	fail "fsck.smrfs -y after the loss exited with $st, not 1"; }
grep -q "rebuilt" "$T/fsck" || { cat "$T/fsck" >&2; fail "nothing rebuilt"; }
tail -n 1 "$T/fsck"
mount_fs -o ro
"$PY" "$WL" verify "$M" "$T/state" --manifest "$T/manifest.rebuilt" ||
	fail "verify after the checkpoint rebuild"
cmp -s "$T/manifest" "$T/manifest.rebuilt" ||
	fail "the files differ after the checkpoint rebuild"
umount_fs "checkpoint rebuild"
echo "PASS: smrfs on $D ($ZONED_DEV_TYPE)"
exit 0
