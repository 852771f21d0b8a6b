#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
#
# fsck.smrfs from the command line: --help, usage errors (16), a device
# that is missing or not smrfs (8), a clean image made by mkfs.smrfs on a
# regular file and on a zoned loop directory (0, with -n, -y and --scrub),
# the --json summary, and a damaged superblock copy: -n finds it (4), -y
# fixes it (1), and -n is clean again (0).
set -u

FSCK=${FSCK_SMRFS:-./fsck/fsck.smrfs}
MKFS=${MKFS_SMRFS:-./mkfs/mkfs.smrfs}
CTL=${SMRFSCTL:-./ctl/smrfsctl}
need="$FSCK $MKFS $CTL"
tag=fsck
. "${srcdir:-.}/tests/fsck/lib.sh"

# expect STATUS CMD...: run CMD, check its exit status, keep its output.
expect() {
	want=$1
	shift
	"$@" >"$T/out" 2>"$T/err"
	got=$?
	[ "$got" -eq "$want" ] ||
		fail "'$*' exited $got, expected $want: $(cat "$T/out" "$T/err")"
}

expect 0 "$FSCK" --help
grep -q 'Usage: fsck.smrfs' "$T/out" || fail "--help: $(cat "$T/out")"
expect 16 "$FSCK"
expect 16 "$FSCK" -n -y "$T/img"
expect 16 "$FSCK" --bogus "$T/img"
expect 16 "$FSCK" "$T/a" "$T/b"
expect 8 "$FSCK" -n "$T/missing"
grep -q 'cannot open' "$T/out" || fail "missing device: $(cat "$T/out")"
truncate -s 64M "$T/img" || exit 1
expect 8 "$FSCK" -n "$T/img"

# A regular file.
expect 0 "$MKFS" "$T/img"
expect 0 "$FSCK" -n "$T/img"
expect 0 "$FSCK" -y -f "$T/img"
expect 0 "$FSCK" -n --scrub -v "$T/img"
expect 0 "$FSCK" -n --json "$T/img"
python3 - "$T/out" <<'PY' || fail "--json: $(cat "$T/out")"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["exit_code"] == 0 and d["problems"] == 0 and d["fixed"] == 0, d
assert d["allocator"] == "flash", d
c = d["checked"]
assert c["inodes"] == 1 and c["nodes"] >= 1 and c["generation"] >= 2, d
assert c["rmap_entries"] == 0, d
PY

# The second superblock copy, damaged.
printf 'XXXX' | dd of="$T/img" bs=1 seek=4200 conv=notrunc 2>/dev/null
expect 4 "$FSCK" -n "$T/img"
grep -q 'superblock copy at byte 4096 is damaged (would rewrite' "$T/out" ||
	fail "damaged copy not named: $(cat "$T/out")"
expect 4 "$FSCK" "$T/img"
expect 1 "$FSCK" -y "$T/img"
expect 0 "$FSCK" -n "$T/img"
expect 0 "$FSCK" -p --json "$T/img"

# A zoned loop directory.
expect 0 "$CTL" zloop create --capacity 64M --zone-size 4M "$T/zl"
expect 0 "$MKFS" "$T/zl"
expect 0 "$FSCK" -n --json "$T/zl"
grep -q '"allocator": "zoned"' "$T/out" || fail "zoned: $(cat "$T/out")"
expect 0 "$FSCK" -y "$T/zl"

[ "$fails" -eq 0 ] || { echo "$fails failure(s)" >&2; exit 1; }
echo "fsck.smrfs command line: all passed"
