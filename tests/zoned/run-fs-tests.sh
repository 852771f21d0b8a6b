#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Run the whole filesystem (tests/zoned/fs-guest.sh: mkfs.smrfs, including
# over dirty zones, mount.smrfs, a mixed workload, remounts and verification
# of every byte) on real kernel zoned block devices, each in a fresh VM
# started by tests/zoned/vm/smrfs-vm; and the daemon killed in the middle
# of a workload and at failpoints (tests/fs/kill9.sh), where write-behind
# holds queued writes that die with it.
#
# Usage: tests/zoned/run-fs-tests.sh
#   Run from the build directory, after building mkfs/mkfs.smrfs,
#   src/fuse/mount.smrfs, fsck/fsck.smrfs, ctl/smrfsctl and (for the
#   namespace audit) tests/fs/ns_audit.
#   SMRFS_VM        the VM runner (default: tests/zoned/vm/smrfs-vm; another
#                   runner must take the same options and set ZONED_DEV)
#   FS_TIMEOUT      seconds allowed per VM (default 900)
#   FS_DEVICES      the configurations to run (default: all of
#                   "nullb zns smr zns-limits nullb-limits kill9")
#   FS_KILL9_CYCLES kill9's cycles (default 8)
#   FS_FILL, FS_BALLAST, FS_CHURN, FS_JOBS, FS_SEED, FS_MOUNT_OPTS are passed
#   to fs-guest.sh.
#
# Exit status: 0 when every configuration passed; 1 when one failed; else 2
# when a VM could not be started or timed out (nothing was tested there), or
# the runner or the programs are missing. Build without -march=native: the guest
# CPU has no AVX-512.

here=$(cd "$(dirname "$0")" && pwd)
tool=${SMRFS_VM:-$here/vm/smrfs-vm}
timeout_s=${FS_TIMEOUT:-900}
devices=${FS_DEVICES:-nullb zns smr zns-limits nullb-limits kill9}

if [ -z "$tool" ] || [ ! -x "$tool" ]; then
	echo "run-fs-tests: the VM runner $tool is missing" >&2
	exit 2
fi
for p in mkfs/mkfs.smrfs src/fuse/mount.smrfs fsck/fsck.smrfs ctl/smrfsctl; do
	if [ ! -x "$p" ]; then
		echo "run-fs-tests: $p not built (run from the build directory)" >&2
		exit 2
	fi
done
[ -x tests/fs/ns_audit ] ||
	echo "run-fs-tests: tests/fs/ns_audit not built: no namespace audit"
export FS_FILL FS_BALLAST FS_CHURN FS_JOBS FS_SEED FS_MOUNT_OPTS
top=$(cd "$here/../.." && pwd)
# For kill9.sh in the guest: the sources, this build, the cycles, and random
# kills put off until the emulated machine runs the load.
srcdir=$top SMRFS_BUILDDIR=$(pwd) KILL9_CYCLES=${FS_KILL9_CYCLES:-8} KILL9_WAIT=6
export srcdir SMRFS_BUILDDIR KILL9_CYCLES KILL9_WAIT

status=0
summary=""

# run NAME ZONED-VM-OPTIONS...
run() {
	name=$1
	shift
	case " $devices " in
	*" $name "*) ;;
	*) return 0 ;;
	esac
	echo "=== $name: ${tool##*/} $*"
	start=$(date +%s)
	case $name in
	kill9*)
		"$tool" --timeout "$timeout_s" "$@" -- sh -c \
			'KILL9_DEV=$ZONED_DEV exec sh "$0"' "$top/tests/fs/kill9.sh" ;;
	*)
		"$tool" --timeout "$timeout_s" "$@" -- sh "$here/fs-guest.sh" . ;;
	esac
	rc=$?
	secs=$(($(date +%s) - start))
	case $rc in
	0) res="passed" ;;
	77) res="FAILED (skipped: no ZONED_DEV in the guest)"; status=1 ;;
	124) res="NOT RUN: the VM timed out after ${timeout_s}s"
	     [ $status -eq 0 ] && status=2 ;;
	125) res="NOT RUN: the VM could not start (see the messages above)"
	     [ $status -eq 0 ] && status=2 ;;
	*) res="FAILED (exit $rc)"; status=1 ;;
	esac
	echo "=== $name: $res in ${secs}s"
	summary="$summary
  $name: $res (${secs}s)"
}

# null_blk with conventional zones (data goes to the sequential zones first,
# to the conventional ones once no sequential zone is free).
run nullb --dev nullb --zones 32 --zone-size 16 --conv 4
# NVMe ZNS: no conventional zones, zone capacity below the zone size.
run zns --dev zns --zones 40 --zone-size 16 --zone-cap 12 --conv 0
# SCSI ZBC (the SMR disk path; scsi_debug keeps it all in guest RAM).
run smr --dev smr --zones 20 --zone-size 16 --conv 2
# Low limits: every zone smrfs keeps open counts. 5 is what it uses when
# its four streams (metadata, hot and cold data, relocation) and its
# checkpoint log all hold a zone, as they do while cleaning: the test wants
# the limit reached.
run zns-limits --dev zns --zones 32 --zone-size 16 --zone-cap 8 --conv 0 \
	--max-open 5 --max-active 5
run nullb-limits --dev nullb --zones 32 --zone-size 16 --conv 2 \
	--lbs 512 --max-open 4 --max-active 5
# kill -9 of the daemon: small zones, so that the cleaner runs, and an open
# limit, as on the zoned loop directory of make check.
run kill9 --dev nullb --zones 32 --zone-size 4 --conv 2 --max-open 6

echo "run-fs-tests summary:$summary"
exit $status
