#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# The commands as an administrator meets them: mkfs -n on a device that
# holds a filesystem needs no -f and writes nothing; "mount -t smrfs" and an
# fstab line find mount.smrfs where mount(8) looks for helpers (/sbin),
# "mount -o remount" finds mount.fuse.smrfs there, and umount runs
# umount.fuse.smrfs, which returns once the daemon has ended cleanly; every option of --help is in the man page and the other
# way round.
. "${srcdir:-.}/tests/fs/lib.sh"
S=${srcdir:-.}
M=$T/mnt

note "mkfs -n over an existing filesystem: no -f needed, nothing written"
truncate -s 64M "$T/img" || fail "truncate"
"$MKFS" -L first "$T/img" >/dev/null || fail "mkfs"
sum=$(md5sum <"$T/img")
"$MKFS" -n -L second "$T/img" >"$T/out" 2>&1 ||
	fail "mkfs -n refused an existing filesystem: $(cat "$T/out")"
grep -q "holds" "$T/out" || fail "mkfs -n does not say what is there: $(cat "$T/out")"
grep -q "Would make" "$T/out" || fail "mkfs -n summary: $(cat "$T/out")"
[ "$(md5sum <"$T/img")" = "$sum" ] || fail "mkfs -n wrote to the device"
expect_fail "mkfs without -f over smrfs" "$MKFS" "$T/img"
"$MKFS" -n -f "$T/img" >/dev/null || fail "mkfs -n -f"
[ "$(md5sum <"$T/img")" = "$sum" ] || fail "mkfs -n -f wrote to the device"

note "--help and the man pages name the same options"
python3 - "$S" "$MKFS" "$MOUNT" "$B/fsck/fsck.smrfs" "$CTL" "$UMOUNT" <<'EOF' || fail "--help and man pages differ"
import re, subprocess, sys
src, mkfs, mount, fsck, ctl, umount = sys.argv[1:]
OPT = re.compile(r'(?<![\w-])(--?[A-Za-z][\w-]*)')
SUB = re.compile(r'\b([a-z_]+)=')

def man(path):
    text = open(path).read().replace('\\-', '-')
    return '\n'.join(l for l in text.splitlines() if not l.startswith('.\\"'))

def helptext(*cmds):
    out = ''
    for c in cmds:
        r = subprocess.run(c, capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit('%s exited with %d' % (' '.join(c), r.returncode))
        out += r.stdout
    return out

# Options a page mentions that belong to other commands it quotes
# (mount -t, fusermount3 -u, smrfsctl zloop, configure, the helper= of
# libmount's table), and a suffix set apart by a font change ("count -th").
others = {'-t', '-u', '--capacity', '--preset', '--zone-size',
          '--conv-zones', '--with-mount-helper-dir', 'dir', '-th', 'helper'}
bad = 0
for page, cmds, pattern in (
        ('mkfs/mkfs.smrfs.8', [[mkfs, '--help']], OPT),
        ('man/fsck.smrfs.8', [[fsck, '--help']], OPT),
        ('src/fuse/mount.smrfs.8', [[mount, '--help']], OPT),
        ('src/fuse/mount.smrfs.8', [[mount, '--help']], SUB),
        ('src/fuse/umount.smrfs.8', [[umount, '--help']], OPT),
        ('man/smrfsctl.8', [[ctl, '--help']] +
         [[ctl, c, '--help'] for c in ('stat', 'zones', 'zloop')], OPT)):
    m = set(pattern.findall(man(src + '/' + page)))
    h = set(pattern.findall(helptext(*cmds)))
    if h - m:
        print('%s lacks %s' % (page, sorted(h - m)))
        bad = 1
    if m - h - others:
        print('--help of %s lacks %s' % (cmds[0][0], sorted(m - h - others)))
        bad = 1
sys.exit(bad)
EOF

note "mount -t smrfs and fstab through /sbin/mount.smrfs"
command -v unshare >/dev/null || skip "no unshare"
grep -qw overlay /proc/filesystems || modprobe overlay 2>/dev/null
grep -qw overlay /proc/filesystems || skip "no overlayfs to put a helper into /sbin"
[ "$(id -u)" = 0 ] || skip "mount(8) with a helper needs root"
make_zloop "$T/zl"
"$MKFS" "$T/zl" >/dev/null || fail "mkfs"
mkdir -p "$T/helper" "$M"
ln -s "$(cd "$(dirname "$MOUNT")" && pwd)/mount.smrfs" "$T/helper/mount.smrfs"
# What make install links too: mount(8) runs them for a remount and for
# umount (helper=smrfs, which the daemon notes in the mount table).
ln -s mount.smrfs "$T/helper/mount.fuse.smrfs"
for n in umount.smrfs umount.fuse.smrfs; do
	ln -s "$(cd "$(dirname "$UMOUNT")" && pwd)/umount.smrfs" "$T/helper/$n"
done
# With the generic options an fstab line carries, which FUSE does not know.
printf '%s %s smrfs commit=7,noauto,noatime,nodiratime,lazytime 0 0\n' \
	"$T/zl" "$M" >"$T/fstab"
echo hello >"$T/hello"

# The daemons run in a mount namespace of their own: find them by the
# device they serve, to see that they are gone after umount (and to stop
# them should the test fail).
cat >"$T/daemons.sh" <<'EOF'
daemons() {
	for p in /proc/[0-9]*; do
		{ tr '\0' ' ' <"$p/cmdline" | grep -q "mount.smrfs $T/zl "; } \
			2>/dev/null && echo "${p#/proc/}"
	done
	return 0
}
gone() {
	[ -z "$(daemons)" ] || { echo "mount.smrfs runs on after umount"; exit 1; }
}
EOF
. "$T/daemons.sh"
# In that namespace, /sbin (as the installed system will have it) gets the
# helper laid over it; the real /sbin stays untouched.
cat >"$T/inner.sh" <<'EOF'
set -e
. "$T/daemons.sh"
sbin=$(readlink -f /sbin)
mount -t overlay overlay -o "lowerdir=$T/helper:$sbin" "$sbin"
test -x /sbin/mount.smrfs
# The daemon stops itself before its last commit, until continued.
SMRFS_FAILPOINT=daemon.before_close:stop mount -t smrfs "$T/zl" "$M"
awk -v m="$M" '$2 == m { print $3 }' /proc/self/mounts >"$T/type"
cp "$T/hello" "$M/hello"
# umount(8) runs umount.smrfs (for the note helper=smrfs the daemon left in
# the mount table), which returns only once the daemon is gone.
d=$(daemons)
umount "$M" &
u=$!
i=0
until grep -q '^[0-9]* (.*) T' "/proc/$d/stat"; do
	i=$((i + 1))
	[ $i -le 200 ] || { echo "the daemon did not reach its last commit"; exit 1; }
	sleep 0.1
done
sleep 0.3
kill -0 $u || { echo "umount returned before the last commit"; exit 1; }
kill -CONT "$d"
wait $u
gone
mount -T "$T/fstab" "$M"
awk -v m="$M" '$2 == m { print $1, $4 }' /proc/self/mounts >"$T/source"
cmp "$T/hello" "$M/hello"
mount -o remount,ro "$M"
awk -v m="$M" '$2 == m { print $4 }' /proc/self/mounts >"$T/remount"
! touch "$M/hello" 2>/dev/null
mount -o remount,rw "$M"
echo again >>"$M/hello"
umount "$M"
gone
EOF
# (KILL: one held at its failpoint would stop again after a TERM.)
CLEANUP_HOOK='for p in $(daemons); do kill -KILL $p; done'
T=$T M=$M unshare -m --propagation private sh "$T/inner.sh" >"$T/out" 2>&1 ||
	fail "mount -t smrfs in a namespace: $(cat "$T/out")"
[ "$(cat "$T/type")" = fuse.smrfs ] ||
	fail "mount -t smrfs: type '$(cat "$T/type")'"
case "$(cat "$T/source")" in
"$T/zl "*noatime*) ;;
*) fail "fstab mount: source and options '$(cat "$T/source")'" ;;
esac
case "$(cat "$T/remount")" in
ro,*) ;;
*) fail "mount -o remount,ro: options '$(cat "$T/remount")'" ;;
esac
[ -z "$(daemons)" ] || fail "mount.smrfs still runs after umount"
! grep -qs "TARGET=$M " "$UTAB" || fail "the helper note outlived the mount"
"$AUDIT" "$T/zl" || fail "audit after umount"
exit 0
