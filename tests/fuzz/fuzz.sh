#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
#
# The fuzz targets (docs/design/fuzzing.md). Run from the build directory:
#
#   tests/fuzz/fuzz.sh [TARGET...]
#
# Every target first runs its committed corpus once as a plain program
# (tests/fuzz/fuzz_*: any compiler); this part always runs. Then, where the
# libFuzzer programs were built (tests/fuzz/lf/fuzz_*: configure found
# clang; make check sets FUZZ_LF=no when this configuration did not build
# them), each fuzzes for FUZZ_SECS seconds (default 20) from that corpus,
# with the random seed FUZZ_SEED (default 1, so that make check runs the same
# inputs on every machine, as far as it gets in that time; 0 = a new seed
# each run, for long runs). New inputs go to a scratch directory, or to
# FUZZ_KEEP/TARGET when set;
# a crash, hang (FUZZ_TIMEOUT, default 10 s per input), leak or sanitizer
# report fails the run and leaves the input in FUZZ_KEEP or the current
# directory as TARGET-crash-*. For a long run:
#
#   FUZZ_SECS=600 FUZZ_SEED=0 FUZZ_KEEP=/some/dir tests/fuzz/fuzz.sh fuzz_image
set -u

srcdir=${srcdir:-.}
CORPUS=$srcdir/tests/fuzz/corpus
SECS=${FUZZ_SECS:-20}
SEED=${FUZZ_SEED:-1}
TIMEOUT=${FUZZ_TIMEOUT:-10}
TARGETS=${*:-fuzz_super fuzz_node fuzz_alloc fuzz_ns fuzz_image fuzz_log}
T=$(mktemp -d "${TMPDIR:-/tmp}/smrfs-fuzz-XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT
fails=0

for t in $TARGETS; do
	[ -d "$CORPUS/$t" ] || { echo "FAIL: no corpus $CORPUS/$t" >&2; exit 1; }
	[ -x "tests/fuzz/$t" ] || { echo "FAIL: not built: tests/fuzz/$t" >&2; exit 1; }
	if TMPDIR=$T "tests/fuzz/$t" "$CORPUS/$t"; then
		echo "PASS: $t: corpus"
	else
		echo "FAIL: $t: corpus" >&2
		fails=$((fails + 1))
	fi
done

for t in $TARGETS; do
	lf=tests/fuzz/lf/$t
	[ "${FUZZ_LF:-yes}" != no ] && [ -x "$lf" ] || continue
	out=${FUZZ_KEEP:-$T}/$t
	art=${FUZZ_KEEP:-.}/$t-
	mkdir -p "$out" || exit 1
	if TMPDIR=$T "$lf" -max_total_time="$SECS" -seed="$SEED" \
		-timeout="$TIMEOUT" \
		-rss_limit_mb=2048 -max_len=262144 -print_final_stats=1 \
		-artifact_prefix="$art" "$out" "$CORPUS/$t" \
		>"$T/$t.log" 2>&1; then
		echo "PASS: $t: fuzzed ${SECS}s:" \
			"$(grep -E '^stat::number_of_executed_units' "$T/$t.log" |
			   sed 's/.*: *//') execs," \
			"$(grep -E '#[0-9]+[[:space:]]+DONE' "$T/$t.log" | grep -o 'cov: [0-9]*')"
	else
		tail -n 60 "$T/$t.log" >&2
		echo "FAIL: $t: fuzzing found a problem (input: $art*)" >&2
		fails=$((fails + 1))
	fi
done
[ "$fails" -eq 0 ]
