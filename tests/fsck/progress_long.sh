#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
#
# fsck.smrfs's progress on a check that takes a while: a filesystem holding
# 64 MiB of file data and a file of 40,000 one-block extents, written
# through a mount, checked with --scrub (which reads all of it). --progress redraws the bar as the check goes
# (several drawings if the check takes 200 ms or more, the walk's items
# counted up, the percentage never going back) and erases it at the end; -CFD writes e2fsck's lines with the
# same counts; on a terminal the bar appears by itself once the check has
# run for half a second.
. "${srcdir:-.}/tests/fs/lib.sh"
FSCK=${SMRFS_FSCK:-$B/fsck/fsck.smrfs}
[ -x "$FSCK" ] || skip "$FSCK not built"
IMG=$T/img
M=$T/mnt

truncate -s 512M "$IMG" || fail "truncate"
"$MKFS" "$IMG" >/dev/null || fail "mkfs"
mount_fs "$IMG" "$M"
mkdir "$M/d" || fail "mkdir"
for i in 0 1 2 3 4 5 6 7; do
	echo "$i" >"$M/d/small-$i" || fail "small files"
done
dd if=/dev/zero of="$M/big" bs=1M count=64 status=none || fail "dd"
# Every other block of a file: 40,000 extent items, each its own read
# for --scrub, so that the walk takes a while however fast the data is read.
python3 - "$M/holes" <<'PY' || fail "the file with holes"
import os, sys
fd = os.open(sys.argv[1], os.O_CREAT | os.O_WRONLY, 0o644)
block = b"x" * 4096
for i in range(40000):
    os.pwrite(fd, block, i * 8192)
os.close(fd)
PY
umount_fs "$M"

note "--progress --scrub"
start=$(date +%s%N)
"$FSCK" --progress --scrub "$IMG" >"$T/out" 2>"$T/err" || fail "--progress: exit $?"
ms=$((($(date +%s%N) - start) / 1000000))
echo "the check took $ms ms"
grep -q '0 problems found' "$T/out" || fail "summary: $(cat "$T/out")"
python3 - "$T/err" "$ms" <<'PY' || fail "--progress: $(od -c "$T/err" | head -20)"
import re, sys
s = open(sys.argv[1], "rb").read().decode()
# Drawings and erasures (blanks, before each message and at the end) are
# separated by carriage returns.
parts = [p for p in s.split("\r") if p]
assert parts[-1].strip() == "", "not erased at the end: %r" % parts[-1]
bar = re.compile(r"\[([#.]{24})\] +(\d+)% (\d)/5 ([a-zA-Z -]+?)(: (\d+)/(\d+) items)? *$")
draws = [bar.match(p) for p in parts if p.strip()]
assert all(draws), [p for p in parts if p.strip() and not bar.match(p)]
# At most one drawing per 100 ms, the first at once: a check of 200 ms
# has at least two, and the later ones fall in the walk, which reads the
# data and takes most of the time.
long = int(sys.argv[2]) >= 200
assert len(draws) >= (2 if long else 1), "drawn %d times" % len(draws)
pct = [int(m.group(2)) for m in draws]
assert pct == sorted(pct), "the percentage went back: %s" % pct
walk = [(int(m.group(6)), int(m.group(7))) for m in draws if m.group(6)]
assert walk or not long, "the walk's items were never shown: %r" % s
assert all(d <= t for d, t in walk), walk
assert [d for d, t in walk] == sorted(d for d, t in walk), walk
print("%d drawings, %d in the walk, %s%%" % (len(draws), len(walk), pct))
PY

note "-C3 --scrub"
"$FSCK" -C3 --scrub "$IMG" 3>"$T/lines" >/dev/null 2>"$T/err" || fail "-C3: exit $?"
[ ! -s "$T/err" ] || fail "-C3 drew on stderr: $(cat "$T/err")"
awk -v dev="$IMG" '
	$4 != dev || $2 > $3 || $1 < pass || ($1 == pass && $2 < done) { bad = 1 }
	{ pass = $1; done = $2; n++ }
	$1 == 4 && $2 > 0 { walk++ }
	END { exit bad || n < 1 || (long && !walk) }' long=$((ms >= 200)) "$T/lines" ||
	fail "-C3 lines: $(cat "$T/lines")"

# On a terminal the bar waits half a second: a check that took longer than
# that (with a margin for starting script(1)) must have drawn it.
if script -qec true /dev/null >/dev/null 2>&1; then
	note "on a terminal"
	start=$(date +%s%N)
	script -qec "'$FSCK' --scrub '$IMG'" /dev/null >"$T/tty" 2>&1 ||
		fail "on a terminal: exit $?"
	ms=$((($(date +%s%N) - start) / 1000000))
	grep -q '0 problems found' "$T/tty" || fail "on a terminal: $(cat "$T/tty")"
	if [ "$ms" -lt 800 ]; then
		echo "the check took $ms ms, too quick for the bar's delay: not checked"
	elif ! grep -q '\[[#.]*\] *[0-9]*% [1-5]/5' "$T/tty"; then
		fail "a check of $ms ms on a terminal drew no bar: $(od -c "$T/tty" | head)"
	fi
else
	echo "script(1) cannot run here: the terminal case is skipped"
fi
exit 0
