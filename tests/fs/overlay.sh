#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# smrfs as the upper layer of an overlay filesystem, as container engines
# use one: the kernel's overlayfs needs RENAME_WHITEOUT of its upper layer,
# and copies files up through O_TMPFILE where it can. A file of the lower
# layer deleted, renamed, changed and appended to, a directory replaced
# (opaque), a new file and directory: the view holds after the overlay is
# mounted again, and after smrfs itself is, and fsck.smrfs -n finds nothing.
. "${srcdir:-.}/tests/fs/lib.sh"
[ "$(id -u)" -eq 0 ] || skip "needs root to mount an overlay"
FSCK=${SMRFS_FSCK:-$B/fsck/fsck.smrfs}
[ -x "$FSCK" ] || skip "$FSCK not built"
M=$T/mnt
L=$T/lower
O=$T/ov

mkdir -p "$L/gone-dir" "$L/kept-dir" "$O" || fail "mkdir"
echo lower-a >"$L/a"
echo lower-b >"$L/b"
echo lower-c >"$L/c"
echo lower-d >"$L/d"
echo inside >"$L/gone-dir/x"
echo inside >"$L/kept-dir/y"

make_zloop "$T/zl"
"$MKFS" "$T/zl" >/dev/null || fail "mkfs"
mount_fs "$T/zl" "$M"
mkdir "$M/upper" "$M/work" || fail "mkdir on smrfs"

ov_mount() {
	mount -t overlay overlay -o "lowerdir=$L,upperdir=$M/upper,workdir=$M/work" \
		"$O" 2>"$T/ov.err" || return 1
	CLEANUP_HOOK='umount "$O" 2>/dev/null'
}
if ! ov_mount; then
	# A kernel without overlayfs says so; one that has it must take us.
	grep -qs overlay /proc/filesystems ||
		skip "no overlay filesystem in this kernel"
	fail "overlay on smrfs: $(cat "$T/ov.err"); $(dmesg 2>/dev/null |
		grep overlayfs | tail -n 3)"
fi

note "changes through the overlay"
rm "$O/a" || fail "rm of a lower file"
mv "$O/b" "$O/b2" || fail "rename of a lower file"
echo changed >"$O/c" || fail "rewrite of a lower file"
echo more >>"$O/d" || fail "append to a lower file"
rm -r "$O/gone-dir" || fail "rm -r of a lower directory"
mkdir "$O/gone-dir" || fail "mkdir over a deleted lower directory"
echo new >"$O/gone-dir/z" || fail "file in the new directory"
echo new >"$O/kept-dir/new" || fail "file in a lower directory"
echo new >"$O/n" || fail "new file"

# The view, as find lists it with the contents: the same each time.
view() {
	(cd "$O" && find . -print | sort | while read -r p; do
		if [ -f "$p" ]; then
			echo "$p $(cat "$p" | tr '\n' '|')"
		else
			echo "$p"
		fi
	done)
}
ov_check() {
	view >"$T/got" || fail "walk of the overlay"
	diff -u "$T/want" "$T/got" || fail "the overlay's view $1"
}
ov_umount() {
	umount "$O" || fail "umount of the overlay"
	CLEANUP_HOOK=""
}
cat >"$T/want" <<'EOF'
.
./b2 lower-b|
./c changed|
./d lower-d|more|
./gone-dir
./gone-dir/z new|
./kept-dir
./kept-dir/new new|
./kept-dir/y inside|
./n new|
EOF
ov_check "after the changes"
# The upper layer holds the whiteouts: character devices 0:0.
for w in a b; do
	[ -c "$M/upper/$w" ] || fail "no whiteout for $w in the upper layer"
	[ "$(stat -c '%t:%T' "$M/upper/$w")" = 0:0 ] ||
		fail "whiteout $w is not 0:0: $(stat -c '%t:%T' "$M/upper/$w")"
done
ov_umount

note "the overlay mounted again"
ov_mount || fail "overlay again: $(cat "$T/ov.err")"
ov_check "mounted again"
ov_umount

note "smrfs mounted again"
umount_fs "$M"
"$FSCK" -n "$T/zl" >"$T/fsck.out" 2>&1 ||
	fail "fsck.smrfs -n: $(cat "$T/fsck.out")"
mount_fs "$T/zl" "$M"
ov_mount || fail "overlay after the remount: $(cat "$T/ov.err")"
ov_check "after the remount of smrfs"
ov_umount
umount_fs "$M"
exit 0
