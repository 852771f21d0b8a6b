#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# An ordinary user makes, mounts, uses and unmounts a zoned loop directory:
# the files are theirs, the ownership rules hold through the kernel, and
# umount.smrfs unmounts through fusermount3 and waits. Needs root to
# set up (it opens /dev/fuse to others for the test and restores its mode).
. "${srcdir:-.}/tests/fs/lib.sh"
[ "$(id -u)" -eq 0 ] || skip "needs root to set up /dev/fuse and a user"
command -v setpriv >/dev/null || skip "no setpriv"
U=65534
RUNAS="setpriv --reuid=$U --regid=$U --clear-groups"
$RUNAS sh -c "test -x '$MOUNT' && test -x '$MKFS'" ||
	skip "the build is not readable by uid $U"
python_for $RUNAS

FUSE_MODE=$(stat -c %a /dev/fuse)
CLEANUP_HOOK='chmod "$FUSE_MODE" /dev/fuse'
chmod 0666 /dev/fuse || fail "chmod /dev/fuse"
chown "$U:$U" "$T" || fail "chown scratch"
Z=$T/zl
M=$T/mnt

$RUNAS "$CTL" zloop create "$Z" --capacity 256M --zone-size 32M \
	--conv-zones 2 >/dev/null || fail "zloop create as uid $U"
$RUNAS mkdir "$M" || fail "mkdir"
$RUNAS "$MKFS" "$Z" >/dev/null || fail "mkfs as uid $U"
mount_fs "$Z" "$M"
$RUNAS $PY - "$M" <<'PY' || fail "operations as uid 65534"
import errno, os, sys
m = sys.argv[1]
st = os.stat(m)
assert st.st_uid == 65534, "root directory owner %d" % st.st_uid
with open(os.path.join(m, "mine"), "w") as f:
    f.write("data")
st = os.stat(os.path.join(m, "mine"))
assert (st.st_uid, st.st_gid) == (65534, 65534), "owner of a new file"
os.chmod(os.path.join(m, "mine"), 0o4755)
try:
    os.chown(os.path.join(m, "mine"), 0, 0)
    sys.exit("chown to root succeeded")
except OSError as e:
    assert e.errno == errno.EPERM, "chown errno %d" % e.errno
with open(os.path.join(m, "mine"), "a") as f:
    f.write("more")
mode = os.stat(os.path.join(m, "mine")).st_mode & 0o7777
assert mode == 0o755, "setuid kept after a write: %o" % mode
PY
# umount.smrfs, as umount(8) runs it for the user: through fusermount3, and
# it still waits for the daemon to let go of the device.
$RUNAS "$UMOUNT" "$M" || fail "umount.smrfs as uid $U"
! is_mounted "$M" || fail "still mounted after umount.smrfs as uid $U"
flock -n "$Z" true || fail "the device is held after umount.smrfs as uid $U"
wait "$DAEMON" || fail "daemon exit status"
exit 0
