#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
#
# bootstrap.sh - everything a fresh Debian 12 machine needs, in one command.
#
#   scripts/bootstrap.sh demo   install the packages, build, and run the demo:
#                               a zoned loop directory, mkfs, mount, a
#                               workload, figures, unmount (scripts/demo.sh)
#   scripts/bootstrap.sh test   install the packages, build, and run every
#                               test (make distcheck: the unit tests, the
#                               integration tests and the release tarball),
#                               then a set of tests on kernel zoned devices
#                               in a small VM (tests/zoned/vm/smrfs-vm;
#                               make check-zoned runs them all)
#
# Run it as root from the top of a clone (it calls apt-get). Set
# SMRFS_NO_APT=1 to skip the package installation on a prepared machine.
set -eu

mode=${1:-}
case "$mode" in
demo|test) ;;
*) echo "usage: $0 demo|test" >&2; exit 2 ;;
esac

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"

packages="build-essential autoconf automake libtool pkg-config \
libfuse3-dev fuse3 libzbd-dev zbd-utils liburing-dev libxxhash-dev \
libcunit1-dev libblkid-dev libmount-dev attr python3 \
qemu-system-x86 busybox-static xz-utils"

if [ -z "${SMRFS_NO_APT:-}" ]; then
	missing=
	for p in $packages; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null |
			grep -q "ok installed" || missing="$missing $p"
	done
	if [ -n "$missing" ]; then
		echo "Installing:$missing"
		export DEBIAN_FRONTEND=noninteractive
		apt-get update -q
		# shellcheck disable=SC2086
		apt-get install -y -q --no-install-recommends $missing
	fi
fi

jobs=$(nproc 2>/dev/null || echo 2)
build=${SMRFS_BUILD_DIR:-$top/_build}

./autogen.sh >/dev/null
mkdir -p "$build"
cd "$build"
"$top/configure" -q

case "$mode" in
demo)
	make -s -j"$jobs"
	exec "$top/scripts/demo.sh" "$build"
	;;
test)
	log=$build/test-run.log
	{
		rc=0
		make -s -j"$jobs" distcheck DISTCHECK_CONFIGURE_FLAGS=-q 2>&1 ||
			rc=$?
		echo "$rc" >"$build/.make-status"
	} | tee "$log"
	status=$(cat "$build/.make-status")
	# The summary names a failed test; its log, which distcheck leaves
	# in its build tree, says why.
	if [ "$status" != 0 ]; then
		grep -rlE '^:test-result: (FAIL|ERROR|XPASS)' \
			--include='*.trs' "$build"/smrfs-*/_build 2>/dev/null |
			while read -r trs; do
				t=${trs%.trs}
				echo "=== ${t##*/_build/sub/}: the end of its log"
				tail -n 60 "$t.log"
			done
	fi

	# Kernel zoned devices, in a VM: the zbd backend's tests on each kind
	# of device, and the whole filesystem (with overwrites that force
	# cleaning, and fsck) on SCSI ZBC (the SMR disk path), with
	# conventional zones, and on NVMe ZNS without them, with a zone
	# capacity below the zone size and 5 open and active zones at most,
	# which the test requires smrfs to reach; with a smaller first
	# workload than make check-zoned's; and kill -9 of the daemon during a
	# workload and at failpoints on null_blk (6 cycles, where make
	# check-zoned runs 8). The whole run must stay under 20 minutes on two
	# cores: make check-zoned also runs the filesystem on null_blk (whose
	# conventional zones and writes the kills cover here), NVMe ZNS
	# without limits and null_blk with limits and 512-byte blocks. Each
	# configuration counts as one test; one whose VM could not start or
	# timed out counts as failed.
	zlog=$build/zoned-run.log
	{
		echo "=== kernel zoned devices (tests/zoned, in a VM)"
		start=$(date +%s)
		zrc=0
		# (Two makes: "all" recurses, and beside other goals in one
		# parallel make it would build the same objects twice at once.)
		if make -s -j"$jobs" all 2>&1 &&
			make -s -j"$jobs" tests/test_zbd tests/fs/ns_audit 2>&1
		then
			ZBD_DEVICES="nullb zns smr" ZBD_TIMEOUT=300 \
				sh "$top/tests/zoned/run-zbd-tests.sh" 2>&1 || zrc=1
			FS_DEVICES="smr zns-limits kill9" FS_FILL=20 \
				FS_KILL9_CYCLES=6 FS_TIMEOUT=600 \
				sh "$top/tests/zoned/run-fs-tests.sh" 2>&1 || zrc=1
		else
			echo "=== zoned: FAILED (the build for the zoned tests failed)"
			zrc=1
		fi
		echo "=== zoned tests: $(($(date +%s) - start)) s"
		echo "$zrc" >"$build/.zoned-status"
	} | tee "$zlog"
	[ "$(cat "$build/.zoned-status")" = 0 ] || status=1
	zpassed=$(grep -c '^=== [^ ]*: passed in' "$zlog" || :)
	zfailed=$(grep -cE '^=== [^ ]*: (FAILED|NOT RUN)' "$zlog" || :)
	# A run script that stopped before any configuration ran.
	[ "$(cat "$build/.zoned-status")" = 0 ] || [ "$zfailed" -gt 0 ] ||
		zfailed=1

	# A plain "N passed, N failed" closing line from automake's summaries
	# and the zoned configurations.
	passed=$(sed -n 's/^# PASS: *//p' "$log" |
		awk -v z="$zpassed" '{s+=$1} END {print s+z}')
	failed=$(sed -n 's/^# \(FAIL\|ERROR\|XPASS\): *//p' "$log" |
		awk -v z="$zfailed" '{s+=$1} END {print s+z}')
	skipped=$(sed -n 's/^# SKIP: *//p' "$log" | awk '{s+=$1} END {print s+0}')
	[ "$passed" -gt 0 ] || status=1
	[ "$failed" -eq 0 ] || status=1
	echo "$passed passed, $failed failed, $skipped skipped"
	exit $status
	;;
esac
