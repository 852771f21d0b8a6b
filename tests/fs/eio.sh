#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# I/O errors under a live mount, through the test build of the daemon that
# has the fault device under the filesystem (tests/fs/fault_daemon.h):
#  - a failed read, and a data block whose checksum does not match, give
#    EIO to the caller; the filesystem goes on;
#  - a failed metadata write or flush turns the filesystem read-only: the
#    fsync that needed it fails with EIO, later changes get EROFS, reads go
#    on, the log says so once; after the fault clears, a remount finds
#    everything committed before it, fsck.smrfs finds nothing, and writes
#    work again;
#  - failed zone resets lose nothing and do not stop the filesystem: the
#    zones are reset later.
. "${srcdir:-.}/tests/fs/lib.sh"
FAULTD=${SMRFS_FAULT_MOUNT:-$B/tests/mount_fault}
FSCK=${SMRFS_FSCK:-$B/fsck/fsck.smrfs}
[ -x "$FAULTD" ] || skip "$FAULTD not built"
[ -x "$FSCK" ] || skip "$FSCK not built"
NORMAL=$MOUNT
Z=$T/zl
M=$T/mnt

# op WHAT PATH [ARG]: do one operation, print OK or the errno's name.
op() {
	python3 - "$@" <<'EOF'
import errno, hashlib, os, sys
what, p = sys.argv[1], sys.argv[2]
try:
    if what == "read":
        with open(p, "rb") as f:
            print(hashlib.sha256(f.read()).hexdigest())
        sys.exit(0)
    elif what == "write":  # write ARG bytes of random data, fsync, print sha
        data = os.urandom(int(sys.argv[3]))
        fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        done = 0
        while done < len(data):
            done += os.write(fd, data[done:])
        os.fsync(fd)
        os.close(fd)
        print(hashlib.sha256(data).hexdigest())
        sys.exit(0)
    elif what == "write-close":  # write ARG bytes, close (no fsync)
        fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            os.write(fd, os.urandom(int(sys.argv[3])))
        finally:
            os.close(fd)
    elif what == "write-peek-close":  # as write-close, with the file
        # opened and closed read-only in between: that close has no
        # write to report (else it prints PEEK- and its error)
        fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            os.write(fd, os.urandom(int(sys.argv[3])))
            try:
                os.close(os.open(p, os.O_RDONLY))
            except OSError as e:
                print("PEEK-" + errno.errorcode.get(e.errno, str(e.errno)))
                sys.exit(0)
        finally:
            os.close(fd)
    elif what == "create":
        os.close(os.open(p, os.O_WRONLY | os.O_CREAT, 0o644))
    elif what == "mkdir":
        os.mkdir(p)
    elif what == "unlink":
        os.unlink(p)
    elif what == "fsync":
        fd = os.open(p, os.O_RDONLY)
        os.fsync(fd)
        os.close(fd)
    print("OK")
except OSError as e:
    print(errno.errorcode.get(e.errno, str(e.errno)))
EOF
}

# expect WANT WHAT PATH [ARG]: op must give WANT.
expect() {
	want=$1
	shift
	got=$(op "$@")
	[ "$got" = "$want" ] || fail "$*: $got, expected $want"
}

fault_mount() { # fault_mount RULE [OPTS]
	MOUNT=$FAULTD
	SMRFS_FAULT=$1 mount_fs "$Z" "$M" "${2:-commit=3600}"
	MOUNT=$NORMAL
}

# fault_signal USR1|USR2: arm or clear the rule, and wait until the daemon
# says it did.
fault_signal() {
	case $1 in USR1) what="rule armed" ;; *) what="rule cleared" ;; esac
	before=$(grep -c "fault device: $what" "$T/daemon.err")
	kill -"$1" "$DAEMON" || fail "kill -$1"
	i=0
	while [ "$(grep -c "fault device: $what" "$T/daemon.err")" -le "$before" ]; do
		i=$((i + 1))
		[ $i -le 100 ] || fail "the daemon did not say: $what"
		sleep 0.05
	done
}

fsck_clean() {
	"$FSCK" -n "$@" "$Z" >"$T/fsck.out" 2>&1 ||
		fail "fsck.smrfs -n $*: $(cat "$T/fsck.out")"
}

# ------------------------------------------------------------------------
note "failed reads give EIO; the device back, the data reads again"
make_zloop "$Z"
"$MKFS" "$Z" >/dev/null || fail "mkfs"
mount_fs "$Z" "$M"
sum=$(op write "$M/f" 1048576)
umount_fs "$M"
# A fresh mount: nothing of the file is in the kernel's page cache.
fault_mount reads
expect "$sum" read "$M/f"
umount_fs "$M"
fault_mount reads
fault_signal USR1
expect EIO read "$M/f"
fault_signal USR2
expect "$sum" read "$M/f"
expect OK create "$M/after-reads"
umount_fs "$M"

# ------------------------------------------------------------------------
note "a data block that does not match its checksum gives EIO"
# Find the file's second 4 KiB block in the zone files and flip a byte.
mount_fs "$Z" "$M"
dd if="$M/f" of="$T/needle" bs=4096 skip=1 count=1 2>/dev/null
umount_fs "$M"
python3 - "$Z" "$T/needle" flip <<'EOF' >"$T/where" || fail "data block not found"
import os, sys
z, needle = sys.argv[1], open(sys.argv[2], "rb").read()
for n in sorted(os.listdir(z)):
    p = os.path.join(z, n)
    if not n.startswith(("cnv-", "seq-")):
        continue
    with open(p, "rb") as f:
        data = f.read()
    at = data.find(needle)
    if at >= 0:
        with open(p, "r+b") as f:
            f.seek(at + 100)
            f.write(bytes([data[at + 100] ^ 0xff]))
        print(p, at + 100)
        sys.exit(0)
sys.exit(1)
EOF
mount_fs "$Z" "$M"
expect EIO read "$M/f"
grep -q "checksum mismatch" "$T/daemon.err" ||
	fail "no checksum message: $(cat "$T/daemon.err")"
umount_fs "$M"
"$FSCK" -n --scrub "$Z" >"$T/fsck.out" 2>&1 &&
	fail "fsck --scrub did not see the damaged block"
# Put the byte back: the file reads again.
read -r zf at <"$T/where"
python3 -c "import sys
with open(sys.argv[1], 'r+b') as f:
    f.seek(int(sys.argv[2])); b = f.read(1); f.seek(int(sys.argv[2]))
    f.write(bytes([b[0] ^ 0xff]))" "$zf" "$at"
fsck_clean --scrub
mount_fs "$Z" "$M"
expect "$sum" read "$M/f"
umount_fs "$M"

# ------------------------------------------------------------------------
# After AFTER writes pass. A commit that creates a file writes three
# times: its nodes, the allocator state, the checkpoint record; each fails
# in turn. Then each of its two flushes (before and after the checkpoint
# record) fails. With the fsync log, the fsync writes one record and
# flushes once: the record's write fails, then its flush.
for case in commit:writes:0 commit:writes:1 commit:writes:2 \
	commit:flushes:0 commit:flushes:1 log:writes:0 log:flushes:0; do
	mode=${case%%:*}
	rule=${case#*:}
	after=${rule#*:}
	[ "${rule%:*}" = writes ] || after=f$after
	after=$mode-$after
	note "failed $rule (fsync=$mode): read-only, nothing committed lost"
	fault_mount "$rule" "commit=3600,fsync=$mode"
	kept=$(op write "$M/kept-$after" 20000)
	expect OK mkdir "$M/dir-$after"
	expect OK fsync "$M/dir-$after"
	fault_signal USR1
	if [ "${after#*-}" = 0 ]; then
		# A data write fails at once: the write, its fsync or
		# (answered before its data went out) its close says so.
		expect EIO write "$M/lost-data" 8192
		expect EIO write-close "$M/lost-data-2" 8192
		# Not a reader's close: it has nothing written to report.
		expect EIO write-peek-close "$M/lost-data-3" 8192
	fi
	expect OK create "$M/lost-$after"
	# The commit this fsync needs cannot be written.
	expect EIO fsync "$M"
	expect EROFS create "$M/refused-$after"
	expect EROFS mkdir "$M/dir-$after/refused"
	expect EROFS unlink "$M/kept-$after"
	expect EIO fsync "$M"
	expect "$kept" read "$M/kept-$after"
	expect "$sum" read "$M/f"
	n=$(grep -c "read-only" "$T/daemon.err")
	[ "$n" -eq 1 ] || fail "read-only said $n times: $(cat "$T/daemon.err")"
	fusermount3 -u "$M" || fail "unmount of the read-only filesystem"
	wait "$DAEMON"
	[ $? -ne 0 ] || fail "daemon exit 0 after losing changes"
	grep -q "last commit failed" "$T/daemon.err" ||
		fail "unmount did not say changes were lost: $(cat "$T/daemon.err")"
	# The fault cleared: everything committed is there.
	fsck_clean
	mount_fs "$Z" "$M"
	expect "$kept" read "$M/kept-$after"
	expect "$sum" read "$M/f"
	[ -d "$M/dir-$after" ] || fail "committed directory lost"
	expect OK create "$M/after-$after"
	expect OK fsync "$M"
	umount_fs "$M"
	fsck_clean
done

# ------------------------------------------------------------------------
note "failed zone resets: nothing lost, the zones are reset later"
rm -rf "$Z"
# Small zones, so that overwrites make dead zones quickly.
"$CTL" zloop create "$Z" --capacity 64M --zone-size 4M --conv-zones 2 \
	--max-open 6 >/dev/null || fail "smrfsctl zloop create"
"$MKFS" "$Z" >/dev/null || fail "mkfs"
# Every fsync a commit, so that the resets come between the overwrites.
fault_mount resets commit=1,fsync=commit
fault_signal USR1
# 14 sequential zones of 4 MiB: what these overwrites leave dead fits
# without resets.
for i in 1 2 3 4 5; do
	big=$(op write "$M/big" 4194304)
	case $big in *[!0-9a-f]*) fail "overwrite $i with resets failing: $big" ;; esac
done
grep -q "resetting zone.*trying again" "$T/daemon.err" ||
	fail "no zone reset was tried: $(cat "$T/daemon.err")"
grep -q "read-only" "$T/daemon.err" &&
	fail "a failed reset made the filesystem read-only: $(cat "$T/daemon.err")"
expect OK create "$M/still-writable"
expect OK fsync "$M"
expect "$big" read "$M/big"
# The device works again: the dead zones are reset, their space comes
# back, and writes beyond what was free go on.
fault_signal USR2
for i in 1 2 3 4 5 6 7 8 9 10 11 12; do
	big=$(op write "$M/big" 8388608)
	case $big in *[!0-9a-f]*) fail "overwrite $i after resets work: $big" ;; esac
done
expect "$big" read "$M/big"
grep -q "zone [0-9]* reset" "$T/daemon.err" ||
	fail "no zone reset after the device came back: $(cat "$T/daemon.err")"
umount_fs "$M"
fsck_clean
mount_fs "$Z" "$M"
expect "$big" read "$M/big"
umount_fs "$M"
exit 0
