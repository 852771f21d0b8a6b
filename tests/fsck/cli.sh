#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
#
# fsck.smrfs from the command line: --help, usage errors (16), a device
# that is missing or not smrfs (8), a clean image made by mkfs.smrfs on a
# regular file and on a zoned loop directory (0, with -n, -y and --scrub),
# untouched by a refused mkfs over it, a --uuid it does not use,
# the --json summary, and a damaged superblock copy: -n finds it (4), a
# SIGINT or SIGTERM cancels (32, nothing written), -y fixes it (1), and -n
# is clean again (0); both copies wiped: rebuilt (1), but not over another
# filesystem (8); a damaged data area: each error printed once, and -n
# counts every problem as left; a device held by a program that mounts
# nothing is waited for.
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
expect 16 "$FSCK" -n -a "$T/img"
expect 16 "$FSCK" --bogus "$T/img"
expect 16 "$FSCK" "$T/a" "$T/b"
expect 8 "$FSCK" -n "$T/missing"
grep -q 'cannot open' "$T/out" || fail "missing device: $(cat "$T/out")"
truncate -s 64M "$T/img" || exit 1
expect 8 "$FSCK" -n "$T/img"

# A regular file. A format refused (an unknown allocator) leaves it as it
# was: discarded nothing, wrote nothing.
expect 0 "$MKFS" "$T/img"
cp "$T/img" "$T/img.before" || exit 1
expect 1 "$MKFS" -f --alloc bogus "$T/img"
cmp -s "$T/img" "$T/img.before" || fail "a refused mkfs changed the image"
rm -f "$T/img.before"
expect 0 "$FSCK" -n "$T/img"
expect 0 "$FSCK" -y -f "$T/img"
# --uuid: not a UUID is a usage error; one that is not the filesystem's,
# where the superblock names it, is unused and said to be.
expect 16 "$FSCK" -n --uuid 1234 "$T/img"
expect 0 "$FSCK" -n --uuid 2c9a1f0e-57d4-4b8e-9a61-0d3b7c5e8f42 "$T/img"
grep -q 'the UUID given (2c9a1f0e-57d4-4b8e-9a61-0d3b7c5e8f42) is not' \
	"$T/out" || fail "--uuid not the filesystem's: $(cat "$T/out")"
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
# Cancelled: the signal is already pending (blocked, then unblocked by
# fsck once it handles it), so it is there at the first phase. Status 32
# and nothing written, even with -y.
signalled() {
	sig=$1
	shift
	python3 -c 'import os, signal, sys
s = getattr(signal, sys.argv[1])
signal.pthread_sigmask(signal.SIG_BLOCK, [s])
os.kill(os.getpid(), s)
os.execv(sys.argv[2], sys.argv[2:])' "$sig" "$@"
}
cp "$T/img" "$T/img.before" || exit 1
for sig in SIGINT SIGTERM; do
	expect 32 signalled $sig "$FSCK" -y "$T/img"
	grep -q 'cancelled: nothing was written' "$T/out" ||
		fail "$sig: $(cat "$T/out")"
	cmp -s "$T/img" "$T/img.before" || fail "$sig: the image changed"
done
expect 32 signalled SIGINT "$FSCK" -n --json "$T/img"
grep -q '"exit_code": 32' "$T/out" || fail "cancelled --json: $(cat "$T/out")"
rm -f "$T/img.before"
# -a: e2fsck's old name of -p, which fsck(8) passes on.
expect 1 "$FSCK" -a "$T/img"
expect 0 "$FSCK" -n "$T/img"
expect 0 "$FSCK" -p --json "$T/img"

# Both superblock copies wiped (the first 64 KiB zeroed): not "not smrfs",
# but damage; rebuilt from the device and the newest checkpoint record.
# Under another filesystem's signature (old smrfs records left behind by
# its mkfs) nothing is rebuilt over it.
cp "$T/img" "$T/img.smrfs" || exit 1
dd if=/dev/zero of="$T/img" bs=64k count=1 conv=notrunc 2>/dev/null
expect 1 "$CTL" stat "$T/img"
grep -q 'holds smrfs checkpoints' "$T/err" ||
	fail "stat of wiped superblocks: $(cat "$T/err")"
expect 4 "$FSCK" -n "$T/img"
cat "$T/out" "$T/err" | grep -q 'superblock rebuilt from the device' ||
	fail "no rebuild offered: $(cat "$T/out" "$T/err")"
expect 1 "$FSCK" -y "$T/img"
expect 0 "$FSCK" -n "$T/img"
if command -v mkfs.ext4 >/dev/null; then
	truncate -s 16M "$T/ext4" && mkfs.ext4 -q -F "$T/ext4" || exit 1
	cp "$T/img.smrfs" "$T/img" || exit 1
	dd if="$T/ext4" of="$T/img" bs=8k count=1 conv=notrunc 2>/dev/null
	expect 8 "$FSCK" -y "$T/img"
	cat "$T/out" "$T/err" | grep -q 'holds a filesystem of type ext4' ||
		fail "ext4 not named: $(cat "$T/out" "$T/err")"
	cmp -s -n 8192 "$T/img" "$T/ext4" || fail "ext4's superblock changed"
	rm -f "$T/ext4"
fi
cp "$T/img.smrfs" "$T/img" && rm -f "$T/img.smrfs" || exit 1

# The start of the data area overwritten (tree nodes and the allocator
# state of every checkpoint): each error is printed once, though several
# phases meet each damaged block, and -n counts every problem as left.
python3 -c 'import sys
f = open(sys.argv[1], "r+b")
f.seek(4 << 20)
f.write(b"\x5a" * (1 << 20))' "$T/img" || exit 1
expect 4 "$FSCK" -n "$T/img"
grep -q 'corruption at byte' "$T/out" || fail "no corruption: $(cat "$T/out")"
dup=$(grep -E 'error:|warning:' "$T/out" | sort | uniq -d)
[ -z "$dup" ] || fail "printed more than once: $dup"
expect 4 "$FSCK" -n --json "$T/img"
python3 - "$T/out" <<'PY' || fail "-n --json: $(cat "$T/out")"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["exit_code"] == 4 and d["problems"] > 0, d
assert d["remaining"] == d["problems"] and d["fixed"] == 0, d
PY

# A zoned loop directory.
expect 0 "$CTL" zloop create --capacity 64M --zone-size 4M "$T/zl"
expect 0 "$MKFS" "$T/zl"
expect 0 "$FSCK" -n --json "$T/zl"
grep -q '"allocator": "zoned"' "$T/out" || fail "zoned: $(cat "$T/out")"
expect 0 "$FSCK" -y "$T/zl"

# Held by a program that mounts nothing (as the daemon of an unmount is
# while it writes its last commit): fsck waits until it lets go.
if command -v flock >/dev/null; then
	flock "$T/zl" sleep 2 &
	holder=$!
	sleep 0.5
	expect 0 "$FSCK" -n "$T/zl"
	grep -q 'waiting up to' "$T/out" "$T/err" ||
		fail "no wait for the holder: $(cat "$T/out" "$T/err")"
	wait "$holder"
fi

[ "$fails" -eq 0 ] || { echo "$fails failure(s)" >&2; exit 1; }
echo "fsck.smrfs command line: all passed"
