#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# mkfs and mount a zoned loop directory; use it through the kernel with
# exact errors; unmount, remount and find everything; a second mount of the
# same device is refused; read-only mounts refuse writes; the daemon's
# background start (as mount(8) runs it) returns only once mounted; all of
# it once more on a zoned loop directory without conventional zones.
. "${srcdir:-.}/tests/fs/lib.sh"
OPS="${srcdir:-.}/tests/fs/fsops.py"
Z=$T/zl
M=$T/mnt

make_zloop "$Z"
note "mkfs"
"$MKFS" -L zltest "$Z" >"$T/mkfs.out" || fail "mkfs: $(cat "$T/mkfs.out")"
grep -q "zones:" "$T/mkfs.out" || fail "mkfs summary: $(cat "$T/mkfs.out")"
expect_fail "mkfs over an existing smrfs" "$MKFS" "$Z"
grep -q "smrfs" "$T/out" || fail "mkfs refusal: $(cat "$T/out")"
"$MKFS" -f -L zltest "$Z" >/dev/null || fail "mkfs -f"

note "mount and use"
mount_fs "$Z" "$M"
# The space mkfs says is usable is the size df shows.
said=$(awk '$1 == "usable:" {
	m = $3 == "KiB" ? 1 / 1024 : $3 == "GiB" ? 1024 : $3 == "TiB" ? 1048576 : 1
	print $2 * m }' "$T/mkfs.out")
df_mib=$(df -B1M --output=size "$M" | tail -n 1 | tr -d " ")
awk -v a="$said" -v b="$df_mib" 'BEGIN { d = a - b; exit !(a > 0 && d < 2 && d > -2) }' ||
	fail "mkfs said $said MiB usable, df shows $df_mib MiB"
python3 "$OPS" ops "$M" || fail "operations"

note "a second mount of the same device is refused"
mkdir -p "$T/mnt2"
expect_fail "second mount" "$MOUNT" "$Z" "$T/mnt2" -f
is_mounted "$T/mnt2" && fail "the second mount appeared"
grep -qi "in use" "$T/out" || fail "second mount message: $(cat "$T/out")"
expect_fail "mkfs of a mounted device" "$MKFS" -f "$Z"
umount_fs "$M"

note "remount: everything is there"
mount_fs "$Z" "$M"
python3 "$OPS" verify "$M" || fail "verify after remount"

# A listing with attributes (READDIRPLUS) hands the kernel each inode, as a
# lookup does: once the kernel forgets them, removed files are gone.
if [ -w /proc/sys/vm/drop_caches ]; then
	note "ls -l, rm -r: the inodes go once the kernel forgets them"
	inodes() { python3 -c 'import os, sys; v = os.statvfs(sys.argv[1]); print(v.f_files - v.f_ffree)' "$M"; }
	before=$(inodes)
	mkdir "$M/rdplus" || fail "mkdir"
	python3 -c 'import sys
for i in range(300):
    open("%s/rdplus/f%d" % (sys.argv[1], i), "w").write("x" * i)' "$M" ||
		fail "300 files"
	echo 3 >/proc/sys/vm/drop_caches
	[ "$(ls -l "$M/rdplus" | grep -c '^-')" = 300 ] || fail "ls -l of 300 files"
	[ "$(du -sb "$M/rdplus" | cut -f1)" -gt 0 ] || fail "du"
	rm -r "$M/rdplus" || fail "rm -r"
	echo 3 >/proc/sys/vm/drop_caches
	i=0
	while [ "$(inodes)" != "$before" ]; do
		i=$((i + 1))
		[ $i -le 50 ] || fail "$(inodes) inodes in use, $before before"
		sleep 0.1
	done
fi
umount_fs "$M"

note "read-only"
mount_fs "$Z" "$M" ro
python3 "$OPS" verify "$M" || fail "verify read-only"
expect_fail "write on a read-only mount" sh -c "echo x > '$M/new'"
grep -qi "read-only" "$T/out" || fail "read-only error: $(cat "$T/out")"
umount_fs "$M"

note "background start, as the mount(8) helper"
"$MOUNT" "$Z" "$M" -o rw,defaults,commit=2 || fail "background mount"
MOUNTS="$MOUNTS $M"
is_mounted "$M" || fail "not mounted when the helper returned"
python3 "$OPS" verify "$M" || fail "verify in background mode"
fusermount3 -u "$M" || fail "unmount"
i=0
while is_mounted "$M"; do
	i=$((i + 1))
	[ $i -le 100 ] || fail "still mounted after fusermount3 -u"
	sleep 0.1
done

# As on ZNS drives: superblock and checkpoints go to sequential zones too.
note "a zoned loop directory without conventional zones"
FSCK=${SMRFS_FSCK:-$B/fsck/fsck.smrfs}
Z0=$T/zl0
"$CTL" zloop create "$Z0" --capacity 256M --zone-size 32M --conv-zones 0 \
	--max-open 6 >/dev/null || fail "smrfsctl zloop create"
"$MKFS" "$Z0" >"$T/mkfs.out" || fail "mkfs: $(cat "$T/mkfs.out")"
grep -q "(0 conventional)" "$T/mkfs.out" ||
	fail "mkfs summary: $(cat "$T/mkfs.out")"
mount_fs "$Z0" "$M"
python3 "$OPS" ops "$M" || fail "operations without conventional zones"
umount_fs "$M"
if [ -x "$FSCK" ]; then
	"$FSCK" -n "$Z0" >"$T/fsck.out" 2>&1 ||
		fail "fsck.smrfs -n: $(cat "$T/fsck.out")"
fi
mount_fs "$Z0" "$M"
python3 "$OPS" verify "$M" || fail "verify without conventional zones"
umount_fs "$M"
exit 0
