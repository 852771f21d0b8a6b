#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# A truncate into the middle of a block, and a hole punched into parts of
# blocks, rewrite those blocks. On a full filesystem whose space a delete
# has just freed (not yet committed, no background cleaner), they must
# clean and go on as a write does, not fail with ENOSPC.
. "${srcdir:-.}/tests/fs/lib.sh"
command -v fallocate >/dev/null || skip "no fallocate(1)"
M=$T/mnt

"$CTL" zloop create "$T/zl" --capacity 64M --zone-size 4M --conv-zones 2 \
	--max-open 6 >/dev/null || fail "smrfsctl zloop create"
"$MKFS" "$T/zl" >/dev/null || fail "mkfs"
mount_fs "$T/zl" "$M" gc=off,commit=3600

# full BIG: write until ENOSPC, then delete it (the space is freed by the
# next commit, or by cleaning).
full() {
	dd if=/dev/zero of="$M/big" bs=1M 2>"$T/dd.err"
	grep -q "No space left on device" "$T/dd.err" ||
		fail "dd ended without ENOSPC: $(cat "$T/dd.err")"
	rm "$M/big" || fail "rm"
}

head -c 65536 /dev/urandom >"$T/keep" || fail "random data"
cp "$T/keep" "$M/keep" || fail "cp"
for round in 1 2 3; do
	full
	truncate -s $((60000 - round)) "$M/keep" ||
		fail "round $round: truncate into a block on a full filesystem"
	full
	fallocate --punch-hole --keep-size -o $((1000 + round)) -l 5000 \
		"$M/keep" ||
		fail "round $round: punching a hole on a full filesystem"
done
python3 - "$T/keep" "$M/keep" <<'EOF' || fail "contents after the rounds"
import sys
want = bytearray(open(sys.argv[1], "rb").read())
for r in (1, 2, 3):
    del want[60000 - r:]
    want[1000 + r:6000 + r] = bytes(5000)
got = open(sys.argv[2], "rb").read()
sys.exit(0 if got == bytes(want) else 1)
EOF
umount_fs "$M"
exit 0
