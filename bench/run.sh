#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# bench/run.sh - smrfs against the FUSE ceiling.
#
#   bench/run.sh [--quick] [--out FILE.json] [--build DIR] [--tmp DIR]
#                [--only LIST] [--smrfs-opts OPTS]
#
# Runs the same workloads, one after the other on each, against
#   smrfs        mount.smrfs on a zoned loop directory on tmpfs, and
#   passthrough  libfuse's passthrough_ll example over a directory on the
#                same tmpfs (built here from libfuse3-dev's examples),
# prints a table of both figures and their ratio, and writes them to a JSON
# file (default bench-YYYYmmdd-HHMMSS.json). See bench/README.md.
#
#   --quick     smaller sizes and counts (a few minutes)
#   --build DIR the build directory holding src/fuse/mount.smrfs,
#               mkfs/mkfs.smrfs and ctl/smrfsctl (default: $SMRFS_BUILD,
#               else the source tree, for an in-tree build)
#   --tmp DIR   a tmpfs to work in (default /dev/shm)
#   --only LIST comma-separated groups to run: fio, meta, tar, mount, zones
#               (default all)
#   --smrfs-opts OPTS  mount options for smrfs (mount.smrfs -o OPTS), such
#               as writeback_cache; recorded in the JSON
#
# Root is not needed (FUSE mounts are unprivileged), but dropping caches
# needs it; without it the read phases rely on fio's invalidate (fadvise)
# alone. Every mount and temporary directory is removed
# at exit, also on Ctrl-C.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
QUICK=0
OUT=
BUILD=${SMRFS_BUILD:-$HERE/..}
TMPBASE=/dev/shm
ONLY=fio,meta,tar,mount,zones
SMRFS_OPTS=

while [ $# -gt 0 ]; do
	case $1 in
	--quick) QUICK=1 ;;
	--out) OUT=$2; shift ;;
	--build) BUILD=$2; shift ;;
	--tmp) TMPBASE=$2; shift ;;
	--only) ONLY=$2; shift ;;
	--smrfs-opts) SMRFS_OPTS=$2; shift ;;
	-h|--help) sed -n '3,29p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "run.sh: unknown argument $1" >&2; exit 2 ;;
	esac
	shift
done
OUT=${OUT:-bench-$(date -u +%Y%m%d-%H%M%S).json}

MOUNT=$BUILD/src/fuse/mount.smrfs
MKFS=$BUILD/mkfs/mkfs.smrfs
CTL=$BUILD/ctl/smrfsctl
for p in "$MOUNT" "$MKFS" "$CTL"; do
	[ -x "$p" ] || { echo "run.sh: $p missing (--build DIR)" >&2; exit 1; }
done
# The commit the daemon was built from, which may not be the checkout's.
BUILD_COMMIT=$("$MOUNT" --version 2>/dev/null | sed -n '1s/.*, commit //p')
BUILD_COMMIT=${BUILD_COMMIT:-unknown}
echo "== mount.smrfs built from commit $BUILD_COMMIT" >&2

if [ $QUICK = 1 ]; then
	SEQ_SIZE=256M RAND_SIZE=128M PAR_SIZE=32M RUNTIME=8
	NFILES=10000 MANY=50000 CAP=8G
else
	SEQ_SIZE=2G RAND_SIZE=1G PAR_SIZE=256M RUNTIME=30
	NFILES=100000 MANY=1000000 CAP=24G
fi
BIG_ZONES=95836 BIG_ZONE_SIZE=256M

# passthrough_ll holds a descriptor for every inode the kernel knows: take
# as many as we may, and make the one-directory test fit if the limit is
# still too low for it.
ulimit -n 1100000 2>/dev/null || ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
if [ $((NFILES + 2048)) -gt "$(ulimit -n)" ]; then
	echo "run.sh: the open file limit is $(ulimit -n): the metadata" \
		"test uses $(( $(ulimit -n) - 2048 )) files, not $NFILES" >&2
	NFILES=$(( $(ulimit -n) - 2048 ))
fi

# ---------------------------------------------------------------- cleanup
WORK=
MOUNTS=()
PIDS=()

cleanup() {
	local m p
	trap - EXIT INT TERM HUP
	for m in "${MOUNTS[@]}"; do
		if mountpoint -q "$m" 2>/dev/null; then
			fusermount3 -u "$m" 2>/dev/null || fusermount3 -uz "$m" || true
		fi
	done
	for p in "${PIDS[@]}"; do
		# Each daemon exits at its unmount; wait for it (it commits),
		# then make sure.
		for _ in $(seq 100); do
			kill -0 "$p" 2>/dev/null || break
			sleep 0.1
		done
		kill "$p" 2>/dev/null || true
	done
	[ -n "$WORK" ] && rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

need() {
	command -v "$1" >/dev/null && return
	echo "run.sh: installing $2" >&2
	apt-get install -y -q "$2" >/dev/null
}
need fio fio
need python3 python3
need cc gcc
need pkg-config pkg-config

WORK=$(mktemp -d "$TMPBASE/smrfs-bench.XXXXXX")
if [ "$(stat -f -c %T "$WORK")" != tmpfs ]; then
	echo "run.sh: warning: $TMPBASE is not a tmpfs" >&2
fi
RES=$WORK/results.tsv
: >"$RES"

can_drop=0
[ -w /proc/sys/vm/drop_caches ] && can_drop=1
drop_caches() {
	sync
	[ $can_drop = 1 ] && echo 3 >/proc/sys/vm/drop_caches || true
}

record() {	# workload fs value unit hi|lo
	printf '%s\t%s\t%s\t%s\t%s\n' "$@" >>"$RES"
	printf '  %-20s %-12s %12s %s\n' "$1" "$2" "$3" "$4" >&2
}

# Daemon pid of a FUSE mount: the process holding /dev/fuse whose command
# line names the mount point.
daemon_pid() {
	local mnt=$1 d f cmd
	for d in /proc/[0-9]*; do
		cmd=$( { tr '\0' ' ' <"$d/cmdline"; } 2>/dev/null) || continue
		case "$cmd " in *" $mnt "*) ;; *) continue ;; esac
		for f in "$d"/fd/*; do
			if [ "$(readlink "$f" 2>/dev/null)" = /dev/fuse ]; then
				echo "${d#/proc/}"
				return 0
			fi
		done
	done
	return 1
}

# mount_fs smrfs|passthrough SRC MNT: mounts; sets MNT_PID and MNT_TIME
# (seconds until the mount command returned, the file system mounted).
mount_fs() {
	local kind=$1 src=$2 mnt=$3 t0 t1
	mkdir -p "$mnt"
	t0=$(date +%s.%N)
	if [ "$kind" = smrfs ]; then
		"$MOUNT" "$src" "$mnt" ${SMRFS_OPTS:+-o "$SMRFS_OPTS"}
	else
		"$WORK/passthrough_ll" -o source="$src" "$mnt"
	fi
	t1=$(date +%s.%N)
	MOUNTS+=("$mnt")
	MNT_PID=$(daemon_pid "$mnt")
	PIDS+=("$MNT_PID")
	MNT_TIME=$(echo "$t0 $t1" | awk '{ printf "%.4f", $2 - $1 }')
}

umount_fs() {	# MNT PID: unmount and wait until the daemon is gone
	local mnt=$1 pid=$2
	fusermount3 -u "$mnt"
	while kill -0 "$pid" 2>/dev/null; do sleep 0.05; done
}

rss_kib() {	# PID FIELD
	awk -v f="$2:" '$1 == f { print $2 }' "/proc/$1/status"
}

# ------------------------------------------------------------- the setup
echo "== building passthrough_ll" >&2
PT_SRC=/usr/share/doc/libfuse3-dev/examples/passthrough_ll.c
[ -r "$PT_SRC" ] || apt-get install -y -q libfuse3-dev >/dev/null
cc -O2 -o "$WORK/passthrough_ll" "$PT_SRC" $(pkg-config fuse3 --cflags --libs)

echo "== smrfs on a zoned loop directory ($CAP, 64M zones) on $TMPBASE" >&2
"$CTL" zloop create "$WORK/zl" --capacity "$CAP" --zone-size 64M >/dev/null
"$MKFS" "$WORK/zl" >/dev/null
mkdir -p "$WORK/pt-src"
mount_fs smrfs "$WORK/zl" "$WORK/m-smrfs"
SM_PID=$MNT_PID
mount_fs passthrough "$WORK/pt-src" "$WORK/m-pt"
PT_PID=$MNT_PID
declare -A MNT=([smrfs]=$WORK/m-smrfs [passthrough]=$WORK/m-pt)
declare -A PID_OF=([smrfs]=$SM_PID [passthrough]=$PT_PID)
FSES="smrfs passthrough"

want() { case ",$ONLY," in *",$1,"*) return 0 ;; esac; return 1; }

# ------------------------------------------------------------------- fio
# fio_run NAME FS [fio options]: one job, JSON out; records MiB/s or IOPS.
fio_run() {
	local name=$1 fs=$2 metric=$3
	shift 3
	local j=$WORK/fio-$name-$fs.json
	fio --name="$name" --directory="${MNT[$fs]}" --ioengine=psync \
		--group_reporting --output-format=json --output="$j" "$@"
	python3 - "$j" "$metric" "$name" "$fs" >>"$RES" <<'EOF'
import json, sys
j = json.load(open(sys.argv[1]))["jobs"][0]
metric, name, fs = sys.argv[2:5]
side = j["write"] if j["write"]["io_bytes"] else j["read"]
if metric == "MiB/s":
    v = side["bw_bytes"] / 1048576
else:
    v = side["iops"]
print("%s\t%s\t%.2f\t%s\thi" % (name, fs, v, metric))
EOF
	tail -n1 "$RES" | awk -F'\t' '{ printf "  %-20s %-12s %12s %s\n", $1, $2, $3, $4 }' >&2
}

if want fio; then
	echo "== fio (sequential $SEQ_SIZE, random ${RAND_SIZE}, runtime cap ${RUNTIME}s)" >&2
	for fs in $FSES; do
		fio_run seq-write-1M $fs MiB/s --rw=write --bs=1M \
			--size=$SEQ_SIZE --filename=seq --end_fsync=1
	done
	drop_caches
	for fs in $FSES; do
		fio_run seq-read-1M $fs MiB/s --rw=read --bs=1M \
			--size=$SEQ_SIZE --filename=seq
		rm -f "${MNT[$fs]}/seq"
	done
	# Lay the random file out first, so that random writes overwrite.
	for fs in $FSES; do
		fio --name=layout --directory="${MNT[$fs]}" --rw=write --bs=1M \
			--size=$RAND_SIZE --filename=rand --end_fsync=1 \
			--output=/dev/null
	done
	for fs in $FSES; do
		fio_run rand-write-4k $fs IOPS --rw=randwrite --bs=4k \
			--size=$RAND_SIZE --filename=rand --end_fsync=1 \
			--runtime=$RUNTIME --randrepeat=1
	done
	drop_caches
	for fs in $FSES; do
		fio_run rand-read-4k $fs IOPS --rw=randread --bs=4k \
			--size=$RAND_SIZE --filename=rand --runtime=$RUNTIME
	done
	for fs in $FSES; do
		fio_run fsync-write-4k $fs IOPS --rw=randwrite --bs=4k \
			--size=$RAND_SIZE --filename=rand --fsync=32 \
			--runtime=$RUNTIME
		rm -f "${MNT[$fs]}/rand"
	done
	for fs in $FSES; do
		fio_run par4-rand-write-4k $fs IOPS --rw=randwrite --bs=4k \
			--numjobs=4 --size=$PAR_SIZE --end_fsync=1 \
			--runtime=$RUNTIME
	done
	drop_caches
	for fs in $FSES; do
		fio_run par4-rand-read-4k $fs IOPS --rw=randread --bs=4k \
			--numjobs=4 --size=$PAR_SIZE --runtime=$RUNTIME
		rm -f "${MNT[$fs]}"/par4-*
	done
fi

# -------------------------------------------------------------- metadata
meta() { python3 "$HERE/meta.py" "$@"; }

if want meta; then
	echo "== metadata: $NFILES empty files in one directory" >&2
	for fs in $FSES; do record meta-files $fs $NFILES files hi; done
	for fs in $FSES; do
		mkdir "${MNT[$fs]}/meta"
		t=$(meta create "${MNT[$fs]}/meta" $NFILES)
		record create $fs "$(awk -v n=$NFILES -v t=$t 'BEGIN { printf "%.0f", n / t }')" ops/s hi
	done
	drop_caches
	for fs in $FSES; do
		t=$(meta stat "${MNT[$fs]}/meta" $NFILES)
		record stat $fs "$(awk -v n=$NFILES -v t=$t 'BEGIN { printf "%.0f", n / t }')" ops/s hi
	done
	# The same again, caches kept: what the kernel may still answer
	# itself (its entries and attributes) a second or more later.
	for fs in $FSES; do
		t=$(meta stat "${MNT[$fs]}/meta" $NFILES)
		record stat-again $fs "$(awk -v n=$NFILES -v t=$t 'BEGIN { printf "%.0f", n / t }')" ops/s hi
	done
	drop_caches
	for fs in $FSES; do
		t=$(meta readdir "${MNT[$fs]}/meta" $NFILES)
		record readdir $fs "$(awk -v n=$NFILES -v t=$t 'BEGIN { printf "%.0f", n / t }')" names/s hi
	done
	for fs in $FSES; do
		t=$(meta unlink "${MNT[$fs]}/meta" $NFILES)
		record unlink $fs "$(awk -v n=$NFILES -v t=$t 'BEGIN { printf "%.0f", n / t }')" ops/s hi
	done
	# Lines appended to a log, 100 bytes each, one fsync at the end.
	for fs in $FSES; do
		t=$(meta append "${MNT[$fs]}/meta" $NFILES)
		record append-100 $fs "$(awk -v n=$NFILES -v t=$t 'BEGIN { printf "%.0f", n / t }')" ops/s hi
		rmdir "${MNT[$fs]}/meta"
	done
fi

if want tar; then
	tar -C /usr -cf "$WORK/src.tar" include
	nf=$(tar -tf "$WORK/src.tar" | wc -l)
	echo "== tar x, reads and rm -rf of /usr/include ($nf entries)" >&2
	for fs in $FSES; do
		t0=$(date +%s.%N)
		tar -C "${MNT[$fs]}" -xf "$WORK/src.tar"
		sync -f "${MNT[$fs]}"
		t1=$(date +%s.%N)
		record tar-x $fs "$(echo "$t0 $t1" | awk '{ printf "%.3f", $2 - $1 }')" s lo
	done
	# Every file read whole, after dropping caches and then at once again.
	bytes=$(python3 -c 'import sys, tarfile
print(sum(m.size for m in tarfile.open(sys.argv[1]) if m.isreg()))' \
		"$WORK/src.tar")
	drop_caches
	for fs in $FSES; do
		t=$(meta readtree "${MNT[$fs]}/include" $bytes)
		record read-tree $fs "$t" s lo
	done
	for fs in $FSES; do
		t=$(meta readtree "${MNT[$fs]}/include" $bytes)
		record read-tree-again $fs "$t" s lo
	done
	drop_caches
	for fs in $FSES; do
		t0=$(date +%s.%N)
		rm -rf "${MNT[$fs]}/include"
		t1=$(date +%s.%N)
		record rm-rf $fs "$(echo "$t0 $t1" | awk '{ printf "%.3f", $2 - $1 }')" s lo
	done
	rm -f "$WORK/src.tar"
fi

for fs in $FSES; do
	record rss-peak-workloads $fs $(( $(rss_kib ${PID_OF[$fs]} VmHWM) / 1024 )) MiB lo
done
umount_fs "$WORK/m-smrfs" $SM_PID
umount_fs "$WORK/m-pt" $PT_PID

# ------------------------------------------------- mount with many files
if want mount; then
	echo "== mount time and RSS with $MANY files (1000 a directory)" >&2
	"$CTL" zloop create "$WORK/zl-many" --capacity 4G --zone-size 64M >/dev/null
	"$MKFS" "$WORK/zl-many" >/dev/null
	mkdir -p "$WORK/pt-many"
	mount_fs smrfs "$WORK/zl-many" "$WORK/m-many"
	t=$(meta tree "$WORK/m-many" $MANY)
	record tree-create smrfs "$(awk -v n=$MANY -v t=$t 'BEGIN { printf "%.0f", n / t }')" ops/s hi
	umount_fs "$WORK/m-many" $MNT_PID
	meta tree "$WORK/pt-many" $MANY >/dev/null
	for fs in $FSES; do
		drop_caches
		if [ $fs = smrfs ]; then
			mount_fs smrfs "$WORK/zl-many" "$WORK/m-many"
		else
			mount_fs passthrough "$WORK/pt-many" "$WORK/m-many"
		fi
		pid=$MNT_PID
		record mount-many-s $fs "$MNT_TIME" s lo
		record mount-many-rss $fs $(( $(rss_kib $pid VmRSS) / 1024 )) MiB lo
		# passthrough_ll holds a descriptor for every inode the kernel
		# knows, so its walk may run out of them.
		if t=$(meta walk "$WORK/m-many" $MANY); then
			record walk-many $fs "$(awk -v n=$MANY -v t=$t 'BEGIN { printf "%.0f", n / t }')" files/s hi
			record walk-many-hwm $fs $(( $(rss_kib $pid VmHWM) / 1024 )) MiB lo
		else
			echo "run.sh: the walk of $fs failed" >&2
		fi
		umount_fs "$WORK/m-many" "$pid"
	done
	rm -rf "$WORK/zl-many" "$WORK/pt-many"
fi

# ------------------------------------------- a device with 95,836 zones
if want zones; then
	echo "== a zoned loop directory of $BIG_ZONES zones of $BIG_ZONE_SIZE (smr preset)" >&2
	t0=$(date +%s.%N)
	"$CTL" zloop create "$WORK/zl-big" --preset smr \
		--capacity $((BIG_ZONES * ${BIG_ZONE_SIZE%M}))M \
		--zone-size $BIG_ZONE_SIZE >/dev/null
	t1=$(date +%s.%N)
	record big-zloop-create smrfs "$(echo "$t0 $t1" | awk '{ printf "%.3f", $2 - $1 }')" s lo
	record big-zones smrfs $BIG_ZONES zones hi
	t0=$(date +%s.%N)
	if "$MKFS" "$WORK/zl-big" >/dev/null; then
		t1=$(date +%s.%N)
		record big-mkfs smrfs "$(echo "$t0 $t1" | awk '{ printf "%.3f", $2 - $1 }')" s lo
		drop_caches
		mount_fs smrfs "$WORK/zl-big" "$WORK/m-big"
		pid=$MNT_PID
		record big-mount-s smrfs "$MNT_TIME" s lo
		record big-mount-rss smrfs $(( $(rss_kib $pid VmRSS) / 1024 )) MiB lo
		umount_fs "$WORK/m-big" "$pid"
	else
		echo "run.sh: mkfs of the $BIG_ZONES-zone device failed" >&2
	fi
	rm -rf "$WORK/zl-big"
fi

echo >&2
python3 "$HERE/report.py" "$RES" "$OUT" \
	date="$(date -u +%Y-%m-%dT%H:%M:%SZ)" quick=$QUICK \
	cpus="$(nproc)" \
	cpu="$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)" \
	kernel="$(uname -r)" mem_gib="$(awk '/^MemTotal/ { printf "%.0f", $2 / 1048576 }' /proc/meminfo)" \
	smrfs="$(git -C "$HERE" describe --always --dirty 2>/dev/null || echo unknown)" \
	build="$BUILD_COMMIT" smrfs_opts="$SMRFS_OPTS"
echo "results: $OUT" >&2
