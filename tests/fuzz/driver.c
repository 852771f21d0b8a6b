/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * driver.c - run a fuzz target without libFuzzer: every file named, and
 * every file in every directory named, goes through LLVMFuzzerTestOneInput
 * once. Exits 0 when all ran (a crash or a sanitizer report ends the
 * program before), 1 when an input cannot be read or none was given.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz.h"

static int run_file(const char *path, unsigned long *count)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf = NULL;
	long len;

	if (!f || fseek(f, 0, SEEK_END) || (len = ftell(f)) < 0 ||
	    fseek(f, 0, SEEK_SET)) {
		fprintf(stderr, "%s: %s\n", path, strerror(errno));
		if (f)
			fclose(f);
		return 1;
	}
	buf = malloc(len ? (size_t)len : 1);
	if (!buf || (len && fread(buf, (size_t)len, 1, f) != 1)) {
		fprintf(stderr, "%s: cannot read\n", path);
		free(buf);
		fclose(f);
		return 1;
	}
	fclose(f);
	LLVMFuzzerTestOneInput(buf, (size_t)len);
	free(buf);
	(*count)++;
	return 0;
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int run_dir(const char *dir, unsigned long *count)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	char **names = NULL;
	size_t n = 0, cap = 0;
	int rc = 0;

	if (!d) {
		fprintf(stderr, "%s: %s\n", dir, strerror(errno));
		return 1;
	}
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		if (n == cap) {
			char **nn = realloc(names, (cap = cap ? 2 * cap : 64) *
							   sizeof(*names));
			if (!nn)
				abort();
			names = nn;
		}
		names[n] = malloc(strlen(dir) + strlen(de->d_name) + 2);
		if (!names[n])
			abort();
		sprintf(names[n++], "%s/%s", dir, de->d_name);
	}
	closedir(d);
	/* In name order, so that a run is the same run everywhere. */
	qsort(names, n, sizeof(*names), cmp_names);
	for (size_t i = 0; i < n; i++) {
		rc |= run_file(names[i], count);
		free(names[i]);
	}
	free(names);
	return rc;
}

int main(int argc, char **argv)
{
	unsigned long count = 0;
	int rc = 0;

	for (int i = 1; i < argc; i++) {
		struct stat st;

		if (stat(argv[i], &st)) {
			fprintf(stderr, "%s: %s\n", argv[i], strerror(errno));
			rc = 1;
		} else if (S_ISDIR(st.st_mode)) {
			rc |= run_dir(argv[i], &count);
		} else {
			rc |= run_file(argv[i], &count);
		}
	}
	printf("%s: %lu inputs run\n", argv[0], count);
	return rc || !count;
}
