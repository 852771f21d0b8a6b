/* SPDX-License-Identifier: GPL-2.0-or-later */
/* dev_io.c - batched I/O through io_uring. */
#include "dev/dev_int.h"

int smr_dev_submit_uring(struct smr_dev *dev, struct smr_io *ios,
			 unsigned int n)
{
	(void)dev;
	(void)ios;
	(void)n;
	return -EOPNOTSUPP;
}

void smr_dev_uring_free(struct smr_dev *dev)
{
	(void)dev;
}
