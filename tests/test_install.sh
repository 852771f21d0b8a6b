#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# "make install DESTDIR=..." of this build: the daemon in sbindir, the
# mount(8) helper links where configure put them (/sbin for the prefixes
# /usr and /usr/local), mount.smrfs and mount.fuse.smrfs (for remounts)
# naming the daemon, umount.smrfs and umount.fuse.smrfs naming
# umount.smrfs, by their installed paths, and the man pages; "make uninstall" removes the links
# with the rest.
# make check passes the installation directories (Makefile.am).
set -u
skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*" >&2; exit 1; }
[ -n "${SMR_SBINDIR:-}" ] || skip "run by make check"
MAKE=${MAKE:-make}
T=$(mktemp -d "${TMPDIR:-/tmp}/smrfs-install.XXXXXX") || fail "mktemp"
trap 'rm -rf "$T"' EXIT
D=$T/root

case $SMR_PREFIX in
/usr | /usr/local)
	[ -n "$SMR_MOUNTHELPERDIR" ] ||
		fail "prefix $SMR_PREFIX but no mount helper link configured" ;;
esac

$MAKE -C "${top_builddir:-.}" install DESTDIR="$D" >"$T/log" 2>&1 ||
	fail "make install: $(tail -20 "$T/log")"
for p in mount.smrfs umount.smrfs; do
	[ -x "$D$SMR_SBINDIR/$p" ] || fail "no $SMR_SBINDIR/$p"
done
for m in mount.smrfs umount.smrfs mkfs.smrfs fsck.smrfs smrfsctl; do
	[ -f "$D$SMR_MANDIR/man8/$m.8" ] || fail "no man page $m.8"
done
L=
if [ -n "$SMR_MOUNTHELPERDIR" ]; then
	links="mount.fuse.smrfs:mount.smrfs umount.fuse.smrfs:umount.smrfs"
	if [ "$D$SMR_MOUNTHELPERDIR" -ef "$D$SMR_SBINDIR" ]; then
		dir=
	else
		dir=$SMR_SBINDIR/
		links="mount.smrfs:mount.smrfs umount.smrfs:umount.smrfs $links"
	fi
	for nt in $links; do
		n=${nt%%:*}
		to=$dir${nt#*:}
		l=$D$SMR_MOUNTHELPERDIR/$n
		[ -L "$l" ] || fail "no mount helper link $SMR_MOUNTHELPERDIR/$n"
		[ "$(readlink "$l")" = "$to" ] ||
			fail "$n names $(readlink "$l")"
		echo "mount helper: $SMR_MOUNTHELPERDIR/$n -> $(readlink "$l")"
		L="$L $l"
	done
fi

$MAKE -C "${top_builddir:-.}" uninstall DESTDIR="$D" >"$T/log" 2>&1 ||
	fail "make uninstall: $(tail -20 "$T/log")"
for l in $L; do
	! [ -L "$l" ] || fail "make uninstall left $l"
done
left=$(find "$D" ! -type d)
[ -z "$left" ] || fail "make uninstall left: $left"
exit 0
