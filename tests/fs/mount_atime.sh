#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# The atime mount options, which the daemon applies itself (the kernel
# leaves a FUSE filesystem's atime to it): relatime by default, noatime,
# strictatime, nodiratime, each checked on a file read and a directory
# listed, and shown in the mount table; and the generic options an fstab
# line may carry (relatime, lazytime, iversion, ...) mount instead of being
# refused.
. "${srcdir:-.}/tests/fs/lib.sh"
M=$T/mnt

make_zloop "$T/zl"
"$MKFS" "$T/zl" >/dev/null || fail "mkfs"

OLD=200001010000
atime() { stat -c %x "$1" || fail "stat $1"; }

# check OPTS FILE_FIRST FILE_AGAIN DIR: mount with OPTS, age a file and a
# directory, read the file and list the directory, then read the file once
# more; "new" or "old" says what each atime must be after each step:
# FILE_FIRST after the first read, FILE_AGAIN after the second (same: the
# first read's time kept; new: later than that), DIR after the listing.
check() {
	note "-o ${1:-(none)}"
	if [ -n "$1" ]; then
		mount_fs "$T/zl" "$M" "$1"
	else
		mount_fs "$T/zl" "$M"
	fi
	echo data >"$M/f" || fail "write f"
	mkdir -p "$M/d" && touch "$M/d/x" || fail "make d"
	touch -a -t $OLD "$M/f" "$M/d" || fail "touch -a"
	old=$(atime "$M/f")
	dold=$(atime "$M/d")
	cat "$M/f" >/dev/null || fail "read f"
	first=$(atime "$M/f")
	case $2 in
	old) [ "$first" = "$old" ] || fail "$1: a read set atime $first" ;;
	new) [ "$first" != "$old" ] || fail "$1: a read left atime $old" ;;
	esac
	sleep 0.05
	cat "$M/f" >/dev/null || fail "read f again"
	again=$(atime "$M/f")
	case $3 in
	same) [ "$again" = "$first" ] ||
		fail "$1: a second read moved atime $first -> $again" ;;
	new) [ "$again" != "$first" ] ||
		fail "$1: a second read left atime $first" ;;
	esac
	ls "$M/d" >/dev/null || fail "ls d"
	dnow=$(atime "$M/d")
	case $4 in
	old) [ "$dnow" = "$dold" ] || fail "$1: a listing set atime $dnow" ;;
	new) [ "$dnow" != "$dold" ] || fail "$1: a listing left atime $dold" ;;
	esac
	rm -r "$M/f" "$M/d" || fail "rm"
	grep " $M " /proc/mounts >"$T/mounts"
	umount_fs "$M"
}

check "" new same new
check relatime new same new
check noatime old same old
# noatime is in the mount table, as for any filesystem.
grep -q "[ ,]noatime[ ,]" "$T/mounts" ||
	fail "noatime not in the mount table: $(cat "$T/mounts")"
check strictatime new new new
# The mount table tells what the daemon does (strictatime: neither
# relatime nor noatime), so that mount(8) passes it on to a remount.
case ",$(cut -d' ' -f4 "$T/mounts")," in
*,relatime,* | *,noatime,*) fail "strictatime: $(cat "$T/mounts")" ;;
esac
check nodiratime new same old
grep -q "[ ,]nodiratime[ ,]" "$T/mounts" ||
	fail "nodiratime not in the mount table: $(cat "$T/mounts")"
check noatime,atime new same new

# An fstab line's generic options, none of which FUSE knows.
note "generic options"
mount_fs "$T/zl" "$M" \
	defaults,relatime,nostrictatime,diratime,lazytime,nolazytime,iversion,noiversion,nomand,norelatime,silent,loud
echo ok >"$M/g" && [ "$(cat "$M/g")" = ok ] || fail "use after generic options"
umount_fs "$M"
exit 0
