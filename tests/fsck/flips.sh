#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Random damage. A zoned loop directory, and a regular file, are filled
# through a mount; then each trial damages a fresh copy of one, flipping 1
# to 6 bits chosen at random (from the trial's seed) among the bytes it
# holds (its data extents: sparse space is never written), and:
#
#  1. fsck.smrfs -n ends on its own (no signal, no hang);
#  2. mount.smrfs refuses with a message, or mounts, serves a walk that
#     reads every file (failing only with EIO, EUCLEAN, EBADMSG or ENOENT),
#     and exits without a signal;
#  3. fsck.smrfs -y ends on its own; when it says everything is repaired
#     (0 or 1), fsck.smrfs -n then finds nothing, and a mount serves a walk
#     with no error but EIO (data blocks are checked only by --scrub).
#
# fsck.smrfs -y may leave damage it cannot repair (4; docs/design/fsck.md
# says which): allowed, and counted at the end for a human to look at.
# FLIPS_TRIALS trials (default 8) on each kind from seed FLIPS_SEED (default
# 1); a long run: FLIPS_TRIALS=1000 FLIPS_SEED=100 tests/fsck/flips.sh.
# Heavier damage: FLIPS_MAX bits at most (default 6); one kind only:
# FLIPS_KINDS=file (default "zl file").
if [ -z "${TMPDIR:-}" ] && [ -d /dev/shm ] && [ -w /dev/shm ]; then
	TMPDIR=/dev/shm
	export TMPDIR
fi
. "${srcdir:-.}/tests/fs/lib.sh"
FSCK=${SMRFS_FSCK:-$B/fsck/fsck.smrfs}
[ -x "$FSCK" ] || skip "$FSCK not built"
command -v timeout >/dev/null || skip "no timeout(1)"
TRIALS=${FLIPS_TRIALS:-8}
SEED=${FLIPS_SEED:-1}
MAXFLIPS=${FLIPS_MAX:-6}
P=$T/pristine
W=$T/w
M=$T/mnt

# The programs the trials run.
# Fill the mount at $1: files of many sizes, with xattrs, in directories, a
# symlink and a hard link; enough for trees of two levels.
POPULATE=$(cat <<'EOF'
import os, random, sys
random.seed(7)
root = sys.argv[1]
for d in range(8):
    os.mkdir("%s/d%d" % (root, d))
    for i in range(150):
        p = "%s/d%d/file-with-a-long-name-%04d" % (root, d, i)
        with open(p, "wb") as f:
            f.write(random.randbytes(random.choice((0, 100, 5000, 70000))))
        if i % 3 == 0:
            os.setxattr(p, "user.n", str(i).encode())
os.symlink("d0", root + "/sym")
os.link(root + "/d1/file-with-a-long-name-0001", root + "/hard")
EOF
)
# Flip 1 to $3 bits of what the image $1 holds (a zoned loop directory's
# zone files, or a regular file; their data extents, from SEEK_DATA), from
# seed $2; print where.
FLIP=$(cat <<'EOF'
import os, random, sys
d, seed, most = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
random.seed(seed)
if os.path.isdir(d):
    files = [os.path.join(d, f) for f in sorted(os.listdir(d))
             if f.startswith(("seq-", "cnv-"))]
else:
    files = [d]
ext = []  # (file, start, end) of what each file holds
for f in files:
    fd = os.open(f, os.O_RDONLY)
    pos, end = 0, os.fstat(fd).st_size
    while pos < end:
        try:
            a = os.lseek(fd, pos, os.SEEK_DATA)
        except OSError:
            break
        pos = os.lseek(fd, a, os.SEEK_HOLE)
        ext.append((f, a, pos))
    os.close(fd)
out = []
for _ in range(random.randint(1, most)):
    f, a, b = random.choice(ext)
    off, bit = random.randrange(a, b), random.randrange(8)
    fd = os.open(f, os.O_RDWR)
    os.pwrite(fd, bytes([os.pread(fd, 1, off)[0] ^ (1 << bit)]), off)
    os.close(fd)
    out.append("%s@%d^%d" % (os.path.basename(f), off, bit))
print(" ".join(out))
EOF
)
# Read every file under $1; print "files errors"; fail on an error not in
# $2 (names of the errno module, comma-separated).
WALK=$(cat <<'EOF'
import errno, os, sys
ok = {getattr(errno, e) for e in sys.argv[2].split(",")}
n = bad = 0
for root, dirs, files in os.walk(sys.argv[1], onerror=lambda e: None):
    for f in files:
        p = os.path.join(root, f)
        try:
            if not os.path.islink(p):
                with open(p, "rb") as fp:
                    fp.read()
            n += 1
        except OSError as e:
            if e.errno not in ok:
                raise SystemExit("walk: %s: %s" % (p, e))
            bad += 1
print(n, bad)
EOF
)

# pristine KIND: the image $P, a zoned loop directory (zl) or a regular
# file (file), filled through a mount.
pristine() {
	rm -rf "$P"
	make_fs "$1" "$P"
	mount_fs "$P" "$M"
	python3 -c "$POPULATE" "$M" || fail "populate $1"
	umount_fs "$M"
	"$FSCK" -n --no-progress "$P" >"$T/fsck.out" 2>&1 ||
		fail "the pristine image ($1): $(cat "$T/fsck.out")"
}

# try_mount WHAT ERRNOS: mount $W if the daemon agrees and walk it (see
# WALK); the daemon must end without a signal. Sets $walked ("files
# errors", or "refused").
try_mount() {
	"$MOUNT" "$W" "$M" -f 2>"$T/daemon.err" &
	DAEMON=$!
	PIDS="$PIDS $DAEMON"
	MOUNTS="$MOUNTS $M"
	i=0
	until is_mounted "$M" || ! kill -0 "$DAEMON" 2>/dev/null; do
		i=$((i + 1))
		[ $i -le 300 ] || fail "$1: the mount neither came nor failed"
		sleep 0.1
	done
	if is_mounted "$M"; then
		walked=$(timeout 120 python3 -c "$WALK" "$M" "$2") ||
			fail "$1: $walked"
		fusermount3 -u "$M" || fail "$1: fusermount3 -u"
	else
		walked=refused
		grep -q . "$T/daemon.err" || fail "$1: refused without a word"
	fi
	wait "$DAEMON"
	st=$?
	[ $st -lt 128 ] ||
		fail "$1: mount.smrfs died of signal $((st - 128)): $(tail -3 "$T/daemon.err")"
}

# run_fsck WHAT ARGS...: fsck.smrfs must end on its own; sets $st.
run_fsck() {
	rf=$1
	shift
	timeout 300 "$FSCK" --no-progress "$@" "$W" >"$T/fsck.out" 2>&1
	st=$?
	[ $st -ne 124 ] || fail "$rf: fsck.smrfs $* did not end"
	[ $st -lt 128 ] || fail "$rf: fsck.smrfs $* died of signal $((st - 128))"
}

# trials KIND: FLIPS_TRIALS trials on copies of the pristine image of KIND.
trials() {
	kind=$1
	pristine "$kind"
	left=0
	t=0
	while [ $t -lt "$TRIALS" ]; do
		seed=$((SEED + t))
		t=$((t + 1))
		rm -rf "$W"
		cp -a "$P" "$W" || fail "copy"
		flips=$(python3 -c "$FLIP" "$W" "$seed" "$MAXFLIPS") || fail "flip"
		what="$kind, seed $seed ($flips)"
		run_fsck "$what" -n
		check=$st
		# Damaged metadata reads fail with EUCLEAN or EBADMSG, a name
		# whose inode is lost with ENOENT.
		try_mount "$what" EIO,EUCLEAN,EBADMSG,ENOENT
		first=$walked
		run_fsck "$what" -y
		repair=$st
		if [ $repair -le 1 ]; then
			run_fsck "$what: after the repair" -n
			[ $st -eq 0 ] ||
				fail "$what: fsck -y said $repair, then fsck -n $st: $(cat "$T/fsck.out")"
			try_mount "$what: after the repair" EIO
			[ "$walked" != refused ] ||
				fail "$what: repaired, but the mount refuses: $(cat "$T/daemon.err")"
		else
			left=$((left + 1))
		fi
		echo "$what: check $check, mount $first, repair $repair, then $walked"
	done
	echo "$kind: $TRIALS trials from seed $SEED: $left left damage fsck could not repair"
}

for kind in ${FLIPS_KINDS:-zl file}; do
	trials "$kind"
done
