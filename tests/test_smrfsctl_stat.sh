#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
#
# smrfsctl stat and zones on a zoned loop directory: the figures of the
# unmounted device, of the mounted filesystem (asked through the daemon's
# ioctls) after writing a known amount of data, the zone map in text and
# SVG, and the same figures again once unmounted. Also a plain file device,
# and the errors: bad usage exits 2, a directory that is not smrfs 1.
#
# Skips (77) where FUSE cannot be used. python3 checks the JSON where it is
# installed; without it, the keys are read with sed (one key a line).
set -u

B=${top_builddir:-.}
CTL=${SMRFSCTL:-$B/ctl/smrfsctl}
MKFS=${SMRFS_MKFS:-$B/mkfs/mkfs.smrfs}
MOUNT=${SMRFS_MOUNT:-$B/src/fuse/mount.smrfs}

skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*" >&2; exit 1; }

for p in "$CTL" "$MKFS" "$MOUNT"; do
	[ -x "$p" ] || skip "$p not built"
done

T=$(mktemp -d "${TMPDIR:-/tmp}/smrfs-stat.XXXXXX") || fail "mktemp"
MNT=$T/mnt
DAEMON=""

is_mounted() {
	awk -v m="$1" '$2 == m { found = 1 } END { exit !found }' /proc/self/mounts
}

cleanup() {
	if is_mounted "$MNT"; then
		fusermount3 -u "$MNT" 2>/dev/null || fusermount3 -uz "$MNT"
	fi
	if [ -n "$DAEMON" ] && kill -0 "$DAEMON" 2>/dev/null; then
		kill -TERM "$DAEMON" 2>/dev/null
		wait "$DAEMON" 2>/dev/null
	fi
	rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# jget FILE KEY: a top-level number, string (unquoted) or boolean.
if command -v python3 >/dev/null; then
	jget() {
		python3 -c 'import json, sys
v = json.load(open(sys.argv[1]))[sys.argv[2]]
print(str(v).lower() if isinstance(v, bool) else v)' "$1" "$2" ||
			fail "no key $2 in $1: $(cat "$1")"
	}
else
	jget() {
		v=$(sed -n "s/^  \"$2\": \"\{0,1\}\([^\",]*\)\"\{0,1\},\{0,1\}\$/\1/p" "$1")
		[ -n "$v" ] || fail "no key $2 in $1: $(cat "$1")"
		echo "$v"
	}
fi

# --- usage --------------------------------------------------------------
"$CTL" --help | grep -q '^  stat ' || fail "--help does not list stat"
"$CTL" --help | grep -q '^  zones ' || fail "--help does not list zones"
"$CTL" stat >/dev/null 2>&1
[ $? -eq 2 ] || fail "stat without an argument: not a usage error"
"$CTL" stat --bogus "$T" >/dev/null 2>&1
[ $? -eq 2 ] || fail "stat --bogus: not a usage error"
"$CTL" zones >/dev/null 2>&1
[ $? -eq 2 ] || fail "zones without an argument: not a usage error"
mkdir "$T/plain"
"$CTL" stat "$T/plain" >/dev/null 2>"$T/err" && fail "stat of a plain directory succeeded"
[ "$(wc -l <"$T/err")" -eq 1 ] || fail "stat of a plain directory: $(cat "$T/err")"

# --- an unmounted zoned device --------------------------------------------
Z=$T/zl
"$CTL" zloop create "$Z" --capacity 512M --zone-size 16M --conv-zones 2 \
	--max-open 6 >/dev/null || fail "zloop create"
"$MKFS" -L stat-test "$Z" >/dev/null || fail "mkfs.smrfs $Z"

"$CTL" stat --json "$Z" >"$T/s0.json" || fail "stat --json $Z"
if command -v python3 >/dev/null; then
	python3 -c 'import json, sys; json.load(open(sys.argv[1]))' \
		"$T/s0.json" || fail "stat --json is not JSON: $(cat "$T/s0.json")"
fi
[ "$(jget "$T/s0.json" device_kind)" = zloop ] || fail "device_kind"
[ "$(jget "$T/s0.json" allocator)" = zoned ] || fail "allocator"
[ "$(jget "$T/s0.json" label)" = stat-test ] || fail "label"
[ "$(jget "$T/s0.json" mounted)" = false ] || fail "mounted"
[ "$(jget "$T/s0.json" zones_total)" -eq 32 ] || fail "zones_total"
[ "$(jget "$T/s0.json" zones_conventional)" -eq 2 ] || fail "zones_conventional"
[ "$(jget "$T/s0.json" capacity_bytes)" -gt 0 ] || fail "capacity_bytes"
free0=$(jget "$T/s0.json" zones_free)
used0=$(jget "$T/s0.json" used_bytes)
cap=$(jget "$T/s0.json" capacity_bytes)
[ "$free0" -gt 20 ] || fail "zones_free of a new filesystem: $free0"
# The space adds up.
sum=$(( $(jget "$T/s0.json" used_bytes) + $(jget "$T/s0.json" free_bytes) + \
	$(jget "$T/s0.json" reclaimable_bytes) + $(jget "$T/s0.json" reserved_bytes) ))
[ "$sum" -eq "$cap" ] || fail "used+free+reclaimable+reserved $sum != capacity $cap"
# The size statfs reports is the capacity less the overhead.
[ $(( $(jget "$T/s0.json" size_bytes) + $(jget "$T/s0.json" overhead_bytes) )) \
	-eq "$cap" ] || fail "size_bytes + overhead_bytes != capacity"
[ "$(jget "$T/s0.json" available_bytes)" -gt 0 ] || fail "available_bytes"

"$CTL" stat "$Z" >"$T/s0.txt" || fail "stat $Z"
grep -q 'allocator .*zoned' "$T/s0.txt" || fail "stat text: $(cat "$T/s0.txt")"
grep -q 'not mounted' "$T/s0.txt" || fail "stat text: not mounted"

# --- mounted: the daemon answers --------------------------------------------
[ -c /dev/fuse ] && [ -r /dev/fuse ] && [ -w /dev/fuse ] ||
	skip "/dev/fuse not usable"
command -v fusermount3 >/dev/null || skip "no fusermount3"
mkdir "$MNT"
"$MOUNT" "$Z" "$MNT" -f 2>"$T/daemon.err" &
DAEMON=$!
i=0
until is_mounted "$MNT"; do
	kill -0 "$DAEMON" 2>/dev/null ||
		skip "mount.smrfs could not mount: $(cat "$T/daemon.err")"
	i=$((i + 1))
	[ $i -le 200 ] || fail "the mount did not appear"
	sleep 0.1
done

MIB=$((1024 * 1024))
dd if=/dev/urandom of="$MNT/a" bs=1M count=24 conv=fsync status=none ||
	fail "writing 24 MiB"
dd if=/dev/urandom of="$MNT/b" bs=1M count=16 conv=fsync status=none ||
	fail "writing 16 MiB"

"$CTL" stat --json "$MNT" >"$T/s1.json" || fail "stat --json $MNT"
[ "$(jget "$T/s1.json" mounted)" = true ] || fail "mounted (through the daemon)"
[ "$(jget "$T/s1.json" allocator)" = zoned ] || fail "allocator, mounted"
[ "$(jget "$T/s1.json" device_kind)" = zloop ] || fail "device_kind, mounted"
used1=$(jget "$T/s1.json" used_bytes)
free1=$(jget "$T/s1.json" zones_free)
grown=$((used1 - used0))
# 40 MiB of data plus a little metadata.
[ "$grown" -ge $((40 * MIB)) ] && [ "$grown" -le $((42 * MIB)) ] ||
	fail "used_bytes grew by $grown after writing 40 MiB"
# 40 MiB fill at least two more 16 MiB zones.
[ "$free1" -le $((free0 - 2)) ] || fail "zones_free $free0 -> $free1"
[ "$(jget "$T/s1.json" inodes)" -eq 3 ] || fail "inodes, mounted"
hot=$(python3 -c 'import json, sys
print(json.load(open(sys.argv[1]))["bytes_allocated"]["hot"])' "$T/s1.json" 2>/dev/null ||
	sed -n 's/.*"hot": \([0-9]*\).*/\1/p' "$T/s1.json")
[ "$hot" -ge $((40 * MIB)) ] || fail "bytes allocated to the hot stream: $hot"
# The cleaner's figures: 40 MiB of user data, a little more on the device.
[ "$(jget "$T/s1.json" user_bytes_written)" -eq $((40 * MIB)) ] ||
	fail "user_bytes_written"
dev=$(jget "$T/s1.json" device_bytes_written)
[ "$dev" -gt $((40 * MIB)) ] && [ "$dev" -le $((42 * MIB)) ] ||
	fail "device_bytes_written $dev"
[ "$(jget "$T/s1.json" relocated_bytes)" -eq 0 ] || fail "relocated_bytes"
[ "$(jget "$T/s1.json" cleaner_runs)" -eq 0 ] || fail "cleaner_runs"
jget "$T/s1.json" cleaner_seconds | grep -Eq '^0(\.0+)?$' ||
	fail "cleaner_seconds $(jget "$T/s1.json" cleaner_seconds)"
jget "$T/s1.json" write_amplification | grep -q '^1\.0' ||
	fail "write_amplification $(jget "$T/s1.json" write_amplification)"

# The device itself, while the daemon holds it: its last checkpoint.
"$CTL" stat "$Z" >"$T/busy.txt" || fail "stat of the mounted device"
grep -q 'in use' "$T/busy.txt" || fail "stat of a held device: $(cat "$T/busy.txt")"

# The zone map: one cell per zone, then the legend and totals.
"$CTL" zones "$MNT" --svg "$T/z.svg" >"$T/z.txt" || fail "zones $MNT"
cells=$(awk '/^ *[0-9]+ [^ ]+$/ { n += length($2) } END { print n + 0 }' "$T/z.txt")
[ "$cells" -eq 32 ] || fail "zones map has $cells cells, not 32: $(cat "$T/z.txt")"
grep -q '^legend:' "$T/z.txt" || fail "zones: no legend"
grep -q '^totals: 32 zones' "$T/z.txt" || fail "zones: no totals"
# Cells in order: zone 0 holds the superblocks, zone 1 is conventional.
row=$(awk '/^ *0 / { print $2 }' "$T/z.txt")
case $row in
MC*) ;;
*) fail "zones map starts with '$row'" ;;
esac
# Full zones of live data show '#' (all live).
echo "$row" | grep -q '#' || fail "no fully live zone in '$row'"
# The SVG: well formed where python3 can tell, one rect per zone.
grep -q '^<svg ' "$T/z.svg" || fail "no <svg> element"
tail -n 1 "$T/z.svg" | grep -q '^</svg>$' || fail "SVG not closed"
nz=$(grep -c '<rect class="z"' "$T/z.svg")
[ "$nz" -eq 32 ] || fail "SVG has $nz zone rectangles, not 32"
if command -v python3 >/dev/null; then
	python3 -c 'import sys, xml.etree.ElementTree as ET
r = ET.parse(sys.argv[1]).getroot()
n = sum(1 for e in r.iter("{http://www.w3.org/2000/svg}rect")
        if e.get("class") == "z")
sys.exit(n != 32)' "$T/z.svg" || fail "SVG does not parse or lacks zone rects"
fi

# Deleting a file leaves dead data: after the commit the zones show it.
# (Truncate first: the kernel may keep an unlinked inode, and its
# extents, until it forgets it.)
truncate -s 0 "$MNT/a" || fail "truncate"
rm "$MNT/a"
# The space comes back to the allocator at the commit after the one that
# drops the references: two commits, each forced by a change and an fsync.
for n in 1 2; do
	echo "$n" >"$MNT/s$n"
	dd if=/dev/null of="$MNT/s$n" conv=notrunc,fsync status=none ||
		fail "fsync"
done
"$CTL" stat --json "$MNT" >"$T/s2.json" || fail "stat after rm"
used2=$(jget "$T/s2.json" used_bytes)
# The two small files and the metadata of all this take a little back.
[ "$used2" -le $((used1 - 23 * MIB)) ] || fail "used_bytes $used1 -> $used2 after rm of 24 MiB"

# --- unmounted again: the figures persist -----------------------------------
fusermount3 -u "$MNT" || fail "fusermount3 -u"
wait "$DAEMON" || fail "mount.smrfs exited with $?: $(cat "$T/daemon.err")"
DAEMON=""
"$CTL" stat --json "$Z" >"$T/s3.json" || fail "stat --json after unmount"
for k in capacity_bytes allocator uuid label zones_total; do
	[ "$(jget "$T/s3.json" $k)" = "$(jget "$T/s2.json" $k)" ] ||
		fail "$k: $(jget "$T/s2.json" $k) mounted, $(jget "$T/s3.json" $k) unmounted"
done
# The unmount's commit rewrites a little metadata; the data stays.
used2=$(jget "$T/s2.json" used_bytes)
used3=$(jget "$T/s3.json" used_bytes)
d=$((used3 - used2))
[ "${d#-}" -le "$MIB" ] || fail "used_bytes $used2 mounted, $used3 unmounted"
[ "$used3" -ge $((16 * MIB)) ] || fail "used_bytes $used3 below the 16 MiB kept"
d=$(( $(jget "$T/s3.json" zones_free) - $(jget "$T/s2.json" zones_free) ))
[ "${d#-}" -le 1 ] || fail "zones_free changed by $d at unmount"
[ "$(jget "$T/s3.json" generation)" -gt "$(jget "$T/s0.json" generation)" ] ||
	fail "generation did not grow"
"$CTL" zones "$Z" >"$T/z3.txt" || fail "zones $Z"
cmp -s "$T/z.txt" "$T/z3.txt" && fail "zone map unchanged after rm"
cells=$(awk '/^ *[0-9]+ [^ ]+$/ { n += length($2) } END { print n + 0 }' "$T/z3.txt")
[ "$cells" -eq 32 ] || fail "unmounted zones map has $cells cells"
# A zone that held only the deleted file's data is dead now (0) or reset.
awk '/^ *0 / { print $2 }' "$T/z3.txt" | grep -q '[0-8.]' ||
	fail "no dead or reset zone after rm: $(cat "$T/z3.txt")"

# --- a plain file: no zones -----------------------------------------------
truncate -s 256M "$T/img" || fail "truncate"
"$MKFS" "$T/img" >/dev/null || fail "mkfs.smrfs on a file"
"$CTL" stat --json "$T/img" >"$T/f.json" || fail "stat of a file device"
[ "$(jget "$T/f.json" device_kind)" = file ] || fail "file: device_kind"
[ "$(jget "$T/f.json" zones_total)" -eq 0 ] || fail "file: zones_total"
[ "$(jget "$T/f.json" allocator)" != zoned ] || fail "file: allocator zoned"
"$CTL" zones "$T/img" >/dev/null 2>"$T/err" && fail "zones of a file device succeeded"
[ "$(wc -l <"$T/err")" -eq 1 ] || fail "zones of a file: $(cat "$T/err")"
exit 0
