#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Run tests/test_zbd against real kernel zoned block devices, each in a fresh
# VM started by tests/zoned/vm/smrfs-vm: null_blk (with conventional zones,
# open/active limits; 512-byte blocks and a zone capacity below the zone
# size; 2048 zones, more than one zone report call returns), QEMU NVMe ZNS,
# and scsi_debug SCSI ZBC.
#
# Usage: tests/zoned/run-zbd-tests.sh [TEST_BINARY]
#   Run from the build directory (the default binary is tests/test_zbd).
#   SMRFS_VM        the VM runner (default: tests/zoned/vm/smrfs-vm; another
#                   runner must take the same options and set ZONED_DEV)
#   ZBD_TIMEOUT     seconds allowed per VM (default 300)
#   ZBD_DEVICES     the configurations to run (default: all of
#                   "nullb nullb-512-cap nullb-many zns smr")
#
# Exit status: 0 when every device passed; 1 when a test failed; 2 when the
# VM could not be started or timed out (nothing was tested on that device),
# or the runner or the binary is missing. Build without -march=native: the
# guest CPU has no AVX-512.

here=$(cd "$(dirname "$0")" && pwd)
test_bin=${1:-tests/test_zbd}
tool=${SMRFS_VM:-$here/vm/smrfs-vm}
timeout_s=${ZBD_TIMEOUT:-300}
devices=${ZBD_DEVICES:-nullb nullb-512-cap nullb-many zns smr}

if [ -z "$tool" ] || [ ! -x "$tool" ]; then
	echo "run-zbd-tests: the VM runner $tool is missing" >&2
	exit 2
fi
if [ ! -x "$test_bin" ]; then
	echo "run-zbd-tests: $test_bin not built (make tests/test_zbd)" >&2
	exit 2
fi
case $test_bin in
/*) ;;
*) test_bin=./$test_bin ;;
esac

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
	# $ZONED_DEV exists only in the guest: keep it quoted here.
	"$tool" --timeout "$timeout_s" "$@" -- \
		sh -c 'echo "device $ZONED_DEV ($ZONED_DEV_TYPE)"; exec "$0"' \
		"$test_bin"
	rc=$?
	secs=$(($(date +%s) - start))
	case $rc in
	0) res="passed" ;;
	77) res="FAILED (skipped: no ZONED_DEV in the guest)"; status=1 ;;
	124) res="NOT RUN: the VM timed out after ${timeout_s}s"; status=2 ;;
	125) res="NOT RUN: the VM could not start (see the messages above)"
	     status=2 ;;
	*) res="FAILED (exit $rc)"; [ $status -eq 0 ] && status=1 ;;
	esac
	echo "=== $name: $res in ${secs}s"
	summary="$summary
  $name: $res (${secs}s)"
}

run nullb --dev nullb --zones 16 --zone-size 16 --conv 4 \
	--max-open 4 --max-active 6
run nullb-512-cap --dev nullb --zones 16 --zone-size 16 --zone-cap 8 \
	--conv 2 --lbs 512
run nullb-many --dev nullb --zones 2048 --zone-size 1 --conv 8 \
	--max-open 8 --max-active 12
run zns --dev zns --zones 16 --zone-size 16 --zone-cap 8 --conv 0 \
	--max-open 4 --max-active 6
run smr --dev smr --zones 16 --zone-size 16 --conv 2 --max-open 4

echo "run-zbd-tests summary:$summary"
exit $status
