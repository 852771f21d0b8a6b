#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
#
# fsck.smrfs's progress: --progress draws a bar on standard error (phase,
# percent, items) and erases it at the end; --no-progress and a standard
# error that is not a terminal draw nothing; -CFD writes e2fsck's progress
# lines to FD; on a terminal (under script(1)) a short check stays quiet
# and --progress draws; --json stays quiet even on a terminal.
set -u

FSCK=${FSCK_SMRFS:-./fsck/fsck.smrfs}
MKFS=${MKFS_SMRFS:-./mkfs/mkfs.smrfs}
need="$FSCK $MKFS"
tag=progress
. "${srcdir:-.}/tests/fsck/lib.sh"

truncate -s 64M "$T/img" && "$MKFS" "$T/img" >/dev/null || exit 1

"$FSCK" --help >"$T/help" || fail "--help"
for w in --progress --no-progress -C; do
	grep -q -- "$w" "$T/help" || fail "--help does not name $w"
done

# Forced: one drawing (the next ones come within 100 ms, so are skipped),
# then the erase: carriage return, blanks, carriage return.
"$FSCK" --progress "$T/img" >"$T/out" 2>"$T/err" || fail "--progress: exit $?"
python3 - "$T/err" <<'PY' || fail "--progress: $(od -c "$T/err" | head)"
import re, sys
s = open(sys.argv[1], "rb").read().decode()
m = re.fullmatch(r"\r\[([#.]{24})\] +(\d+)% (\d)/5 ([a-zA-Z -]+?)(: \d+/\d+ items)? *\r( +)\r", s)
assert m, repr(s)
assert m.group(4) == "superblocks" and m.group(2) == "0", m.groups()
assert len(m.group(6)) >= len(s.split("\r")[1].rstrip()), "not erased whole"
PY
grep -q '0 problems found' "$T/out" || fail "--progress: summary: $(cat "$T/out")"
"$FSCK" -C0 "$T/img" >/dev/null 2>"$T/err" || fail "-C0: exit $?"
grep -q 'superblocks' "$T/err" || fail "-C0 draws no bar"

for args in "--no-progress" "" "--progress --no-progress"; do
	# shellcheck disable=SC2086
	"$FSCK" $args "$T/img" >/dev/null 2>"$T/err" || fail "$args: exit $?"
	[ ! -s "$T/err" ] || fail "'$args' with stderr not a terminal: $(od -c "$T/err" | head -3)"
done
"$FSCK" --json "$T/img" >/dev/null 2>"$T/err" || fail "--json: exit $?"
! grep -q '\[[#.]*\]' "$T/err" || fail "--json drew a bar"

# e2fsck's lines, for fsck(8) and systemd-fsck.
"$FSCK" -C3 "$T/img" 3>"$T/lines" >/dev/null 2>"$T/err" || fail "-C3: exit $?"
[ ! -s "$T/err" ] || fail "-C3 drew on stderr: $(cat "$T/err")"
grep -Eq "^1 0 1 $T/img\$" "$T/lines" || fail "-C3: $(cat "$T/lines")"
"$FSCK" -Cx "$T/img" >/dev/null 2>&1
[ $? -eq 16 ] || fail "-Cx is not a usage error"

# On a terminal.
if script -qec true /dev/null >/dev/null 2>&1; then
	script -qec "'$FSCK' '$T/img'" /dev/null >"$T/tty" 2>&1 ||
		fail "on a terminal: exit $?"
	grep -q '0 problems found' "$T/tty" || fail "on a terminal: $(cat "$T/tty")"
	! grep -q '\[[#.]*\]' "$T/tty" || fail "a short check drew a bar: $(od -c "$T/tty" | head)"
	script -qec "'$FSCK' --progress '$T/img'" /dev/null >"$T/tty" 2>&1
	grep -q '\[[#.]*\] *0% 1/5 superblocks' "$T/tty" ||
		fail "--progress on a terminal: $(od -c "$T/tty" | head)"
	script -qec "'$FSCK' --json '$T/img'" /dev/null >"$T/tty" 2>&1
	! grep -q '\[[#.]*\]' "$T/tty" || fail "--json drew a bar on a terminal"
else
	echo "script(1) cannot run here: terminal cases skipped"
fi

[ "$fails" -eq 0 ]
