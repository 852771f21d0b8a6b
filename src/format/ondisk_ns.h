/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ondisk_ns.h - on-disk layouts of the namespace layer's items (inodes,
 * directory entries, extents, xattrs). Part of ondisk.h (included from it);
 * the same rules apply.
 */
#ifndef SMR_FORMAT_ONDISK_NS_H
#define SMR_FORMAT_ONDISK_NS_H

#endif /* SMR_FORMAT_ONDISK_NS_H */
