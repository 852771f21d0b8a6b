/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * memcow.h - an in-memory stand-in for the COW engine (cow.h), for the
 * namespace layer's unit tests only; never linked into a program.
 *
 * Items live in a sorted array, data in a malloc'd byte array with one state
 * byte per block (free, used, freed in the running transaction). A commit
 * copies nothing: it only returns the blocks freed since the last commit to
 * the free space. smr_cow_format() and smr_cow_open() need a device and
 * return -EOPNOTSUPP here; tests make an engine with memcow_create().
 */
#ifndef SMR_TESTS_MEMCOW_H
#define SMR_TESTS_MEMCOW_H

#include <stdbool.h>
#include <stdint.h>

#include "cow/cow.h"

/* A fresh empty engine of @capacity data bytes in blocks of @block_size. */
int memcow_create(uint64_t capacity, uint32_t block_size, struct smr_cow **cp);

/* Flip one byte of data at device offset @off (to test checksums). */
void memcow_corrupt(struct smr_cow *c, uint64_t off);

/* Turn the engine read-only (as after a failed commit) or back. */
void memcow_set_read_only(struct smr_cow *c, bool ro);
/* Forget the error smr_cow_set_error() recorded. */
void memcow_clear_error(struct smr_cow *c);

/* Tree changes (failed ones too) since the last commit. */
uint64_t memcow_changes_since_commit(struct smr_cow *c);

/* Items in the trees. */
uint64_t memcow_nr_items(struct smr_cow *c);

/* Misuses seen: frees of space not in use, reads outside used space,
 * settles of data not fresh; plus the data written now and neither settled
 * nor freed. */
uint64_t memcow_nr_errors(struct smr_cow *c);

/*
 * Failure injection: the @n-th tree change (insert, update, put, delete)
 * from now fails with @err and changes nothing; 0 turns it off. Pending
 * until that change comes.
 */
void memcow_fail_change(struct smr_cow *c, uint64_t n, int err);
bool memcow_fail_pending(struct smr_cow *c);

/* The next data write fails with @err once it holds its space (after
 * the caller was told so), as a device error would, and keeps nothing. */
void memcow_fail_data_write(struct smr_cow *c, int err);

/* Call @fn(@arg) once, at the start of the next data write: another
 * writer whose changes land while a write's data goes out (the namespace
 * holds no lock then). NULL: none. */
void memcow_on_data_write(struct smr_cow *c, void (*fn)(void *), void *arg);
/* Call @fn(@arg) once, when the next data write has taken its space and
 * before it returns: a writer whose new copy is out and not mapped yet. */
void memcow_on_data_written(struct smr_cow *c, void (*fn)(void *),
			    void *arg);
/* Call @fn(@arg) once, at the start of the next commit: what a crash
 * right after that commit would find. NULL: none. */
void memcow_on_commit(struct smr_cow *c, void (*fn)(void *), void *arg);
/* Call @fn(@arg) once, at the start of the next data read (before its
 * blocks are looked at). */
void memcow_on_data_read(struct smr_cow *c, void (*fn)(void *), void *arg);

/* A hash of every item and of the number of data blocks in use: equal
 * digests mean an unchanged engine. */
uint64_t memcow_digest(struct smr_cow *c);

/* Forget the registered tree type, as closing and opening the engine
 * does: items put under one type are then seen by the next. */
void memcow_forget_type(struct smr_cow *c);

/* Commits done so far. */
uint64_t memcow_nr_commits(struct smr_cow *c);

#endif /* SMR_TESTS_MEMCOW_H */
