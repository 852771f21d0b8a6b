#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
#
# The corruption corpus: for each kind of structure (superblock, checkpoint,
# the namespace tree's interior nodes and leaves, the reverse map's node,
# inode items, items of an unknown type, directory entries, extent items,
# data, zone usage), a fresh copy of a filesystem populated through a mount
# is damaged by tests/fsck/damage, and then:
#
#  1. fsck.smrfs -n finds it: status 4, and its output names the object;
#  2. mount.smrfs on (a copy of) the damaged image either refuses with a
#     clear message on its last line, or mounts and serves: a walk reading
#     every file ends within its timeout, the daemon survives it, logs a
#     line if anything failed with EIO, EUCLEAN or EBADMSG, and exits
#     without a signal;
#  3. fsck.smrfs -y repairs it (1), or says it cannot (4: the cases marked
#     so below, each documented in docs/design/fsck.md);
#  4. fsck.smrfs -n is then clean (0), or still finds the unrepairable (4);
#  5. a mount serves the files the damage did not touch, byte for byte.
#
# Cases that fail today for want of a check or a repair are marked with
# XFAIL and a reason: they are reported but not counted, and if one passes
# the test fails, so that the mark is removed.
#
# SMRFS_CORPUS_ONLY=PATTERN (grep -E) runs only the cases whose names match.
# Scratch space in memory where there is some: each case copies, damages,
# checks and mounts an image, and syncs to a disk would be most of the time.
if [ -z "${TMPDIR:-}" ] && [ -d /dev/shm ] && [ -w /dev/shm ]; then
	TMPDIR=/dev/shm
	export TMPDIR
fi
. "${srcdir:-.}/tests/fs/lib.sh"
FSCK=${SMRFS_FSCK:-$B/fsck/fsck.smrfs}
DAMAGE=${SMRFS_DAMAGE:-$B/tests/fsck/damage}
[ -x "$FSCK" ] || skip "$FSCK not built"
[ -x "$DAMAGE" ] || skip "$DAMAGE not built"
command -v timeout >/dev/null || skip "no timeout(1)"

# Files in /d: enough for a namespace tree of two levels.
NFILES=300
W=$T/w
PM=$T/pm
REF=$T/ref
fails=0
xfails=0
ncases=0

# ------------------------------------------------------------------------
# The pristine images
# ------------------------------------------------------------------------

# populate KIND: a fresh filesystem on a zoned loop directory (zl) or a
# regular file (file), filled through a mount, kept in $T/pristine-KIND.
populate() {
	img=$T/pristine-$1
	make_fs "$1" "$img"
	mount_fs "$img" "$T/mnt"
	# /a first, so that its inodes come before those of /d's files (and
	# lie in the namespace tree's first leaves).
	cp -a "$REF/a" "$T/mnt/" && mkdir "$T/mnt/d" &&
		find "$REF/d" -mindepth 1 ! -name link -exec cp -a -t "$T/mnt/d" {} + &&
		ln "$T/mnt/a/big" "$T/mnt/d/link" || fail "populate $1"
	umount_fs "$T/mnt"
}

mkdir -p "$REF/a/b" "$REF/d"
head -c 300000 /dev/urandom >"$REF/a/big"
echo hello >"$REF/a/b/small"
head -c 9000 /dev/urandom >"$REF/a/b/medium"
ln -s ../a/big "$REF/d/sym"
ln "$REF/a/big" "$REF/d/link"
python3 - "$REF/d" "$NFILES" <<'PY' || fail "reference files"
import sys
for i in range(int(sys.argv[2])):
    with open("%s/file-with-a-long-name-%04d" % (sys.argv[1], i), "w") as f:
        f.write(str(i) * (i % 5))
PY
populate zl
populate file

# every_file_but PATH...: every file of the reference but PATHs (relative,
# one a line), for a case after which all the others must read back intact.
every_file_but() {
	(cd "$REF" && find . -type f | sed 's|^\./||' | sort) |
		grep -vxF "$(printf '%s\n' "$@")"
}

# ------------------------------------------------------------------------
# One case
# ------------------------------------------------------------------------

# bad WHAT: a failure of the current case.
bad() {
	echo "${XFAIL:+(expected) }FAIL: $case: $*" >&2
	case_fails=$((case_fails + 1))
}

# run STATUS-WANTED CMD...: run CMD under a timeout, output in $W/out.
run() {
	want=$1
	shift
	timeout 60 "$@" >"$W/out" 2>&1
	got=$?
	[ "$got" -eq "$want" ] || {
		bad "'$*' exited $got, expected $want: $(head -20 "$W/out")"
		return 1
	}
}

# walk DIR: list every directory of a mount (ls -l also reads the links)
# and read every file, errors in $W/walk.out. Status 0 nothing failed,
# 1 something did, 3 an EIO, EUCLEAN or EBADMSG among it, 124 a hang.
walk() {
	timeout 30 ls -laR "$1" >/dev/null 2>"$W/walk.out"
	st=$?
	timeout 30 find "$1" -type f -exec cat {} + >/dev/null 2>>"$W/walk.out"
	[ $? -ne 124 ] && [ $st -ne 124 ] || return 124
	! grep -Eq "Input/output error|Structure needs cleaning|Bad message" "$W/walk.out" ||
		return 3
	[ ! -s "$W/walk.out" ]
}

# start DEV MNT: the daemon in the foreground (pid in $pd, standard error
# in $W/daemon.err); wait for the mount. Status 0 mounted, 1 the daemon
# exited (its status in $st), 2 no mount within 20 s.
start() {
	mkdir -p "$2"
	"$MOUNT" "$1" "$2" -f 2>"$W/daemon.err" &
	pd=$!
	PIDS="$PIDS $pd"
	MOUNTS="$MOUNTS $2"
	i=0
	until is_mounted "$2"; do
		if ! kill -0 "$pd" 2>/dev/null; then
			wait "$pd"
			st=$?
			return 1
		fi
		i=$((i + 1))
		[ $i -le 200 ] || return 2
		sleep 0.1
	done
}

# stop MNT: unmount, and wait for the daemon (its status in $st).
stop() {
	fusermount3 -u "$1" 2>/dev/null || fusermount3 -uz "$1"
	if ! wait_gone "$pd"; then
		bad "the daemon did not exit after the unmount"
		kill -KILL "$pd" 2>/dev/null
	fi
	wait "$pd"
	st=$?
}

# probe DEV: the daemon on a damaged image refuses it clearly, or mounts
# it and serves what it can without crashing or hanging.
probe() {
	start "$1" "$PM"
	case $? in
	1)
		if [ $st -ge 128 ]; then
			bad "the daemon died of signal $((st - 128)) at mount: $(cat "$W/daemon.err")"
		elif [ $st -eq 0 ]; then
			bad "the daemon exited 0 without mounting"
		elif ! tail -1 "$W/daemon.err" | grep -q '^mount.smrfs: .*: '; then
			bad "refused without a clear last line: $(cat "$W/daemon.err")"
		else
			echo "    mount refused: $(tail -1 "$W/daemon.err")"
		fi
		return
		;;
	2)
		bad "the mount did not appear in 20 s"
		return
		;;
	esac
	walk "$PM"
	case $? in
	0) echo "    mounted, everything read" ;;
	1) echo "    mounted, degraded: $(head -1 "$W/walk.out")" ;;
	3)
		echo "    mounted, degraded: $(head -1 "$W/walk.out")"
		# The daemon's own lines are the mount and unmount notices.
		grep -v -e ' mounted on ' -e 'unmounted cleanly' "$W/daemon.err" |
			grep -q . || bad "an error without a line in the daemon's log"
		;;
	124) bad "the walk of the mount hung: $(cat "$W/walk.out")" ;;
	esac
	kill -0 "$pd" 2>/dev/null || bad "the daemon died during the walk: $(cat "$W/daemon.err")"
	stop "$PM"
	[ $st -lt 128 ] || bad "the daemon died of signal $((st - 128)) at unmount: $(cat "$W/daemon.err")"
}

# intact DEV PATH...: the repaired filesystem mounts and serves PATHs as
# they were written; with nothing left unrepaired, its namespace audits clean.
intact() {
	dev=$1
	shift
	if ! start "$dev" "$W/mnt"; then
		bad "no mount after the repair: $(cat "$W/daemon.err")"
		kill -KILL "$pd" 2>/dev/null
		return
	fi
	for p in "$@"; do
		timeout 20 cmp "$REF/$p" "$W/mnt/$p" >/dev/null 2>&1 ||
			bad "/$p is not intact after the repair"
	done
	stop "$W/mnt"
	[ $st -eq 0 ] || bad "the daemon exited with $st after the repair: $(cat "$W/daemon.err")"
	[ "$want_y" -ne 1 ] || "$AUDIT" "$dev" >"$W/out" 2>&1 ||
		bad "namespace audit after the repair: $(cat "$W/out")"
}

# check KIND NAME WANT_Y PATTERN "PATHS" DAMAGE...: one case on a fresh
# copy of KIND's image. PATTERN (grep -E) must be in -n's output; PATHS
# must read back intact after -y. $SCRUB is passed to every check;
# $XFAIL, if set, says why the case is expected to fail.
check() {
	kind=$1 case="$2 ($1)" want_y=$3 pattern=$4 paths=$5
	shift 5
	if [ -n "${SMRFS_CORPUS_ONLY:-}" ] &&
		! echo "$case" | grep -Eq -- "$SMRFS_CORPUS_ONLY"; then
		XFAIL=""
		SCRUB=""
		return
	fi
	ncases=$((ncases + 1))
	case_fails=0
	echo "--- $case"
	rm -rf "$W"
	mkdir -p "$W"
	cp -a --sparse=always "$T/pristine-$kind" "$W/dev" || fail "copy"
	if ! "$DAMAGE" "$W/dev" "$@" >"$W/out" 2>&1; then
		bad "damage $*: $(cat "$W/out")"
	elif run 4 "$FSCK" -n ${SCRUB:-} "$W/dev"; then
		grep -Eq -- "$pattern" "$W/out" ||
			bad "-n does not name it ($pattern): $(head -20 "$W/out")"
		cp -a --sparse=always "$W/dev" "$W/probe"
		probe "$W/probe"
		run "$want_y" "$FSCK" -y ${SCRUB:-} "$W/dev"
		if [ "$want_y" -eq 1 ]; then
			run 0 "$FSCK" -n ${SCRUB:-} "$W/dev"
		else
			run 4 "$FSCK" -n ${SCRUB:-} "$W/dev"
		fi
		# shellcheck disable=SC2086
		intact "$W/dev" $paths
	fi
	if [ -n "${XFAIL:-}" ]; then
		if [ $case_fails -eq 0 ]; then
			echo "FAIL: $case passes: remove its XFAIL mark ($XFAIL)" >&2
			fails=$((fails + 1))
		else
			echo "    XFAIL: $XFAIL"
			xfails=$((xfails + 1))
		fi
	elif [ $case_fails -ne 0 ]; then
		fails=$((fails + 1))
	fi
	XFAIL=""
	SCRUB=""
}

# ------------------------------------------------------------------------
# The cases
# ------------------------------------------------------------------------

ALL="a/big a/b/small a/b/medium d/link d/file-with-a-long-name-0123"
NOBIG="a/b/small a/b/medium d/file-with-a-long-name-0123"
NOSMALL="a/big a/b/medium d/link d/file-with-a-long-name-0123"
XFAIL=""
SCRUB=""

# Superblock and checkpoint.
for k in zl file; do
	check $k "superblock copy 0" 1 "superblock copy at byte 0 is damaged" \
		"$ALL" sb 0
done
check file "superblock copy 1" 1 "superblock copy at byte 4096 is damaged" \
	"$ALL" sb 1
check zl "newest checkpoint" 1 "checkpoint record at byte [0-9]+ is damaged" \
	"$ALL" ckpt

# Nodes. The interior node is the namespace tree's root (two levels): the
# last commit (the unmount's) did not change that tree, so both
# recoverable checkpoints share it. The repair rebuilds the tree from its
# leaves, found by a scan of the device.
for k in zl file; do
	check $k "namespace tree interior node" 1 "none of its [0-9]+ items can be read through it .* rebuilds it from the tree's leaves" \
		"$ALL" node fs 1
done
# It holds the namespace record and the root with its entries: both are
# made again, and what is left of the files is in /lost+found.
check zl "namespace tree first leaf" 1 "corruption at byte [0-9]+: btree node" \
	"" node fs 0
# The last leaf holds the newest inodes, of files in /d: the salvage drops
# them and the entries naming them.
# Inodes whose extent items were in it get their byte counts recounted.
for k in zl file; do
	check $k "namespace tree last leaf" 1 "corruption at byte [0-9]+: btree node" \
		"a/big a/b/small a/b/medium d/link" node fs 0 last
done
check zl "reverse-map leaf" 1 "corruption at byte [0-9]+: btree node" \
	"$ALL" node rmap 0
check file "reverse-map leaf" 1 "corruption at byte [0-9]+: btree node" \
	"$ALL" node rmap 0

# Inode items.
check zl "inode mode 0" 4 "entry 'small' has the wrong type" \
	"$NOSMALL" inode /a/b/small mode 0
check zl "inode mode of another type" 4 "entry 'small' has the wrong type" \
	"$NOSMALL" inode /a/b/small mode 0140644
check zl "inode size below its extents" 4 "inode [0-9]+: extent past the size 100" \
	"$NOBIG" inode /a/big size 100
for k in zl file; do
	check $k "file nlink 0 with an entry" 1 "inode [0-9]+: nlink 0 but 1 names" \
		"$ALL" inode /a/b/small nlink 0
done
check zl "directory nlink 0 with entries" 1 "link count 0, 3 counted" \
	"$ALL" inode /a nlink 0
check file "file nlink too high" 1 "inode [0-9]+: link count 5, 1 counted" \
	"$ALL" inode /a/b/small nlink 5
check zl "symlink size" 4 "symlink [0-9]+: 8 target bytes, size 3" \
	"$ALL" inode /d/sym size 3
check zl "directory size" 1 "(inode|dir) [0-9]+: .*size" "$ALL" inode /a size 12345
check zl "inode flags" 1 "inode [0-9]+: .*flags" "$ALL" inode /a/b/small flags 1
check zl "inode item missing" 1 "entry 'small' to missing inode" \
	"$NOSMALL" noinode /a/b/small
# An item type the namespace does not know: the FS tree's type refuses it,
# so the B-tree check reports it and the salvage drops it alone.
check zl "item of an unknown type" 1 "check: tree fs, item \([0-9]+, 99, 0\): not a namespace item type" \
	"$ALL" item /a/b/small 99
check zl "root inode missing" 1 "no root directory inode" "$ALL" noinode /
check file "namespace record missing" 1 "no namespace record" "$ALL" nometa

# Directory entries.
check zl "entry name length" 1 "entry with a name of 200 bytes" \
	"$ALL" dirent /a/b/small name_len 200
check zl "entry under the wrong hash" 4 "entry 'small' under the wrong hash" \
	"$NOSMALL" dirent /a/b/small hash
for k in zl file; do
	check $k "dangling entry target" 1 "entry 'small' to missing inode 9999" \
		"$NOSMALL" dirent /a/b/small ino 9999
done
check zl "entry of the wrong type" 4 "entry 'small' has the wrong type" \
	"$ALL" dirent /a/b/small dtype 4

# Extent items and data.
check zl "extent nr_csums" 4 "inode [0-9]+: bad extent at 0" \
	"$NOBIG" extent /a/big nr_csums 3
check zl "extent length past the size" 4 "inode [0-9]+: extent past the size" \
	"a/b/small" extent /a/big len 1048576
for k in zl file; do
	check $k "overlapping extents" 4 "inode [0-9]+: extents overlap at 4096" \
		"$NOBIG" extent /a/big overlap
done
# An extent whose device offset went wrong: past a write pointer, into free
# space, onto another file's data. The reverse map says where its blocks
# are, and their checksums hold there: the repair points it back, and
# every file reads back as it was (taking the free space for it would
# free the file's real bytes).
NOTHERS="does not hold its data: [0-9]+ of its blocks are where the reverse map"
check zl "extent past the write pointer" 1 "$NOTHERS" \
	"$(every_file_but)" extent /a/big past-wp
check file "extent in free space" 1 "$NOTHERS" \
	"$(every_file_but)" extent /a/big past-wp
for k in zl file; do
	check $k "extent onto another file's data" 1 "$NOTHERS" \
		"$(every_file_but)" extent /a/big onto /a/b/medium
done
# An extent item of a missing inode, naming another file's bytes: the item
# is dropped, and the bytes, the other file's, are not freed.
for k in zl file; do
	check $k "extent of a missing inode onto another file's data" 1 \
		"inode 1000000 is missing but has 1 items" \
		"$(every_file_but)" stray /a/big
done
# Its data found nowhere (checksums that hold nowhere): the extent is
# dropped, the file reads zeros there, and no other file changes.
check zl "extent onto another file's data, its own lost" 1 \
	"inode [0-9]+: the extent at file offset 0 .* 2 are found nowhere" \
	"$(every_file_but a/b/medium)" extent /a/b/medium onto-bad /a/big
SCRUB=--scrub
check zl "extent checksum (scrub)" 4 "data block at file offset 0 .* fails its checksum" \
	"$(every_file_but a/b/medium)" extent /a/b/medium csum
# A tail block (small, a few bytes, lives in the tree) whose item is gone:
# the repair drops it, and the file reads zeros there.
for k in zl file; do
	check $k "tail item missing" 1 "inode [0-9]+: tail block of 6 bytes at 0 unusable" \
		"$NOSMALL" notail /a/b/small
done
SCRUB=--scrub
check file "data block (scrub)" 4 "data block at file offset 0 .* fails its checksum" \
	"$NOBIG" data /a/big

# Zone usage.
check zl "zone counter above the recount" 1 "live bytes counted, [0-9]+ referenced \(would lower" \
	"$ALL" leak
check zl "zone counter below the recount" 1 "live bytes counted, [0-9]+ referenced" \
	"$ALL" zone-low /a/big
# A zone file cut short under /a/big's data (or a device that lost writes
# it had acknowledged): what lay past the write pointer was never written,
# and the extents there are dropped (the files read zeros there) before
# the allocator could write over them.
check zl "write pointer behind the data" 1 "inode [0-9]+: the extent at file offset 0 .* found nowhere, it lies past its zone's write pointer" \
	"a/b/small" wp /a/big

echo "$ncases cases: $fails failed, $xfails expected failures"
[ "$fails" -eq 0 ]
