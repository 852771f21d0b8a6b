/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * stdio_guard.c - descriptors 0, 1 and 2 open before anything else is.
 *
 * A program started with one of them closed gets it back from its first
 * open(2): its messages to stdout or stderr then go into whatever that
 * was (a zone file, a block device), and a daemon that points 0, 1 and 2
 * at /dev/null when it detaches points that file there too, so that its
 * writes vanish. Each program fills the gaps with /dev/null first.
 */
#include "util/smr.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

int smr_stdio_guard(void)
{
	for (;;) {
		int fd = open("/dev/null", O_RDWR);

		if (fd < 0)
			return -errno;
		if (fd > 2) {
			close(fd);
			return 0;
		}
	}
}
