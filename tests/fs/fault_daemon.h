/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fault_daemon.h - the test build of mount.smrfs (tests/mount_fault) puts
 * the fault device (src/dev/fault.h) between the device it opens and the
 * filesystem, so that the I/O error tests can make the device fail under a
 * live mount.
 *
 * The rule comes from SMRFS_FAULT, "reads|writes|resets|flushes[:AFTER[:ERRNO]]"
 * (AFTER operations of that kind still pass, default 0; ERRNO a positive
 * errno number, default EIO). It is armed when the daemon receives SIGUSR1
 * (so that a test picks the moment: after its setup is committed) and
 * cleared by SIGUSR2, as a device that comes back would be.
 */
#ifndef SMR_TESTS_FAULT_DAEMON_H
#define SMR_TESTS_FAULT_DAEMON_H

#include "dev/dev.h"

/* Before any thread starts: check SMRFS_FAULT and block SIGUSR1/SIGUSR2 so
 * that only the fault thread takes them. 0 or -EINVAL (with a message). */
int fault_daemon_init(void);
/* Stack the fault device on *@devp (replaced by it) and start the thread
 * that arms and clears the rule. */
int fault_daemon_stack(struct smr_dev **devp);
/* Stop the thread, close the fault device @dev and the device below. */
int fault_daemon_close(struct smr_dev *dev);

#endif
