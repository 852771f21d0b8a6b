/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ns_audit.c - open an smrfs device read-only and run the namespace audit
 * (smr_ns_check) on it; the integration tests run it after unmounting.
 * Exit status: 0 consistent, 1 problems found, 2 could not check.
 */
#include <stdio.h>
#include <string.h>

#include "cow/cow.h"
#include "dev/dev.h"
#include "namespace/ns.h"

int main(int argc, char **argv)
{
	struct smr_dev_opts dopts = { .read_only = true };
	struct smr_cow_opts copts = { .read_only = true };
	struct smr_dev *dev;
	struct smr_cow *cow;
	struct smr_ns *ns;
	uint64_t problems = 0;
	int rc;

	if (argc != 2) {
		fprintf(stderr, "usage: ns_audit DEVICE\n");
		return 2;
	}
	rc = smr_dev_open(argv[1], &dopts, &dev);
	if (rc) {
		fprintf(stderr, "ns_audit: %s: %s\n", argv[1], strerror(-rc));
		return 2;
	}
	rc = smr_cow_open(dev, &copts, &cow);
	if (rc) {
		fprintf(stderr, "ns_audit: %s: %s\n", argv[1], strerror(-rc));
		smr_dev_close(dev);
		return 2;
	}
	rc = smr_ns_open(cow, NULL, &ns);
	if (!rc) {
		rc = smr_ns_check(ns, &problems);
		smr_ns_close(ns);
	}
	smr_cow_close(cow);
	smr_dev_close(dev);
	if (rc && rc != -SMR_EFSCORRUPTED) {
		fprintf(stderr, "ns_audit: %s: %s\n", argv[1], strerror(-rc));
		return 2;
	}
	if (problems) {
		fprintf(stderr, "ns_audit: %s: %llu problems\n", argv[1],
			(unsigned long long)problems);
		return 1;
	}
	return 0;
}
