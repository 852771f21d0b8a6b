#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# The size statfs reports is a limit, not advice: on a zoned loop directory
# and on a regular file, writes that would take more than statfs says is
# available fail with ENOSPC, overwrites of what is there still go through
# at that point, smrfsctl stat agrees with statfs, and deleting makes the
# space usable again. Three rounds, then fsck must find the device clean.
. "${srcdir:-.}/tests/fs/lib.sh"
FSCK=${SMRFS_FSCK:-$B/fsck/fsck.smrfs}
[ -x "$FSCK" ] || skip "$FSCK not built"
command -v timeout >/dev/null || skip "no timeout(1)"
M=$T/mnt

check_dev() {
	dev=$1
	mkfs_args=$2
	"$MKFS" $mkfs_args "$dev" >/dev/null || fail "mkfs $dev"
	mount_fs "$dev" "$M"
	timeout 300 python3 - "$M" "$CTL" <<'EOF' || fail "$dev: the size is not enforced"
import errno, json, os, random, subprocess, sys, time
m, ctl = sys.argv[1], sys.argv[2]
BLK = 64 << 10

def avail():
    v = os.statvfs(m)
    return v.f_bavail * v.f_frsize, v.f_blocks * v.f_frsize

# What changes the space: commits, allocations, frees handed to the
# allocator, zone resets and finishes, cleaning, and extents freed into
# the running transaction (which only the available figure shows).
QUIET = ("commits", "allocations", "bytes_freed", "zones_reset",
         "zones_finished", "cleaner_runs", "relocated_bytes",
         "size_bytes", "available_bytes")

def stat():
    return json.loads(subprocess.check_output([ctl, "stat", "--json", m]))

def agree(what):
    # statfs between two smrfsctl stat calls that show the same figures
    # must show them too. A commit or a cleaning pass (a full filesystem
    # starts the cleaner) may land in between: then ask again, but only
    # then; a difference in a quiet moment fails at once.
    for tries in range(100):
        if tries:
            time.sleep(0.1)
        s1 = stat()
        a, size = avail()
        s2 = stat()
        if any(s1.get(k) != s2.get(k) for k in QUIET):
            continue
        if s1["size_bytes"] != size or s1["available_bytes"] != a:
            sys.exit("%s: statfs says size %d, available %d; smrfsctl "
                     "stat %d, %d" % (what, size, a, s1["size_bytes"],
                                      s1["available_bytes"]))
        if tries:
            print("--- %s: the figures settled after %d tries" % (what, tries))
        return a
    sys.exit("%s: the figures kept changing for 100 tries" % what)

# fill NAME: write 64 KiB blocks until ENOSPC; returns the bytes written.
def fill(name):
    fd = os.open(os.path.join(m, name), os.O_CREAT | os.O_WRONLY, 0o644)
    done = 0
    try:
        while True:
            n = os.write(fd, bytes([done // BLK & 0xff]) * BLK)
            done += n
            if n < BLK:
                break
    except OSError as e:
        if e.errno != errno.ENOSPC:
            raise
    finally:
        os.close(fd)
    return done

total = agree("empty")
print("--- %d bytes available when empty" % total)
for rnd in range(3):
    before = agree("round %d, before" % rnd)
    wrote = fill("big")
    left = agree("round %d, full" % rnd)
    print("--- round %d: %d bytes available, %d written to ENOSPC, then %d "
          "available" % (rnd, before, wrote, left))
    # ENOSPC where statfs said: not more than it offered (but for a few
    # metadata blocks that commits gave back meanwhile), and little less
    # (the file's own metadata counts too).
    if wrote > before + 4 * BLK:
        sys.exit("round %d: wrote %d bytes, statfs offered %d"
                 % (rnd, wrote, before))
    if wrote < before - max(before // 50, 4 * BLK):
        sys.exit("round %d: ENOSPC after %d bytes, statfs offered %d"
                 % (rnd, wrote, before))
    if left >= BLK:
        sys.exit("round %d: ENOSPC with %d bytes available" % (rnd, left))
    # A write of one block more than statfs now offers fails.
    fd = os.open(os.path.join(m, "small"), os.O_CREAT | os.O_WRONLY, 0o644)
    try:
        n = os.write(fd, bytes(left + 4096))
        if n > left:
            sys.exit("round %d: wrote %d bytes, statfs offered %d"
                     % (rnd, n, left))
    except OSError as e:
        if e.errno != errno.ENOSPC:
            raise
    finally:
        os.close(fd)
    os.unlink(os.path.join(m, "small"))
    # Overwrites add nothing: they go through on the full filesystem.
    r = random.Random(rnd)
    fd = os.open(os.path.join(m, "big"), os.O_RDWR)
    for i in range(64):
        off = r.randrange(wrote // BLK) * BLK
        os.pwrite(fd, b"\xa5" * BLK, off)
        if os.pread(fd, BLK, off) != b"\xa5" * BLK:
            sys.exit("round %d: overwrite at %d reads back wrong"
                     % (rnd, off))
    os.close(fd)
    os.unlink(os.path.join(m, "big"))
    back = agree("round %d, deleted" % rnd)
    if back < total * 95 // 100:
        sys.exit("round %d: %d bytes available after the delete, %d when "
                 "empty" % (rnd, back, total))
EOF
	umount_fs "$M"
	"$FSCK" -n "$dev" >"$T/fsck.out" 2>&1 ||
		fail "fsck.smrfs -n $dev: $(cat "$T/fsck.out")"
}

"$CTL" zloop create "$T/zl" --capacity 128M --zone-size 4M --conv-zones 2 \
	--max-open 6 >/dev/null || fail "smrfsctl zloop create"
check_dev "$T/zl" ""
truncate -s 64M "$T/img" || fail "truncate"
check_dev "$T/img" ""
exit 0
