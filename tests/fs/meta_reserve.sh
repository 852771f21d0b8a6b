#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# Creates and unlinks of empty files, each with an fsync, write almost no
# data but a commit's worth of metadata nodes each time; a few nodes in
# every zone stay live. Only the cleaner gives those zones back, and
# nothing woke it but data writes: on a small zoned device the commits
# filled the reserve and one failed, turning the filesystem read-only
# with under 1 MiB live. The cleaner must keep up, with the default
# policy and with gc=off (which still cleans once data has no zone left).
. "${srcdir:-.}/tests/fs/lib.sh"
FSCK=${SMRFS_FSCK:-$B/fsck/fsck.smrfs}
[ -x "$FSCK" ] || skip "$FSCK not built"
OPS=${META_RESERVE_OPS:-6000}
M=$T/mnt

for opts in commit=3600 commit=3600,gc=off; do
	note "-o $opts: $OPS creates and unlinks with fsync"
	rm -rf "$T/zl"
	"$CTL" zloop create "$T/zl" --capacity 16M --zone-size 1M \
		--conv-zones 2 --max-open 6 >/dev/null ||
		fail "smrfsctl zloop create"
	"$MKFS" "$T/zl" >/dev/null || fail "mkfs"
	mount_fs "$T/zl" "$M" "$opts"
	python3 - "$M" "$OPS" <<'PY' || fail "-o $opts: $(tail -3 "$T/daemon.err")"
import os, random, sys
d, n = sys.argv[1], int(sys.argv[2])
r = random.Random(1)
os.mkdir(d + "/keep")
for i in range(n):
    p = "%s/f%d" % (d, r.randrange(2000))
    try:
        if os.path.exists(p):
            os.unlink(p)
        else:
            fd = os.open(p, os.O_CREAT | os.O_WRONLY, 0o644)
            os.fsync(fd)
            os.close(fd)
        if i % 7 == 0:
            # Names that stay: live nodes left behind in every zone.
            os.close(os.open("%s/keep/k%d" % (d, i), os.O_CREAT, 0o644))
    except OSError as e:
        sys.exit("operation %d: %s" % (i, e))
PY
	"$CTL" stat "$M" | grep -E "cleaner" || true
	umount_fs "$M"
	"$FSCK" -n "$T/zl" >"$T/fsck.out" 2>&1 ||
		fail "fsck.smrfs -n: $(cat "$T/fsck.out")"
done
exit 0
