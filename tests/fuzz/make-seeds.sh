#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Make the seed corpus of the fuzz targets again, from real small
# filesystems formatted and filled through the library:
#
#   tests/fuzz/make-seeds.sh BUILD_DIR
#
# Replaces tests/fuzz/corpus/*/seed-* next to this script; regression
# inputs (the other files there) stay.
set -eu

BUILD=${1:?usage: make-seeds.sh BUILD_DIR}
HERE=$(cd "$(dirname "$0")" && pwd)
make -C "$BUILD" tests/fuzz/fuzz_seeds
rm -f "$HERE"/corpus/*/seed-*
mkdir -p "$HERE/corpus"
"$BUILD/tests/fuzz/fuzz_seeds" "$HERE/corpus"
du -sh "$HERE/corpus"
