#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# The fsync log through a mount (-o fsync=log, commits only an hour apart):
# files written and fsync'd (twelve fsyncs: all but the first are
# records, as the ring holds 13), then kill -9 of the daemon, so that only log
# records hold them. fsck.smrfs -n reports the records as pending, not as
# damage; a read-only mount replays them in memory only: every fsync'd
# byte is there, and nothing is written; a read-write mount replays them
# for good: every fsync'd byte is there, and fsck is clean. Then the same with fsck.smrfs -y doing the replay. On a regular
# file (ring of checkpoint slots) and a zoned loop directory without
# conventional zones (the zone log).
. "${srcdir:-.}/tests/fs/lib.sh"
FSCK=${SMRFS_FSCK:-$B/fsck/fsck.smrfs}
[ -x "$FSCK" ] || skip "$FSCK not built"
M=$T/mnt

# write_and_kill DEV: files written and fsync'd, a few overwritten and
# fsync'd again; then the daemon dies. Their contents go to $T/want.
write_and_kill() {
	mount_fs "$1" "$M" fsync=log,commit=3600
	python3 - "$M" "$T/want" <<'PY' || fail "the workload"
import os, sys, random
m, want = sys.argv[1], sys.argv[2]
rnd = random.Random(7)
files = {}
for i in range(6):
    p = os.path.join(m, "f%d" % i)
    data = bytearray(rnd.randbytes(rnd.randrange(1, 300000)))
    with open(p, "wb") as f:
        f.write(data)
        os.fsync(f.fileno())
    files[p] = data
for r in range(6):
    p = os.path.join(m, "f%d" % rnd.randrange(6))
    data = files[p]
    off = rnd.randrange(len(data) + 4096)
    chunk = rnd.randbytes(rnd.randrange(1, 8192))
    fd = os.open(p, os.O_WRONLY)
    os.pwrite(fd, chunk, off)
    if off > len(data):
        data.extend(b"\0" * (off - len(data)))
    data[off:off + len(chunk)] = chunk
    if r % 3 == 1:
        cut = rnd.randrange(len(data) + 1)
        os.ftruncate(fd, cut)
        del data[cut:]
    os.fsync(fd)
    os.close(fd)
with open(want, "w") as f:
    for p, d in sorted(files.items()):
        f.write("%s %d %s\n" % (os.path.basename(p), len(d),
                                 __import__("hashlib").sha256(d).hexdigest()))
PY
	kill -KILL "$DAEMON"
	wait "$DAEMON"
	fusermount3 -u "$M" 2>/dev/null || fusermount3 -uz "$M" ||
		fail "cannot remove the dead mount"
}

# check_files: the mount at $M holds exactly $T/want.
check_files() {
	python3 - "$M" "$T/want" <<'PY' || fail "$1: fsync'd data lost or wrong"
import os, sys, hashlib
m, want = sys.argv[1], sys.argv[2]
bad = 0
for line in open(want):
    name, size, h = line.split()
    d = open(os.path.join(m, name), "rb").read()
    if len(d) != int(size) or hashlib.sha256(d).hexdigest() != h:
        print("%s: %d bytes, want %s" % (name, len(d), size))
        bad += 1
sys.exit(1 if bad else 0)
PY
}

run() { # run KIND DEV
	note "$1: fsync, kill -9, fsck -n, read-only mount, mount"
	write_and_kill "$2"
	"$FSCK" -n "$2" >"$T/fsck.out" 2>&1 ||
		fail "$1: fsck -n with pending records: $(cat "$T/fsck.out")"
	grep -q "fsync log record.*pending" "$T/fsck.out" ||
		fail "$1: fsck -n does not report the pending records: $(cat "$T/fsck.out")"
	mount_fs "$2" "$M" ro
	grep -q "replayed in memory only (read-only)" "$T/daemon.err" ||
		fail "$1: a read-only mount did not replay in memory: $(cat "$T/daemon.err")"
	check_files "$1, read-only"
	umount_fs "$M"
	mount_fs "$2" "$M"
	grep -q "replayed" "$T/daemon.err" ||
		fail "$1: the mount did not replay: $(cat "$T/daemon.err")"
	check_files "$1"
	umount_fs "$M"
	"$FSCK" -n "$2" >"$T/fsck.out" 2>&1 ||
		fail "$1: fsck -n after the replay: $(cat "$T/fsck.out")"

	note "$1: fsync, kill -9, fsck -y replays"
	write_and_kill "$2"
	"$FSCK" -y "$2" >"$T/fsck.out" 2>&1 ||
		fail "$1: fsck -y: $(cat "$T/fsck.out")"
	"$FSCK" -n "$2" >"$T/fsck.out" 2>&1 ||
		fail "$1: fsck -n after fsck -y: $(cat "$T/fsck.out")"
	grep -q "pending" "$T/fsck.out" &&
		fail "$1: records still pending after fsck -y"
	mount_fs "$2" "$M"
	check_files "$1"
	umount_fs "$M"
}

truncate -s 256M "$T/img" || fail "truncate"
"$MKFS" "$T/img" >/dev/null || fail "mkfs file"
run file "$T/img"

"$CTL" zloop create "$T/zl" --capacity 256M --zone-size 16M \
	--max-open 5 >/dev/null || fail "smrfsctl zloop create"
"$MKFS" "$T/zl" >/dev/null || fail "mkfs zloop"
run zloop "$T/zl"
echo "fsync_log: ok"
exit 0
