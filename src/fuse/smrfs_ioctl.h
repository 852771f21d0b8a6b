/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * smrfs_ioctl.h - the ioctls a mounted smrfs answers on any of its
 * directories (the daemon's FUSE ioctl handler), for smrfsctl stat and
 * zones and for mount.smrfs -o remount. Shared by the daemon, smrfsctl and
 * mount.smrfs; nothing else.
 *
 * All are "restricted" FUSE ioctls: the kernel takes the buffer size from
 * the command number (_IOC_SIZE, at most 16 KiB - 1) and copies that many
 * bytes in (_IOC_WRITE) and out (_IOC_READ). The structs are fixed-size,
 * native-endian (caller and daemon run on one machine), and start with a
 * version: a daemon refuses a version it does not know with EINVAL. New
 * fields are taken from the reserved space, where zero means what a peer
 * that does not know them does (an older daemon leaves a figure zero, and
 * ignores a remount's option whose zero means "unchanged").
 *
 *   SMRFS_IOC_STAT   _IOR:  the whole of smrfsctl stat in one call.
 *   SMRFS_IOC_ZONES  _IOWR: zones [first, first + count) of the device,
 *                    at most SMRFS_IOC_ZONES_MAX a call; the caller sets
 *                    version and first, the daemon fills the rest. ENOTTY
 *                    from a device that is not zoned, EINVAL for a first
 *                    zone past the last.
 *   SMRFS_IOC_REMOUNT _IOW: go read-only (everything committed first,
 *                    nothing written after) or writable again, and take
 *                    the atime options and commit interval if given
 *                    (smr_ns_remount). Root's and the mounting user's
 *                    only (EPERM); EROFS to go writable where the mount
 *                    was read-only from the start or an error made it so.
 */
#ifndef SMR_FUSE_SMRFS_IOCTL_H
#define SMR_FUSE_SMRFS_IOCTL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/ioctl.h>

#include "cow/cow.h"

#define SMRFS_IOC_MAGIC 0xf5
#define SMRFS_IOC_VERSION 1

/* Bits of smrfs_ioc_stat.flags. */
#define SMRFS_STAT_ZONED (1u << 0)
#define SMRFS_STAT_HOST_AWARE (1u << 1)
#define SMRFS_STAT_ROTATIONAL (1u << 2)
#define SMRFS_STAT_READ_ONLY (1u << 3)
#define SMRFS_STAT_GC (1u << 4)   /* the cleaner's figures are filled */

struct smrfs_ioc_stat {
	uint32_t version;        /* SMRFS_IOC_VERSION */
	uint32_t flags;          /* SMRFS_STAT_* */
	char dev_kind[8];
	char backend[8];
	char alloc[16];
	char alloc_why[160];
	char label[64];
	uint8_t uuid[16];
	uint32_t block_size;
	uint32_t node_size;
	uint32_t format_major;
	uint32_t format_minor;
	uint32_t nr_zones;
	uint32_t nr_cnv_zones;
	uint32_t zones_meta;
	uint32_t zones_free;
	uint32_t zones_open;
	uint32_t zones_active;
	uint32_t zones_full;
	uint32_t max_open;
	uint32_t max_active;
	uint32_t pad;
	uint64_t zone_size;
	uint64_t zone_cap;
	uint64_t dev_capacity;
	uint64_t data_start;
	uint64_t gen;
	uint64_t capacity;       /* managed: smr_cow_space */
	uint64_t used;
	uint64_t free;
	uint64_t reclaimable;
	uint64_t reserved;
	uint64_t bytes_allocated[4];
	uint64_t bytes_freed;
	uint64_t nr_allocs;
	uint64_t zones_reset;
	uint64_t zones_finished;
	uint64_t commits;
	uint64_t nodes_written;
	uint64_t nr_inodes;
	/* Valid with SMRFS_STAT_GC (an older daemon leaves them zero). */
	uint64_t user_bytes;
	uint64_t device_bytes;
	uint64_t reloc_bytes;
	uint64_t gc_zones;
	uint64_t gc_runs;
	uint64_t gc_usecs;       /* an older daemon leaves it zero */
	uint64_t overhead;       /* an older daemon leaves it zero */
	uint64_t log_records;    /* fsync log records; an older daemon
				  * leaves it zero */
	/* The daemon that answers: its process id and the inode number of
	 * its pid namespace, for umount.smrfs to wait for it. An older
	 * daemon leaves them zero. */
	uint64_t daemon_pid;
	uint64_t daemon_pidns;
	uint64_t spare[22];      /* zero; for later versions */
};

_Static_assert(sizeof(struct smrfs_ioc_stat) == 760,
	       "struct smrfs_ioc_stat is ABI");
_Static_assert(offsetof(struct smrfs_ioc_stat, zone_size) == 336,
	       "struct smrfs_ioc_stat is ABI");

/* Bits of smrfs_ioc_zone.flags: SMR_COW_ZONE_* of cow.h. */
struct smrfs_ioc_zone {
	uint64_t start;
	uint64_t len;
	uint64_t cap;
	uint64_t written;
	int64_t live;            /* -1: not counted by the allocator */
	uint8_t type;
	uint8_t cond;
	uint8_t flags;
	uint8_t pad[5];
};

_Static_assert(sizeof(struct smrfs_ioc_zone) == 48,
	       "struct smrfs_ioc_zone is ABI");

#define SMRFS_IOC_ZONES_MAX 340

struct smrfs_ioc_zones {
	uint32_t version;        /* in: SMRFS_IOC_VERSION */
	uint32_t first;          /* in: first zone */
	uint32_t count;          /* out: zones filled */
	uint32_t nr_zones;       /* out: zones of the device */
	struct smrfs_ioc_zone z[SMRFS_IOC_ZONES_MAX];
};

_Static_assert(sizeof(struct smrfs_ioc_zones) < (1 << 14),
	       "the size must fit _IOC_SIZE");

/* Bits of smrfs_ioc_remount.flags. */
#define SMRFS_REMOUNT_RO (1u << 0)
#define SMRFS_REMOUNT_ATIME (1u << 1)      /* atime and NODIRATIME given */
#define SMRFS_REMOUNT_NODIRATIME (1u << 2)

/* Values of smrfs_ioc_remount.gc (gc=). */
#define SMRFS_REMOUNT_GC_COST_BENEFIT 1
#define SMRFS_REMOUNT_GC_GREEDY 2
#define SMRFS_REMOUNT_GC_OFF 3

struct smrfs_ioc_remount {
	uint32_t version;        /* SMRFS_IOC_VERSION */
	uint32_t flags;          /* SMRFS_REMOUNT_* */
	uint32_t atime;          /* enum smr_ns_atime */
	uint32_t commit_secs;    /* commit=; 0: unchanged */
	uint32_t gc;             /* SMRFS_REMOUNT_GC_*; 0: unchanged */
	uint32_t gc_low;         /* gc_low=; 0: unchanged */
	uint32_t gc_high;        /* gc_high=; 0: unchanged */
	uint32_t reserved;
};

_Static_assert(sizeof(struct smrfs_ioc_remount) == 32,
	       "struct smrfs_ioc_remount is ABI");

#define SMRFS_IOC_STAT _IOR(SMRFS_IOC_MAGIC, 1, struct smrfs_ioc_stat)
#define SMRFS_IOC_ZONES _IOWR(SMRFS_IOC_MAGIC, 2, struct smrfs_ioc_zones)
#define SMRFS_IOC_REMOUNT _IOW(SMRFS_IOC_MAGIC, 3, struct smrfs_ioc_remount)

/* The engine's figures to the wire struct and back. */
static inline void smrfs_ioc_stat_pack(struct smrfs_ioc_stat *o,
				       const struct smr_cow_fsstat *st,
				       uint64_t nr_inodes)
{
	memset(o, 0, sizeof(*o));
	o->version = SMRFS_IOC_VERSION;
	o->flags = (st->zoned ? SMRFS_STAT_ZONED : 0) |
		   (st->host_aware ? SMRFS_STAT_HOST_AWARE : 0) |
		   (st->rotational ? SMRFS_STAT_ROTATIONAL : 0) |
		   (st->read_only ? SMRFS_STAT_READ_ONLY : 0) |
		   (st->has_gc ? SMRFS_STAT_GC : 0);
	memcpy(o->dev_kind, st->dev_kind, sizeof(o->dev_kind));
	memcpy(o->backend, st->backend, sizeof(o->backend));
	memcpy(o->alloc, st->info.alloc, sizeof(o->alloc));
	memcpy(o->alloc_why, st->info.alloc_why, sizeof(o->alloc_why));
	memcpy(o->label, st->info.label, sizeof(o->label));
	memcpy(o->uuid, st->info.uuid, sizeof(o->uuid));
	o->block_size = st->info.block_size;
	o->node_size = st->info.node_size;
	o->format_major = st->info.format_major;
	o->format_minor = st->info.format_minor;
	o->nr_zones = st->nr_zones;
	o->nr_cnv_zones = st->nr_cnv_zones;
	o->zones_meta = st->zones_meta;
	o->zones_free = st->zones_free;
	o->zones_open = st->zones_open;
	o->zones_active = st->zones_active;
	o->zones_full = st->zones_full;
	o->max_open = st->max_open;
	o->max_active = st->max_active;
	o->zone_size = st->zone_size;
	o->zone_cap = st->zone_cap;
	o->dev_capacity = st->info.capacity;
	o->data_start = st->info.data_start;
	o->gen = st->info.gen;
	o->capacity = st->space.capacity;
	o->used = st->space.used;
	o->free = st->space.free;
	o->reclaimable = st->space.reclaimable;
	o->reserved = st->space.reserved;
	o->overhead = st->space.overhead;
	memcpy(o->bytes_allocated, st->bytes_allocated,
	       sizeof(o->bytes_allocated));
	o->bytes_freed = st->bytes_freed;
	o->nr_allocs = st->nr_allocs;
	o->zones_reset = st->zones_reset;
	o->zones_finished = st->zones_finished;
	o->commits = st->commits;
	o->nodes_written = st->nodes_written;
	o->log_records = st->log_records;
	o->nr_inodes = nr_inodes;
	o->user_bytes = st->user_bytes;
	o->device_bytes = st->device_bytes;
	o->reloc_bytes = st->reloc_bytes;
	o->gc_zones = st->gc_zones;
	o->gc_runs = st->gc_runs;
	o->gc_usecs = st->gc_usecs;
}

static inline void smrfs_ioc_stat_unpack(const struct smrfs_ioc_stat *o,
					 struct smr_cow_fsstat *st,
					 uint64_t *nr_inodes)
{
	memset(st, 0, sizeof(*st));
	st->zoned = o->flags & SMRFS_STAT_ZONED;
	st->host_aware = o->flags & SMRFS_STAT_HOST_AWARE;
	st->rotational = o->flags & SMRFS_STAT_ROTATIONAL;
	st->read_only = o->flags & SMRFS_STAT_READ_ONLY;
	st->has_gc = o->flags & SMRFS_STAT_GC;
	st->user_bytes = o->user_bytes;
	st->device_bytes = o->device_bytes;
	st->reloc_bytes = o->reloc_bytes;
	st->gc_zones = o->gc_zones;
	st->gc_runs = o->gc_runs;
	st->gc_usecs = o->gc_usecs;
	memcpy(st->dev_kind, o->dev_kind, sizeof(st->dev_kind));
	st->dev_kind[sizeof(st->dev_kind) - 1] = 0;
	memcpy(st->backend, o->backend, sizeof(st->backend));
	st->backend[sizeof(st->backend) - 1] = 0;
	memcpy(st->info.alloc, o->alloc, sizeof(st->info.alloc));
	st->info.alloc[sizeof(st->info.alloc) - 1] = 0;
	memcpy(st->info.alloc_why, o->alloc_why, sizeof(st->info.alloc_why));
	st->info.alloc_why[sizeof(st->info.alloc_why) - 1] = 0;
	memcpy(st->info.label, o->label, sizeof(st->info.label));
	st->info.label[sizeof(st->info.label) - 1] = 0;
	memcpy(st->info.uuid, o->uuid, sizeof(st->info.uuid));
	st->info.block_size = o->block_size;
	st->info.node_size = o->node_size;
	st->info.format_major = o->format_major;
	st->info.format_minor = o->format_minor;
	st->nr_zones = o->nr_zones;
	st->nr_cnv_zones = o->nr_cnv_zones;
	st->zones_meta = o->zones_meta;
	st->zones_free = o->zones_free;
	st->zones_open = o->zones_open;
	st->zones_active = o->zones_active;
	st->zones_full = o->zones_full;
	st->max_open = o->max_open;
	st->max_active = o->max_active;
	st->zone_size = o->zone_size;
	st->zone_cap = o->zone_cap;
	st->info.capacity = o->dev_capacity;
	st->info.data_start = o->data_start;
	st->info.gen = o->gen;
	st->space.block_size = o->block_size;
	st->space.capacity = o->capacity;
	st->space.used = o->used;
	st->space.free = o->free;
	st->space.reclaimable = o->reclaimable;
	st->space.reserved = o->reserved;
	st->space.overhead = o->overhead;
	memcpy(st->bytes_allocated, o->bytes_allocated,
	       sizeof(st->bytes_allocated));
	st->bytes_freed = o->bytes_freed;
	st->nr_allocs = o->nr_allocs;
	st->zones_reset = o->zones_reset;
	st->zones_finished = o->zones_finished;
	st->commits = o->commits;
	st->nodes_written = o->nodes_written;
	st->log_records = o->log_records;
	*nr_inodes = o->nr_inodes;
}

#endif /* SMR_FUSE_SMRFS_IOCTL_H */
