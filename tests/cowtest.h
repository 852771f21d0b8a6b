/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * cowtest.h - the FS tree's type for the engine's own tests. The engine
 * changes and checks a tree only through its registered type (cow.h), and
 * the namespace, which registers the real one, lies above the engine: these
 * tests fill the tree with items of their own, so their type takes any item
 * up to SMR_COW_MAX_ITEM.
 */
#ifndef SMR_TESTS_COWTEST_H
#define SMR_TESTS_COWTEST_H

#include "cow/cow.h"
#include "dev/dev.h"
#include "format/sb.h"
#include "testutil.h"

static inline int smr_test_register_fs(struct smr_cow *c)
{
	static const struct smr_tree_type any = {
		.id = SMR_TREE_FS,
		.name = "fs",
		.max_item = SMR_COW_MAX_ITEM,
	};

	return smr_cow_tree_register(c, &any);
}

/* After an open of *@cp that returned @rc: the type above registered,
 * and the engine closed if that fails. */
static inline int smr_test_typed(int rc, struct smr_cow **cp)
{
	if (rc)
		return rc;
	rc = smr_test_register_fs(*cp);
	if (rc) {
		smr_cow_close(*cp);
		*cp = NULL;
	}
	return rc;
}

/* smr_cow_open with the type above registered. */
static inline int smr_test_cow_open(struct smr_dev *dev,
				    const struct smr_cow_opts *o,
				    struct smr_cow **cp)
{
	return smr_test_typed(smr_cow_open(dev, o, cp), cp);
}

/* Change both superblock copies of the regular file @path with @change. */
static inline void smr_test_rewrite_sb(const char *path,
				       void (*change)(struct smr_sb *))
{
	uint8_t *buf = smr_dev_buf_alloc(SMR_SB_SIZE);
	struct smr_dev *dev;
	struct smr_sb sb;

	SMR_ASSERT_OK(smr_dev_open(path, NULL, &dev));
	SMR_ASSERT_OK(smr_dev_read(dev, buf, SMR_SB_SIZE, 0));
	SMR_ASSERT_OK(smr_sb_from_disk(buf, 0, &sb));
	change(&sb);
	for (uint64_t at = 0; at <= SMR_SB_SIZE; at += SMR_SB_SIZE) {
		SMR_ASSERT_OK(smr_sb_to_disk(&sb, buf, at));
		SMR_ASSERT_OK(smr_dev_write(dev, buf, SMR_SB_SIZE, at));
	}
	smr_dev_close(dev);
	smr_dev_buf_free(buf);
}

#endif /* SMR_TESTS_COWTEST_H */
