/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fuzz.h - what the fuzz targets of smrfs share (docs/design/fuzzing.md).
 *
 * Every target is one LLVMFuzzerTestOneInput(). Built with clang and
 * -fsanitize=fuzzer it is a libFuzzer program; built with any compiler and
 * driver.c it is a plain program that runs the inputs it is given (files or
 * directories of files), which is what make check does with the seed corpus.
 *
 * Inputs share one shape: a flags byte, a target's fixed header, then
 * records that put bytes at offsets of a zero-filled image (a "sparse
 * image"), so that a seed made from a real filesystem of tens of MiB is
 * tens of KiB: only its non-zero bytes are in it.
 *
 *   record: __le32 offset, __le16 length, length bytes
 *
 * A record past the image's end is dropped, one that crosses it is cut.
 * With FUZZ_F_RESEAL in the flags, the target stamps the checksums of the
 * image's self-describing blocks before parsing it (fuzz_img_reseal), so
 * that mutated bytes reach the decoders behind the checksum; without it
 * they meet the checksum first, as on a real device.
 */
#ifndef SMR_TESTS_FUZZ_H
#define SMR_TESTS_FUZZ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define FUZZ_F_RESEAL 0x01 /* stamp checksums before parsing */
/* The targets' own flags. */
#define FUZZ_SUPER_CKPT 0x02   /* fuzz_super: a checkpoint, not a superblock */
#define FUZZ_ALLOC_FLASH 0x08  /* fuzz_alloc: flash, not rotational */
#define FUZZ_IMAGE_CHANGE 0x02 /* fuzz_image: mount read-write, change, clean */
#define FUZZ_IMAGE_REPAIR 0x04 /* fuzz_image: fsck repairs */
#define FUZZ_LOG_PAYLOAD 0x02  /* fuzz_log: a record's payload, not a piece */

/* Record header: offset and length. */
#define FUZZ_REC_HDR 6

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Once per process: logging off (FUZZ_VERBOSE=1 in the environment keeps
 * it), a scratch directory removed at exit. */
void fuzz_setup(void);
/* The scratch directory (on tmpfs when /dev/shm exists). */
const char *fuzz_tmpdir(void);

/* Little-endian reads from an input, zero past its end. */
struct fuzz_in {
	const uint8_t *p;
	size_t n;
};
uint8_t fuzz_u8(struct fuzz_in *in);
uint16_t fuzz_u16(struct fuzz_in *in);
uint32_t fuzz_u32(struct fuzz_in *in);
uint64_t fuzz_u64(struct fuzz_in *in);

/* Apply the records left in @in to the flat buffer @buf of @size bytes
 * (which the caller zeroed). */
void fuzz_sparse_flat(struct fuzz_in *in, uint8_t *buf, size_t size);

/* Write @len bytes of @buf, which sit at image offset @base, as records of
 * their non-zero runs (seed making). Returns 0 or -errno. */
int fuzz_sparse_pack(FILE *out, const uint8_t *buf, size_t len,
		     uint64_t base);

/* ------------------------------------------------------------------------
 * Sparse images: 4 KiB pages, only those a record touched are kept.
 * ------------------------------------------------------------------------ */
#define FUZZ_PAGE 4096

struct fuzz_img {
	uint64_t size;     /* bytes of the image */
	size_t nr, cap;
	uint64_t *idx;     /* page numbers, sorted */
	uint8_t **page;    /* FUZZ_PAGE bytes each */
};

void fuzz_img_init(struct fuzz_img *img, uint64_t size);
void fuzz_img_free(struct fuzz_img *img);
/* Apply the records left in @in. -ENOMEM. */
int fuzz_img_load(struct fuzz_img *img, struct fuzz_in *in);
/* Copy bytes out (absent pages read as zeros) or in (pages made). */
void fuzz_img_get(const struct fuzz_img *img, uint64_t off, void *buf,
		  size_t len);
int fuzz_img_put(struct fuzz_img *img, uint64_t off, const void *buf,
		 size_t len);
/*
 * Stamp the checksum of every self-describing block that starts a page
 * present in @img and whose header names a plausible length: allocator
 * state blocks and B-tree nodes first, then checkpoints (after their
 * reference to the allocator state gets the checksum of what is there
 * now), then superblocks.
 */
void fuzz_img_reseal(struct fuzz_img *img);
/* XXH3-64 of the allocator state whose block 0 is at @off, as a checkpoint
 * holds it; false if block 0 does not describe a readable state of @len
 * bytes. */
bool fuzz_img_state_hash(const struct fuzz_img *img, uint64_t off,
			 uint64_t len, uint64_t *hash);
/* Stamp the checksum of the @len-byte block at @off. */
void fuzz_img_stamp(struct fuzz_img *img, uint64_t off, size_t len);

/* ------------------------------------------------------------------------
 * Devices the whole-image targets parse.
 * ------------------------------------------------------------------------ */
enum fuzz_geom {
	FUZZ_GEOM_FILE = 0,   /* regular file, 24 MiB */
	FUZZ_GEOM_ZCNV = 1,   /* zoned loop: 32 zones of 2 MiB, zone 0
			       * conventional */
	FUZZ_GEOM_ZLOG = 2,   /* zoned loop: 32 zones of 2 MiB, all
			       * sequential (checkpoint log in zones 0-1) */
	FUZZ_GEOM_NR = 3,
};
#define FUZZ_ZONE_SIZE (2ULL << 20)
#define FUZZ_NR_ZONES 32

/* The path of geometry @g's device in the scratch directory, created on
 * first use. */
const char *fuzz_dev_path(enum fuzz_geom g);
uint64_t fuzz_dev_size(enum fuzz_geom g);
/*
 * Lay @img on geometry @g's device. @wp (zoned: FUZZ_NR_ZONES write
 * pointers, in bytes from each zone's start; NULL = up to the last page
 * present in the zone) says how much of each sequential zone is written;
 * pages past it are dropped, as a device reads zeros there. 0 or -errno.
 */
int fuzz_dev_write(enum fuzz_geom g, const struct fuzz_img *img,
		   const uint32_t *wp);

/* ------------------------------------------------------------------------
 * The namespace walk of the item and image targets.
 * ------------------------------------------------------------------------ */
struct smr_ns;
/* Look at everything reachable from the root, bounded: names, attributes,
 * file data, symlinks, xattrs. With @change, also make a few changes
 * (write, truncate, mkdir, rename, unlink, xattrs), as a mount would. */
void fuzz_ns_walk(struct smr_ns *ns, bool change);

#endif /* SMR_TESTS_FUZZ_H */
