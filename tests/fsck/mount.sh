#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# fsck.smrfs around the daemon: a filesystem filled through a mount checks
# clean; a mounted device is refused (8) at once; an inode unlinked while open and
# left by kill -9 of the daemon is an orphan, reported but not an error, and
# reclaimed by -y; a damaged superblock copy and checkpoint slot are found
# (4), the daemon mounts the damaged filesystem and serves its files, -y
# fixes them (1), a second check is clean (0) and the files are intact.
# A filesystem made over another, then wiped of its superblocks and
# checkpoint records: rebuilt with all its files (mkfs discarded the old
# one's blocks), or, made with -K, refused (8) unless --uuid names it.
. "${srcdir:-.}/tests/fs/lib.sh"
FSCK=${SMRFS_FSCK:-$B/fsck/fsck.smrfs}
[ -x "$FSCK" ] || skip "$FSCK not built"
Z=$T/zl
M=$T/mnt

# expect STATUS CMD...
expect() {
	want=$1
	shift
	"$@" >"$T/fsck.out" 2>&1
	got=$?
	[ "$got" -eq "$want" ] ||
		fail "'$*' exited $got, expected $want: $(cat "$T/fsck.out")"
}

make_zloop "$Z"
"$MKFS" "$Z" >/dev/null || fail "mkfs"
mount_fs "$Z" "$M"
mkdir -p "$M/a/b/c" "$M/d"
head -c 300000 /dev/urandom >"$M/a/big"
echo hello >"$M/a/b/c/small"
ln "$M/a/big" "$M/d/big-link"
ln -s ../a/big "$M/d/sym"
cp "$M/a/big" "$T/big.copy"
note "a mounted device is refused, at once"
expect 8 "$FSCK" -n "$Z"
grep -q "is in use (mounted?)" "$T/fsck.out" || fail "in use: $(cat "$T/fsck.out")"
! grep -q "waiting up to" "$T/fsck.out" || fail "waited: $(cat "$T/fsck.out")"
umount_fs "$M"

note "clean"
expect 0 "$FSCK" -n --scrub "$Z"
expect 0 "$FSCK" -y "$Z"

note "an orphan left by kill -9"
mount_fs "$Z" "$M" commit=3600
python3 - "$M" <<'PY' &
import os, sys, time
fd = os.open(os.path.join(sys.argv[1], "open-unlinked"), os.O_CREAT | os.O_RDWR)
os.write(fd, b"x" * 10000)
os.unlink(os.path.join(sys.argv[1], "open-unlinked"))
os.fsync(fd)
open(os.path.join(sys.argv[1], "..", "unlinked.done"), "w").close()
time.sleep(60)
PY
HOLDER=$!
PIDS="$PIDS $HOLDER"
i=0
until [ -e "$T/unlinked.done" ]; do
	i=$((i + 1))
	[ $i -le 200 ] || fail "the holder did not get going"
	sleep 0.1
done
kill -KILL "$DAEMON"
wait "$DAEMON"
kill -KILL "$HOLDER" 2>/dev/null
wait "$HOLDER" 2>/dev/null
fusermount3 -u "$M" 2>/dev/null || fusermount3 -uz "$M" ||
	fail "cannot remove the dead mount"
expect 0 "$FSCK" -n "$Z"
grep -q "an orphan), will be reclaimed" "$T/fsck.out" ||
	fail "orphan not reported: $(cat "$T/fsck.out")"
expect 1 "$FSCK" -y "$Z"
expect 0 "$FSCK" -n "$Z"
grep -q "orphan" "$T/fsck.out" && fail "orphan left: $(cat "$T/fsck.out")"

note "a damaged superblock copy and an old checkpoint slot"
# Zone 0 is conventional: copies at bytes 0 and 4096, slots from 65536.
printf 'XXXX' | dd of="$Z/cnv-000000" bs=1 seek=4300 conv=notrunc 2>/dev/null
printf 'XXXX' | dd of="$Z/cnv-000000" bs=1 seek=65900 conv=notrunc 2>/dev/null
expect 4 "$FSCK" -n "$Z"
grep -q "superblock copy at byte 4096 is damaged" "$T/fsck.out" ||
	fail "superblock copy not named: $(cat "$T/fsck.out")"
grep -q "checkpoint record at byte 65536 is damaged" "$T/fsck.out" ||
	fail "checkpoint slot not named: $(cat "$T/fsck.out")"
mount_fs "$Z" "$M"
cmp "$M/d/big-link" "$T/big.copy" || fail "data through the damaged filesystem"
umount_fs "$M"
expect 1 "$FSCK" -y "$Z"
expect 0 "$FSCK" -n --scrub "$Z"
mount_fs "$Z" "$M"
cmp "$M/a/big" "$T/big.copy" || fail "data after the repair"
[ "$(cat "$M/a/b/c/small")" = hello ] || fail "small file after the repair"
[ "$(stat -c %h "$M/a/big")" = 2 ] || fail "link count after the repair"
umount_fs "$M"

# made_over IMG [MKFS OPTIONS]: on IMG, a filesystem of 200 files, then one
# of 10 files made over it, then the first 4 MiB (both superblock copies
# and every checkpoint record) zeroed.
made_over() {
	rm -f "$1" && truncate -s 64M "$1" || fail "truncate $1"
	"$MKFS" "$1" >/dev/null || fail "mkfs (old) $1"
	mount_fs "$1" "$M"
	for i in $(seq 200); do
		head -c 20000 /dev/urandom >"$M/old$i" || fail "old$i"
	done
	umount_fs "$M"
	"$MKFS" -f ${2:-} "$1" >/dev/null || fail "mkfs -f ${2:-} $1"
	mount_fs "$1" "$M"
	mkdir -p "$T/new"
	for i in $(seq 10); do
		head -c 20000 /dev/urandom >"$T/new/new$i" || exit 1
		cp "$T/new/new$i" "$M/" || fail "new$i"
	done
	umount_fs "$M"
	dd if=/dev/zero of="$1" bs=1M count=4 conv=notrunc 2>/dev/null ||
		fail "wipe $1"
}

note "made over another filesystem, then superblocks and records wiped"
# mkfs discarded the old one's blocks: the superblock is rebuilt from the
# nodes of the new one, and every file of it is back.
made_over "$T/img"
expect 1 "$FSCK" -y "$T/img"
grep -q "superblock rebuilt" "$T/fsck.out" ||
	fail "no superblock rebuilt: $(cat "$T/fsck.out")"
expect 0 "$FSCK" -n "$T/img"
mount_fs "$T/img" "$M"
[ "$(ls "$M" | grep -c '^new')" = 10 ] && ! ls "$M" | grep -q '^old' ||
	fail "not the new files: $(ls "$M")"
diff -r "$T/new" "$M" >"$T/diff" 2>&1 || fail "new files: $(cat "$T/diff")"
umount_fs "$M"
note "the same, made with -K (no discard)"
# The old one's nodes are still there: which one to rebuild cannot be
# told, and nothing is written; named with --uuid, it is rebuilt.
NEWUUID=2c9a1f0e-57d4-4b8e-9a61-0d3b7c5e8f42
made_over "$T/img" "-K -U $NEWUUID"
cp "$T/img" "$T/img.before" || exit 1
expect 8 "$FSCK" -y "$T/img"
grep -q "are of 2 filesystems, UUID .*$NEWUUID" "$T/fsck.out" ||
	fail "two filesystems not told apart: $(cat "$T/fsck.out")"
cmp -s "$T/img" "$T/img.before" || fail "the image changed"
expect 1 "$FSCK" -y --uuid "$NEWUUID" "$T/img"
expect 0 "$FSCK" -n "$T/img"
mount_fs "$T/img" "$M"
diff -r "$T/new" "$M" >"$T/diff" 2>&1 || fail "--uuid: $(cat "$T/diff")"
umount_fs "$M"
rm -f "$T/img" "$T/img.before"
exit 0
