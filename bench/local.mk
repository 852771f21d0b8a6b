# SPDX-License-Identifier: GPL-2.0-or-later
#
# The benchmark harness against the FUSE ceiling (bench/README.md). Scripts
# only: they run against a build directory, nothing here is compiled.

EXTRA_DIST += bench/run.sh bench/meta.py bench/report.py bench/README.md \
	bench/results bench/zoned-compare.sh bench/zoned-compare-guest.sh
