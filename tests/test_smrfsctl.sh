#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
#
# smrfsctl zloop: create a zoned loop directory, report it, reset and finish
# zones, and check the report against the zone files' sizes; bad usage exits
# with 2, failures with 1 and one line on stderr.
set -u

CTL=${SMRFSCTL:-./ctl/smrfsctl}
[ -x "$CTL" ] || { echo "smrfsctl not built at $CTL" >&2; exit 1; }
T=$(mktemp -d "${TMPDIR:-/tmp}/smrfs-ctl-XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT
fails=0

fail() {
	echo "FAIL: $*" >&2
	fails=$((fails + 1))
}

# expect STATUS CMD...: run CMD, check its exit status, keep its output.
expect() {
	want=$1
	shift
	"$@" >"$T/out" 2>"$T/err"
	got=$?
	[ "$got" -eq "$want" ] || fail "'$*' exited $got, expected $want: $(cat "$T/err")"
}

size() {
	stat -c %s "$1" 2>/dev/null || echo missing
}

# One line of stderr, starting with the program name.
one_error_line() {
	[ "$(wc -l <"$T/err")" -eq 1 ] || fail "$1: stderr is not one line: $(cat "$T/err")"
	grep -q '^smrfsctl: ' "$T/err" || fail "$1: stderr: $(cat "$T/err")"
}

# --- help -----------------------------------------------------------------
expect 0 "$CTL" --help
grep -q 'zloop' "$T/out" || fail "--help does not name zloop"
expect 0 "$CTL" zloop --help
grep -q 'create DIR --capacity SIZE' "$T/out" || fail "zloop --help lacks create"
grep -q -- '--preset smr|zns' "$T/out" || fail "zloop --help lacks --preset"
expect 2 "$CTL"

# --- create ---------------------------------------------------------------
D=$T/zl
expect 0 "$CTL" zloop create "$D" --capacity 8M --zone-size 1M --conv-zones 1 --max-open 2
[ "$(size "$D/cnv-000000")" = 1048576 ] || fail "cnv-000000 is $(size "$D/cnv-000000")"
for z in 1 2 3 4 5 6 7; do
	[ "$(size "$D/seq-00000$z")" = 0 ] || fail "seq-00000$z is $(size "$D/seq-00000$z")"
done
[ "$(size "$D/seq-000008")" = missing ] || fail "seq-000008 exists"
[ "$(size "$D/seq-000000")" = missing ] || fail "seq-000000 exists"
grep -q '^max_open=2$' "$D/zloop.params" || fail "zloop.params lacks max_open=2"

# --- report ---------------------------------------------------------------
expect 0 "$CTL" zloop report "$D"
[ "$(wc -l <"$T/out")" -eq 8 ] || fail "report has $(wc -l <"$T/out") lines"
line() { sed -n "$1p" "$T/out"; }
[ "$(line 1)" = "  start: 0x000000000, len 0x000800, cap 0x000800, wptr 0x000000 reset:0 non-seq:0, zcond: 0(nw) [type: 1(CONVENTIONAL)]" ] ||
	fail "zone 0: $(line 1)"
[ "$(line 2)" = "  start: 0x000000800, len 0x000800, cap 0x000800, wptr 0x000000 reset:0 non-seq:0, zcond: 1(em) [type: 2(SEQ_WRITE_REQUIRED)]" ] ||
	fail "zone 1: $(line 2)"

# Data written to zone 3 (16 KiB: the file size is the write pointer).
head -c 16384 /dev/zero >"$D/seq-000003"
expect 0 "$CTL" zloop report "$D"
[ "$(line 4)" = "  start: 0x000001800, len 0x000800, cap 0x000800, wptr 0x000020 reset:0 non-seq:0, zcond: 4(cl) [type: 2(SEQ_WRITE_REQUIRED)]" ] ||
	fail "zone 3 after 16 KiB: $(line 4)"

# --- finish and reset ----------------------------------------------------
expect 0 "$CTL" zloop finish "$D" 2
[ "$(size "$D/seq-000002")" = 1048576 ] || fail "finished seq-000002 is $(size "$D/seq-000002")"
expect 0 "$CTL" zloop report "$D"
[ "$(line 3)" = "  start: 0x000001000, len 0x000800, cap 0x000800, wptr 0x000800 reset:0 non-seq:0, zcond:14(fu) [type: 2(SEQ_WRITE_REQUIRED)]" ] ||
	fail "zone 2 after finish: $(line 3)"
expect 0 "$CTL" zloop reset "$D" 3
[ "$(size "$D/seq-000003")" = 0 ] || fail "reset seq-000003 is $(size "$D/seq-000003")"
expect 0 "$CTL" zloop report "$D"
grep -c 'zcond: 1(em)' "$T/out" | grep -qx 6 || fail "expected 6 empty zones: $(cat "$T/out")"
expect 0 "$CTL" zloop finish "$D" 5
expect 0 "$CTL" zloop reset "$D" all
for z in 2 5; do
	[ "$(size "$D/seq-00000$z")" = 0 ] || fail "after reset all seq-00000$z is $(size "$D/seq-00000$z")"
done
[ "$(size "$D/cnv-000000")" = 1048576 ] || fail "reset all touched cnv-000000"
expect 0 "$CTL" zloop open "$D" 4
expect 0 "$CTL" zloop finish "$D" 4

# --- failures: exit 1, one line ------------------------------------------
expect 1 "$CTL" zloop open "$D" 4
one_error_line "open a full zone"
expect 1 "$CTL" zloop close "$D" 6
one_error_line "close an empty zone"
expect 1 "$CTL" zloop reset "$D" 99
one_error_line "reset zone 99"
expect 1 "$CTL" zloop reset "$D" 0
one_error_line "reset a conventional zone"
expect 1 "$CTL" zloop create "$D" --capacity 8M --zone-size 1M
one_error_line "create over an existing device"
expect 1 "$CTL" zloop create "$T/bad" --capacity 8M --zone-size 3M
one_error_line "zone size not a power of two"
mkdir "$T/plain"
expect 1 "$CTL" zloop report "$T/plain"
one_error_line "report a plain directory"

# --- usage errors: exit 2 ------------------------------------------------
expect 2 "$CTL" zloop create "$T/u" --capacity 8M --bogus
one_error_line "bad option"
expect 2 "$CTL" zloop create "$T/u" --capacity 8Q
expect 2 "$CTL" zloop create "$T/u" --zone-size 1M
expect 2 "$CTL" zloop create "$T/u" --capacity 8M --preset hdd
expect 2 "$CTL" zloop create "$T/u" --capacity 8M --conv-zones -1
expect 2 "$CTL" zloop create --capacity 8M
expect 2 "$CTL" zloop frobnicate "$D"
expect 2 "$CTL" zloop reset "$D"
expect 2 "$CTL" zloop reset "$D" x1
expect 2 "$CTL" --bogus
[ -e "$T/u" ] && fail "a usage error created $T/u"

# --- presets ---------------------------------------------------------------
expect 0 "$CTL" zloop create "$T/smr" --preset smr --capacity 1G --zone-size 16M
grep -q '^conv_zones=1$' "$T/smr/zloop.params" || fail "smr preset: conv zones"
grep -q '^max_open=128$' "$T/smr/zloop.params" || fail "smr preset: max open"
[ "$(size "$T/smr/cnv-000000")" = 16777216 ] || fail "smr preset: cnv-000000"
[ "$(size "$T/smr/seq-000063")" = 0 ] || fail "smr preset: seq-000063"
expect 0 "$CTL" zloop create "$T/zns" --preset zns --capacity 64M --zone-size 8M --max-active 6
grep -q '^zone_capacity=4194304$' "$T/zns/zloop.params" || fail "zns preset: zone capacity"
grep -q '^max_active=6$' "$T/zns/zloop.params" || fail "zns preset: explicit max active"
grep -q '^conv_zones=0$' "$T/zns/zloop.params" || fail "zns preset: conv zones"
expect 0 "$CTL" zloop report "$T/zns"
[ "$(line 1)" = "  start: 0x000000000, len 0x004000, cap 0x002000, wptr 0x000000 reset:0 non-seq:0, zcond: 1(em) [type: 2(SEQ_WRITE_REQUIRED)]" ] ||
	fail "zns zone 0: $(line 1)"
expect 0 "$CTL" zloop finish "$T/zns" 7
[ "$(size "$T/zns/seq-000007")" = 8388608 ] || fail "zns finish: $(size "$T/zns/seq-000007")"
expect 0 "$CTL" zloop report "$T/zns"
[ "$(line 8)" = "  start: 0x00001c000, len 0x004000, cap 0x002000, wptr 0x002000 reset:0 non-seq:0, zcond:14(fu) [type: 2(SEQ_WRITE_REQUIRED)]" ] ||
	fail "zns zone 7 after finish: $(line 8)"

if [ "$fails" -ne 0 ]; then
	echo "$fails check(s) failed" >&2
	exit 1
fi
echo "all smrfsctl checks passed"
exit 0
