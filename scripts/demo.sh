#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
#
# demo.sh BUILD_DIR - the main job on the embedded default: a zoned loop
# directory shaped like a small host-managed SMR disk; mkfs, mount, a real
# workload (a copy of a system tree plus large files, verified), figures,
# unmount, remount and verify again, unmount, fsck.
set -eu

build=${1:?usage: demo.sh BUILD_DIR}
ctl=$build/ctl/smrfsctl
mkfs=$build/mkfs/mkfs.smrfs
mount=$build/src/fuse/mount.smrfs
umount=$build/src/fuse/umount.smrfs
fsck=$build/fsck/fsck.smrfs

work=$(mktemp -d "${TMPDIR:-/tmp}/smrfs-demo.XXXXXX")
zdir=$work/zloop
mnt=$work/mnt
mkdir "$mnt"

cleanup() {
	if mountpoint -q "$mnt" 2>/dev/null; then
		"$umount" "$mnt" 2>/dev/null || umount -l "$mnt" 2>/dev/null || :
	fi
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

step() { printf '\n== %s\n' "$*"; }
step "A zoned loop directory: 2 GiB of 64 MiB zones, 2 conventional, at most 16 open"
"$ctl" zloop create "$zdir" --capacity 2G --zone-size 64M --conv-zones 2 \
	--max-open 16
"$ctl" zloop report "$zdir" | head -4
echo "  ..."

step "mkfs.smrfs"
"$mkfs" -L demo "$zdir"

step "mount.smrfs"
"$mount" "$zdir" "$mnt"
df -h "$mnt"

src=/usr/include
[ -d "$src" ] || src=/usr/share
step "Workload: copy $src, write two 64 MiB files, overwrite one, delete some"
start=$(date +%s.%N)
cp -a "$src" "$mnt/tree"
head -c $((64 << 20)) /dev/urandom >"$work/big"
cp "$work/big" "$mnt/big1"
cp "$work/big" "$mnt/big2"
dd if=/dev/urandom of="$mnt/big2" bs=1M count=16 seek=8 conv=notrunc status=none
rm -rf "$mnt/tree/linux"
sync "$mnt/big1"
end=$(date +%s.%N)
files=$(find "$mnt/tree" -type f | wc -l)
bytes=$(du -sb "$mnt" | cut -f1)
awk -v f="$files" -v b="$bytes" -v s="$start" -v e="$end" 'BEGIN {
	printf "  %d files, %.1f MiB in %.1f s (%.1f MiB/s, %.0f files/s)\n",
		f, b / 1048576, e - s, b / 1048576 / (e - s), f / (e - s) }'

step "Verify against the originals"
(cd "$src" && find . -path ./linux -prune -o -type f -print | sort) >"$work/list"
(cd "$mnt/tree" && find . -type f | sort) | cmp - "$work/list"
(cd "$src" && xargs -a "$work/list" -d '\n' cat | md5sum) >"$work/sum.src"
(cd "$mnt/tree" && xargs -a "$work/list" -d '\n' cat | md5sum) | cmp - "$work/sum.src"
cmp "$work/big" "$mnt/big1"
echo "  all files identical"

step "Figures"
df -h "$mnt"
"$ctl" stat "$mnt"
"$ctl" zones "$mnt"

step "Unmount, mount again, verify again"
"$umount" "$mnt"
"$mount" "$zdir" "$mnt"
(cd "$mnt/tree" && xargs -a "$work/list" -d '\n' cat | md5sum) | cmp - "$work/sum.src"
cmp "$work/big" "$mnt/big1"
echo "  all files identical after remount"
"$umount" "$mnt"

step "fsck.smrfs"
"$fsck" -n "$zdir"

step "Done"
