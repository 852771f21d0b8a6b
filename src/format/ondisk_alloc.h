/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ondisk_alloc.h - on-disk structures of the allocator modules' persisted
 * state. Part of ondisk.h (included from it); the same rules apply.
 */
#ifndef SMR_FORMAT_ONDISK_ALLOC_H
#define SMR_FORMAT_ONDISK_ALLOC_H

#endif /* SMR_FORMAT_ONDISK_ALLOC_H */
