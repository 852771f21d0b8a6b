#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# mount.smrfs -o remount (what mount(8) runs for "mount -o remount", through
# the mount.fuse.smrfs link): read-only commits everything first and then
# writes nothing, not even an atime or the commit timer's commit, so a copy
# of the device taken then mounts with every file; a file open for writing
# makes the kernel refuse it; writable again, writes work; the atime
# options change with it; a filesystem mounted with -o ro, or a user who
# did not mount it, cannot make it writable; commit= takes effect at once,
# and so do the cleaner's options, where a bad one changes nothing.
. "${srcdir:-.}/tests/fs/lib.sh"
M=$T/mnt
Z=$T/zl

make_zloop "$Z"
"$MKFS" "$Z" >/dev/null || fail "mkfs"
sums() { cat "$Z"/* | cksum; }
opt() { awk -v m="$M" '$2 == m { print $4 }' /proc/mounts | tr , '\n' |
	grep -qx "$1"; }
remount() { "$MOUNT" "$Z" "$M" -o "remount,$1" 2>"$T/remount.err"; }
ro_stat() { "$CTL" stat --json "$M" | grep -q '"read_only": true'; }

note "read-only: everything committed first"
# No commit of the timer's while this runs.
mount_fs "$Z" "$M" commit=600
head -c 300000 /dev/urandom >"$T/data"
cp "$T/data" "$M/f" || fail "write f"
mkdir "$M/d" || fail "mkdir"
remount ro || fail "remount,ro: $(cat "$T/remount.err")"
opt ro || fail "not ro in the mount table"
ro_stat || fail "the daemon is not read-only"
expect_fail "write after remount,ro" sh -c "echo x >'$M/g'"
cmp "$T/data" "$M/f" || fail "f after remount,ro"
# A copy of the device has it all.
cp -r "$Z" "$T/copy" || fail "copy the device"
"$AUDIT" "$T/copy" || fail "audit of the copy"
first=$DAEMON
mount_fs "$T/copy" "$T/m2" ro
cmp "$T/data" "$T/m2/f" || fail "f in the copy"
[ -d "$T/m2/d" ] || fail "d in the copy"
umount_fs "$T/m2"
DEVICE=$Z
DAEMON=$first
umount_fs "$M"

note "read-only: nothing written after"
# A commit a second: the timer would write within the wait below.
mount_fs "$Z" "$M" commit=1
# An old atime, which a read would renew (relatime).
touch -a -t 200001010000 "$M/f" || fail "touch -a"
remount ro || fail "remount,ro: $(cat "$T/remount.err")"
before=$(sums)
cmp "$T/data" "$M/f" || fail "read f"
ls "$M/d" >/dev/null || fail "ls d"
sleep 2.5
[ "$(sums)" = "$before" ] || fail "the device changed while read-only"

note "writable again"
remount rw || fail "remount,rw: $(cat "$T/remount.err")"
opt rw || fail "not rw in the mount table"
! ro_stat || fail "the daemon is still read-only"
echo again >"$M/g" || fail "write after remount,rw"

note "busy: a file open for writing"
exec 7>>"$M/g"
expect_fail "remount,ro with a file open for writing" remount ro
exec 7>&-
grep -q "open for writing" "$T/out" "$T/remount.err" ||
	fail "busy remount message: $(cat "$T/remount.err")"
echo still >>"$M/g" || fail "write after a refused remount"

note "atime options"
remount noatime || fail "remount,noatime: $(cat "$T/remount.err")"
opt noatime || fail "noatime not in the mount table"
touch -a -t 200001010000 "$M/f" || fail "touch -a"
old=$(stat -c %x "$M/f")
cat "$M/f" >/dev/null
[ "$(stat -c %x "$M/f")" = "$old" ] || fail "a read set atime under noatime"
remount relatime || fail "remount,relatime: $(cat "$T/remount.err")"
cat "$M/f" >/dev/null
[ "$(stat -c %x "$M/f")" != "$old" ] || fail "a read left atime under relatime"

note "commit= changes with a remount"
gen() { "$CTL" stat --json "$M" | tr ',' '\n' |
	sed -n 's/.*"generation": *\([0-9]*\).*/\1/p'; }
# From a commit a second to one in 10 minutes: a change waits.
remount commit=600 || fail "remount,commit=600: $(cat "$T/remount.err")"
sleep 1
g=$(gen)
echo later >"$M/late" || fail "write late"
sleep 2.5
[ "$(gen)" = "$g" ] || fail "commit=600: committed within 2.5 s ($g, $(gen))"
# And back: a change is committed within a few seconds.
remount commit=1 || fail "remount,commit=1: $(cat "$T/remount.err")"
sleep 1
g=$(gen)
echo later >"$M/late2" || fail "write late2"
sleep 2.5
[ "$(gen)" -gt "$g" ] || fail "commit=1: no commit in 2.5 s (generation $g)"

note "a user who did not mount it"
remount ro || fail "remount,ro again: $(cat "$T/remount.err")"
if command -v setpriv >/dev/null &&
	setpriv --reuid=65534 --regid=65534 --clear-groups true 2>/dev/null; then
	expect_fail "remount,rw by another user" setpriv --reuid=65534 \
		--regid=65534 --clear-groups "$MOUNT" "$Z" "$M" -o remount,rw
	opt ro && ro_stat || fail "a user's refused remount changed the mount"
fi
remount rw || fail "remount,rw again: $(cat "$T/remount.err")"
umount_fs "$M"

note "the cleaner's options change, or are refused with nothing changed"
# Zones of 8 MiB, 32 of them: room for zones that only cleaning frees.
"$CTL" zloop create "$T/z2" --capacity 256M --zone-size 8M --conv-zones 2 \
	>/dev/null || fail "zloop create z2"
"$MKFS" "$T/z2" >/dev/null || fail "mkfs z2"
mount_fs "$T/z2" "$M" gc=off,commit=1
runs() {
	"$CTL" stat --json "$M" |
		python3 -c 'import json, sys; print(json.load(sys.stdin)["cleaner_runs"])'
}
# Two files written in turns, one deleted: zones half dead, which only
# cleaning gives back.
python3 - "$M" <<'EOF' || fail "interleaved writes"
import os, sys
chunk = os.urandom(1 << 20)
fs = [open(os.path.join(sys.argv[1], n), 'wb') for n in ('a', 'b')]
for i in range(12):
    for f in fs:
        f.write(chunk)
        f.flush()
        os.fsync(f.fileno())
for f in fs:
    f.close()
os.unlink(os.path.join(sys.argv[1], 'a'))
EOF
# (A commit of the timer's makes the deletion count.)
r=$(runs)
sleep 2.5
[ "$(runs)" = "$r" ] || fail "gc=off: the cleaner ran ($r, $(runs))"
# 32 zones: a watermark at 32 is refused, also on the way to read-only.
expect_fail "remount,gc_low=32" remount gc_low=32
grep -q "32 zones" "$T/remount.err" ||
	fail "gc_low=32 refused without saying why: $(cat "$T/remount.err")"
expect_fail "remount,ro,gc_high=32" remount ro,gc_high=32
! opt ro && ! ro_stat || fail "a refused remount,ro changed the mount"
remount gc=greedy,gc_low=30,gc_high=31 ||
	fail "remount,gc=greedy: $(cat "$T/remount.err")"
i=0
until [ "$(runs)" -gt "$r" ]; do
	i=$((i + 1))
	[ $i -le 100 ] || fail "gc=greedy,gc_low=30: the cleaner did not run"
	sleep 0.1
done
# gc_high not above the gc_low of the mount.
expect_fail "remount,gc_high=29" remount gc_high=29
remount ro,gc=off || fail "remount,ro,gc=off: $(cat "$T/remount.err")"
opt ro && ro_stat || fail "not read-only after remount,ro,gc=off"
remount rw || fail "remount,rw: $(cat "$T/remount.err")"
umount_fs "$M"

note "mounted with -o ro: stays read-only"
mount_fs "$Z" "$M" ro
expect_fail "remount,rw of a -o ro mount" remount rw
grep -q "mount it again" "$T/out" "$T/remount.err" ||
	fail "remount,rw message: $(cat "$T/remount.err")"
opt ro && ro_stat || fail "a refused remount,rw changed the mount"
umount_fs "$M"
exit 0
