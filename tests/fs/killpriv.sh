#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# Writes, truncates and chowns drop set-id bits and file capabilities, as
# on any Linux filesystem, also with the daemon taking that over from the
# kernel (FUSE_HANDLE_KILLPRIV_V2): a write by another user clears set-user-
# and set-group-ID (with group execute), a write by root keeps them, and a
# write, truncate or chown by anyone drops security.capability. stat right
# after the write must already show it. Then all again with the kernel's
# writeback cache, which then sends the set-id clearing and the times itself.
. "${srcdir:-.}/tests/fs/lib.sh"
[ "$(id -u)" -eq 0 ] || skip "needs root (another user writes, capabilities)"
command -v setpriv >/dev/null || skip "no setpriv"
U=65534
RUNAS_W="setpriv --reuid=$U --regid=$U --clear-groups"
python_for $RUNAS_W
M=$T/mnt
chmod 0755 "$T" || fail "chmod scratch"

for wb in "" ,writeback_cache; do
note "mount options: allow_other$wb"
Z=$T/zl${wb:+-wb}
make_zloop "$Z"
"$MKFS" "$Z" >/dev/null || fail "mkfs"
mount_fs "$Z" "$M" "allow_other$wb"

python3 - "$M" <<'PY' || fail "root's part"
import os, struct, sys
m = sys.argv[1]
p = os.path.join(m, "f")
with open(p, "w") as f:
    f.write("x")
os.chmod(p, 0o6777)
with open(p, "a") as f:
    f.write("root")
assert os.stat(p).st_mode & 0o7777 == 0o6777, "root's write dropped set-id bits"

# File capabilities (VFS_CAP_REVISION_2, CAP_NET_BIND_SERVICE permitted).
cap = struct.pack("<5I", 0x02000000, 1 << 10, 0, 0, 0)
for how in ("write", "truncate", "chown"):
    q = os.path.join(m, "cap-" + how)
    with open(q, "w") as f:
        f.write("data")
    os.setxattr(q, "security.capability", cap)
    assert os.getxattr(q, "security.capability") == cap
    if how == "write":
        # Also through a descriptor that wrote before the capability
        # was set.
        os.setxattr(q, "security.capability", cap)
        fd = os.open(q, os.O_WRONLY)
        os.write(fd, b"d")
        os.setxattr(q, "security.capability", cap)
        os.write(fd, b"D")
        os.close(fd)
    elif how == "truncate":
        os.truncate(q, 2)
    else:
        os.chown(q, 1, 1)
    try:
        os.getxattr(q, "security.capability")
        raise AssertionError("capability kept after " + how)
    except OSError as e:
        assert e.errno == 61, "%s: %s" % (how, e)   # ENODATA
    os.setxattr(q, "user.kept", b"1")
    assert os.getxattr(q, "user.kept") == b"1"
PY

$RUNAS_W $PY - "$M/f" <<'PY' || fail "another user's write"
import os, sys
p = sys.argv[1]
with open(p, "a") as f:
    f.write("other")
mode = os.stat(p).st_mode & 0o7777
assert mode == 0o0777, "after another user's write: %o" % mode
PY
umount_fs "$M"

mount_fs "$Z" "$M"
m=$(stat -c %a "$M/f")
[ "$m" = 777 ] || fail "after remount: mode $m"
[ "$(cat "$M/f")" = xrootother ] || fail "content: $(cat "$M/f")"
umount_fs "$M"
done
exit 0
