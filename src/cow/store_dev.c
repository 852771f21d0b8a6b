/* SPDX-License-Identifier: GPL-2.0-or-later */
/* store_dev.c - the node store over a device and an allocator. */
#include "cow/cow_priv.h"

static int sd_load(struct smr_cow *c, struct smr_ckpt *ck)
{
	(void)c;
	(void)ck;
	return -EOPNOTSUPP;
}

static void sd_close(struct smr_cow *c)
{
	(void)c;
}

const struct smr_store_ops smr_store_dev_ops = {
	.name = "device",
	.load = sd_load,
	.close = sd_close,
};

int smr_cow_format(struct smr_dev *dev, const struct smr_format_opts *o,
		   struct smr_cow_info *info)
{
	(void)dev;
	(void)o;
	(void)info;
	return -EOPNOTSUPP;
}
