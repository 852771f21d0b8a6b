/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * crash.h - the filesystem-level crash-consistency sweep: workloads of
 * namespace operations (workload.c) and the driver that records them on a
 * fault device and checks every crash state it builds from the log
 * (crash.c). docs/design/crash.md describes the method.
 */
#ifndef SMR_TESTS_CRASH_H
#define SMR_TESTS_CRASH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct smr_cow;
struct smr_ns;

/* One operation of a workload. Paths are relative to the root, '/'
 * separated; the executor looks every component up. */
enum cr_kind {
	CR_CREATE,   /* a: new regular file */
	CR_MKDIR,    /* a */
	CR_RMDIR,    /* a */
	CR_WRITE,    /* a, off (CR_APPEND: at the size), len */
	CR_TRUNCATE, /* a to off */
	CR_LINK,     /* a -> new name b */
	CR_UNLINK,   /* a */
	CR_RENAME,   /* a -> b */
	CR_SYMLINK,  /* a pointing to the text b */
	CR_SETXATTR, /* a, name b, value of len bytes */
	CR_RMXATTR,  /* a, name b */
	CR_FALLOC,   /* a, mode, off, len */
	CR_CHMOD,    /* a to mode */
	CR_FSYNC,    /* a (the file or directory itself) */
	CR_SYNC,
	CR_CLEAN,    /* the cleaner, synchronously: up to len zones */
	CR_ORPHAN,   /* open a and unlink it, left open: an orphan */
	CR_TMPFILE,  /* O_TMPFILE in a's directory, len bytes, linked as a */
	CR_WHITEOUT, /* a -> b, a whiteout left at a (RENAME_WHITEOUT) */
	CR_NR_KINDS
};

#define CR_APPEND UINT64_MAX

struct cr_op {
	enum cr_kind kind;
	const char *a, *b;
	uint64_t off, len;
	int mode;
};

/* What a workload runs on: the stack the daemon would assemble. */
struct cr_fs {
	struct smr_cow *cow;
	struct smr_ns *ns;
};

/* Run @op; @seed makes written data distinct. Returns 0 or the negative
 * errno of the call (an operation may fail on the state the ones before
 * left: that is part of the workload, not an error of the harness). */
int cr_op_run(struct cr_fs *fs, const struct cr_op *op, uint64_t seed);

/* A line that names @op, into @buf. */
void cr_op_str(const struct cr_op *op, char *buf, size_t size);

/* True for fsync and sync: a success makes everything before durable. */
bool cr_op_is_persist(const struct cr_op *op);

/*
 * The visible state of the whole namespace as text: one line per name,
 * depth first in name order, with the type, mode, link count, size, blocks,
 * inode number, mtime and ctime, a hash of the contents (files), the target
 * (symlinks) and a hash of every extended attribute. Atime is left out: a
 * read changes it. Returns a malloc'ed string or NULL with *@err set.
 */
char *cr_snapshot(struct cr_fs *fs, int *err);

/* ------------------------------------------------------------------------
 * Workloads
 * ------------------------------------------------------------------------ */
struct cr_workload {
	char name[96];
	struct cr_op *ops;
	size_t nr_ops;
	uint64_t seed;
};

/* The fixed initial state every bounded workload starts from. */
int cr_initial_state(struct cr_fs *fs);

/* The operations of the bounded space (ACE): how many, and number @i. */
size_t cr_ace_nr_ops(void);
const struct cr_op *cr_ace_op(size_t i);

/* The persistence calls that may follow an operation: fsync of its file,
 * fsync of its parent directory, sync. */
#define CR_NR_PERSIST 3
extern const char *const cr_persist_names[CR_NR_PERSIST];

/* Fill @w with the bounded sequence @ops (@n of cr_ace_op indexes), each
 * followed by the persistence call @persist[k]. */
void cr_ace_workload(struct cr_workload *w, const size_t *ops,
		     const int *persist, size_t n);

/* A seeded random workload of @n operations with fsync and sync among them. */
void cr_random_workload(struct cr_workload *w, uint64_t seed, size_t n);

/* The initial state of the cleaner workloads: files filling most of a
 * small zoned device. */
int cr_clean_initial_state(struct cr_fs *fs);
/* Overwrites, deletes and new files at high utilization, with the cleaner
 * run synchronously between fsyncs. */
void cr_clean_workload(struct cr_workload *w, uint64_t seed, size_t rounds);

/* @n small writes, creates and unlinks, each followed by an fsync or sync:
 * enough commits to move the checkpoint log of a device without
 * conventional zones to its other zone. */
void cr_commit_workload(struct cr_workload *w, uint64_t seed, size_t n);

/* The fsync log's workloads: @n writes, overwrites, truncates, holes and
 * chmods of the initial files, an fsync of one of them after one to three
 * of those (so that several records follow one commit), now and then a
 * namespace change or a sync between them. */
void cr_fsync_workload(struct cr_workload *w, uint64_t seed, size_t n);

void cr_workload_free(struct cr_workload *w);

#endif /* SMR_TESTS_CRASH_H */
