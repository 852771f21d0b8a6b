#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
#
# smrfs side by side with the kernel's zoned filesystems, f2fs and btrfs,
# on one kernel zoned block device in the zoned VM (tests/zoned/vm/smrfs-vm):
# sequential write, random 4 KiB overwrites of a filled filesystem, small
# file create/delete. One VM run per device shape; the guest half is
# bench/zoned-compare-guest.sh. Prints Markdown tables: throughput and
# device bytes written per user byte, then the mean size and concurrency of
# the writes the zoned device completed (bench/README.md).
#
# Usage: bench/zoned-compare.sh [--build DIR] [--out FILE] [RUNNER OPTIONS]
#   --build DIR  the build directory (default: $SMRFS_BUILD, else .)
#   --out FILE   also keep the raw guest output in FILE
#   RUNNER OPTIONS go to the VM runner after the default shape, null_blk
#   with 32 zones of 16 MiB (4 conventional): --zones 32 --zone-size 16.
#   zns has no conventional zones: f2fs then needs a regular device, give
#   --scratch MiB.
# Environment: SMRFS_VM (the runner, default tests/zoned/vm/smrfs-vm of this
# source tree), ZC_TIMEOUT (seconds for the VM, default 1800) and the ZC_
# variables of bench/zoned-compare-guest.sh (sizes, counts), passed on.
#
# The host needs the Debian packages f2fs-tools, btrfs-progs and fio: the
# guest runs the host's programs.

here=$(cd "$(dirname "$0")" && pwd)
runner=${SMRFS_VM:-$here/../tests/zoned/vm/smrfs-vm}
build=${SMRFS_BUILD:-.}
out=""

while [ $# -gt 0 ]; do
	case $1 in
	--build) build=$2; shift 2 ;;
	--out) out=$2; shift 2 ;;
	-h | --help) sed -n '3,/^$/s/^# \{0,1\}//p' "$0"; exit 0 ;;
	*) break ;;
	esac
done

missing=""
for p in fio:fio mkfs.f2fs:f2fs-tools mkfs.btrfs:btrfs-progs; do
	PATH=$PATH:/sbin:/usr/sbin command -v "${p%%:*}" >/dev/null ||
		missing="$missing ${p#*:}"
done
if [ -n "$missing" ]; then
	echo "zoned-compare: install the Debian packages:$missing" >&2
	exit 2
fi
[ -x "$runner" ] || { echo "zoned-compare: no VM runner $runner" >&2; exit 2; }
build=$(cd "$build" && pwd) || exit 2
[ -x "$build/src/fuse/mount.smrfs" ] ||
	{ echo "zoned-compare: smrfs not built in $build" >&2; exit 2; }

raw=$(mktemp) || exit 2
trap 'rm -f "$raw" "$raw.rc"' EXIT
export ZC_FS ZC_WORKLOADS ZC_SMRFS_OPTS ZC_SEQ_MIB ZC_FILL ZC_OVERWRITE_PCT ZC_OVERWRITE_MIB ZC_FSYNC \
	ZC_RUNTIME ZC_FILES ZC_ROUNDS
cd "$build" || exit 2
# The default shape first: the options given come later and win.
# The runner's status, not tee's: a VM that never ran must not pass.
{
	"$runner" --timeout "${ZC_TIMEOUT:-1800}" --zones 32 --zone-size 16 \
		"$@" -- bash "$here/zoned-compare-guest.sh" .
	echo $? >"$raw.rc"
} | tee "$raw"
rc=$(cat "$raw.rc")
[ -n "$out" ] && cp "$raw" "$out"

echo
echo "| workload | filesystem | seconds | MB/s (user) | device / user bytes | smrfs counters: device / user | smrfs: relocated MiB, zones cleaned |"
echo "|---|---|---:|---:|---:|---:|---:|"
awk '
$1 == "RESULT" {
	mbs = $4 > 0 ? $5 / $4 / 1e6 : 0
	wa = $5 > 0 ? sprintf("%.2f", $6 / $5) : "-"
	own = (NF >= 8 && $7 > 0) ? sprintf("%.2f", $8 / $7) : "-"
	gc = NF >= 10 ? sprintf("%.1f, %d", $9 / 1048576, $10) : "-"
	printf "| %s | %s | %.1f | %.2f | %s | %s | %s |\n", $3, $2, $4, mbs, wa, own, gc
}
$1 == "FAILED" {
	r = ""
	for (i = 4; i <= NF; i++) r = r " " $i
	printf "| %s | %s | failed:%s | | | | |\n", $3, $2, r
}' "$raw"
echo
echo "| workload | filesystem | writes to the zoned device | mean write KiB | mean writes in flight |"
echo "|---|---|---:|---:|---:|"
awk '
$1 == "RESULT" { secs[$2 " " $3] = $4 }
$1 == "IOSTAT" && $4 > 0 {
	s = secs[$2 " " $3]
	printf "| %s | %s | %d | %.0f | %.2f |\n", $3, $2, $4, $5 / 2 / $4,
		(s > 0 ? $6 / 1000 / s : 0)
}' "$raw"
exit $rc
