#!/bin/busybox sh
# SPDX-License-Identifier: GPL-2.0-or-later
#
# /init of the smrfs-vm guest (busybox sh, PID 1). Reaches the host over
# virtio-9p, creates the zoned device, builds the root (the host's / read-only
# under a tmpfs overlay, the shares read-write), runs the command chrooted
# there, writes its exit status to the control share and powers off. Any
# setup failure powers off without a status: the host then reports 125.

/bin/busybox mkdir -p /sbin /usr/bin /usr/sbin
/bin/busybox --install -s
export PATH=/sbin:/bin:/usr/sbin:/usr/bin

log() { echo "smrfs-vm: $*" >/dev/console; }
off() {
	sync
	poweroff -f
	sleep 5
}
fatal() {
	log "FATAL: $*"
	off
}
put() { echo "$2" >"$1" 2>/dev/null || fatal "cannot write '$2' to $1"; }

mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev

# load GROUP [MODULE PARAMETERS...]: insmod the initramfs modules listed for
# GROUP, in order; MODULE (a file name) with the PARAMETERS.
load() {
	group=$1
	with=${2:-}
	shift $(($# < 2 ? $# : 2))
	while read -r g m; do
		[ "$g" = "$group" ] || continue
		if [ "$m" = "$with" ]; then
			insmod "/mod/$m" "$@" || fatal "insmod $m $*"
		else
			insmod "/mod/$m" || fatal "insmod $m"
		fi
	done </mod/list
}
load base

mkdir -p /ctl /host /root /upper /lib/modules
V9P=trans=virtio,version=9p2000.L,msize=512000
mount -t 9p -o $V9P,cache=none ctl /ctl || fatal "cannot mount the control share"
. /ctl/config
mount -t 9p -o $V9P,ro,cache=loose host /host || fatal "cannot mount the host's /"
# The whole module tree of the cached kernel: modprobe, and the kernel's own
# requests (mount -t btrfs...), find every module there.
mount --bind "/host$VM_MODULES" /lib/modules || fatal "no module tree"
echo /sbin/modprobe >/proc/sys/kernel/modprobe
mount -t configfs configfs /sys/kernel/config || fatal "no configfs"

# nullb NAME KEY=VALUE...: a memory-backed null_blk device through configfs.
nullb() {
	d=/sys/kernel/config/nullb/$1
	shift
	mkdir "$d" || fatal "cannot create $d"
	for kv in "$@"; do put "$d/${kv%%=*}" "${kv#*=}"; done
	put "$d/power" 1
}

case $VM_DEV in
nullb)
	load nullb null_blk.ko nr_devices=0
	nullb nullb0 blocksize=$VM_LBS size=$VM_DEV_MIB memory_backed=1 \
		zoned=1 zone_size=$VM_ZONE_SIZE zone_capacity=$VM_ZONE_CAP \
		zone_nr_conv=$VM_CONV zone_max_open=$VM_MAX_OPEN \
		zone_max_active=$VM_MAX_ACTIVE
	;;
zns) load zns ;;
smr)
	load smr scsi_debug.ko zbc=managed dev_size_mb=$VM_DEV_MIB \
		sector_size=$VM_LBS zone_size_mb=$VM_ZONE_SIZE \
		zone_cap_mb=$VM_ZONE_CAP zone_nr_conv=$VM_CONV \
		zone_max_open=$VM_MAX_OPEN
	;;
esac
# The NVMe and SCSI disks appear asynchronously: wait up to 30 s.
zdev=
i=0
while [ -z "$zdev" ]; do
	for b in /sys/block/*; do
		[ "$(cat "$b/queue/zoned" 2>/dev/null)" = host-managed ] &&
			zdev=${b##*/}
	done
	[ -n "$zdev" ] && break
	i=$((i + 1))
	[ $i -le 300 ] || fatal "no host-managed zoned device appeared"
	sleep 0.1
done
# The kernel serialises writes to a sequential zone only under mq-deadline
# (zone write locking), and does not choose it for NVMe by itself.
echo mq-deadline >/sys/block/$zdev/queue/scheduler
grep -q '\[mq-deadline\]' /sys/block/$zdev/queue/scheduler ||
	fatal "cannot set mq-deadline on $zdev"
scratch=
if [ "$VM_SCRATCH" != 0 ]; then
	# Named like the disk it makes (nullb<index>), as kernels name it
	# either way.
	n=nullb0
	if [ "$VM_DEV" = nullb ]; then n=nullb1; else load nullb null_blk.ko nr_devices=0; fi
	nullb $n blocksize=$VM_LBS size=$VM_SCRATCH memory_backed=1
	scratch=/dev/$n
	[ -b "$scratch" ] || fatal "no scratch device $scratch"
fi
log "zoned device /dev/$zdev: $(cat /sys/block/$zdev/queue/nr_zones) zones;" \
	"scratch ${scratch:-none}"

# The root: the host's / read-only, writes go to a tmpfs and are lost.
mount -t tmpfs -o mode=755 tmpfs /upper &&
	mkdir /upper/data /upper/work &&
	mount -t overlay -o lowerdir=/host,upperdir=/upper/data,workdir=/upper/work \
		overlay /root || fatal "cannot mount the overlay root"
R=/root
mount -t proc proc $R/proc
mount -t sysfs sysfs $R/sys
mount -t configfs configfs $R/sys/kernel/config
mount -t devtmpfs devtmpfs $R/dev
mkdir -p $R/dev/pts $R/dev/shm
mount -t devpts -o gid=5,mode=620,ptmxmode=0666 devpts $R/dev/pts
mount -t tmpfs -o mode=1777 tmpfs $R/dev/shm
mount -t tmpfs -o mode=755 tmpfs $R/run
mkdir -p $R/run/lock $R/run/smrfs-vm $R/lib/modules
mount --bind /ctl $R/run/smrfs-vm
mount --bind /lib/modules $R/lib/modules
# Module tools for the command where the host has none (no kmod).
cp /bin/busybox $R/run/busybox
for t in modprobe insmod rmmod lsmod; do
	[ -e $R/sbin/$t ] || [ -L $R/sbin/$t ] || ln -s /run/busybox $R/sbin/$t
done
i=0
while [ $i -lt "$VM_NSHARES" ]; do
	eval "p=\$VM_SHARE$i"
	mkdir -p "$R$p"
	mount -t 9p -o $V9P,cache=mmap share$i "$R$p" ||
		fatal "cannot mount the share $p"
	i=$((i + 1))
done
ip link set lo up
hostname smrfs-vm

# The command writes into pipes; a relay for each appends what it reads, in
# large pieces, to the control share, where every write is a round trip to
# the host and returns once the host has the data.
mkfifo /cmd.out /cmd.err
dd if=/cmd.out bs=256k 2>/dev/null >>/ctl/out &
relays=$!
dd if=/cmd.err bs=256k 2>/dev/null >>/ctl/err &
relays="$relays $!"
log "running the command at $(cut -d' ' -f1 /proc/uptime) s"
env -i ZONED_VM=1 ZONED_DEV=/dev/$zdev ZONED_DEV_TYPE=$VM_DEV \
	ZONED_NR_ZONES=$VM_ZONES ZONED_NR_CONV=$VM_CONV \
	ZONED_ZONE_SIZE_MB=$VM_ZONE_SIZE ZONED_ZONE_CAP_MB=$VM_ZONE_CAP \
	ZONED_LBS=$VM_LBS SCRATCH_DEV=$scratch \
	chroot $R /bin/bash /run/smrfs-vm/cmd.sh </dev/null >/cmd.out 2>/cmd.err
rc=$?
log "the command exited with $rc at $(cut -d' ' -f1 /proc/uptime) s"

# What the command left running (FUSE daemons...) goes; the relays end when
# nothing holds the pipes any more. (No subshells here: they would count.)
others() {
	left=
	for p in /proc/[0-9]*; do
		case " 1 $relays " in *" ${p#/proc/} "*) continue ;; esac
		[ -e "$p/exe" ] && left="$left ${p#/proc/}"
	done
}
others
[ -z "$left" ] || kill -TERM $left 2>/dev/null
i=0
while [ $i -lt 40 ]; do
	others
	[ -n "$left" ] || break
	sleep 0.05
	i=$((i + 1))
done
[ -z "$left" ] || kill -KILL $left 2>/dev/null
wait $relays
# The shares are synced and unmounted, deepest first.
sync
awk -v r="$R/" 'index($2, r) == 1 { print $2 }' /proc/mounts | sort -r |
	while read -r m; do umount "$m" 2>/dev/null || umount -l "$m"; done
echo "$rc" >/ctl/status
off
