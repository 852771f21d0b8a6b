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
#                               integration tests and the release tarball)
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
libcunit1-dev libblkid-dev attr python3"

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
	# A plain "N passed, N failed" closing line from automake's summaries.
	passed=$(sed -n 's/^# PASS: *//p' "$log" | awk '{s+=$1} END {print s+0}')
	failed=$(sed -n 's/^# \(FAIL\|ERROR\|XPASS\): *//p' "$log" |
		awk '{s+=$1} END {print s+0}')
	skipped=$(sed -n 's/^# SKIP: *//p' "$log" | awk '{s+=$1} END {print s+0}')
	[ "$passed" -gt 0 ] || status=1
	[ "$failed" -eq 0 ] || status=1
	echo "$passed passed, $failed failed, $skipped skipped"
	exit $status
	;;
esac
