/* SPDX-License-Identifier: GPL-2.0-or-later */
/* mtab.c - fields of the kernel's mount tables. */
#include "util/smr.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void smr_mtab_unescape(char *s)
{
	char *out = s;

	for (; *s; s++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' &&
		    s[2] >= '0' && s[2] <= '7' && s[3] >= '0' && s[3] <= '7') {
			*out++ = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 +
					(s[3] - '0'));
			s += 3;
		} else {
			*out++ = *s;
		}
	}
	*out = '\0';
}

/* Copy @src into @dst of @len bytes (none where !@dst), cut if need be. */
static void copy_cut(char *dst, size_t len, const char *src)
{
	if (dst && len)
		snprintf(dst, len, "%s", src);
}

int smr_mountinfo_find(const char *path, char *fstype, size_t fstype_len,
		       char *opts, size_t opts_len)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char *line = NULL;
	size_t cap = 0;
	int rc = -ENOENT;

	if (!f)
		return -errno;
	while (getline(&line, &cap, f) > 0) {
		char *save = NULL, *mnt, *mopts, *sep, *type;
		char *tok = strtok_r(line, " ", &save);

		/* ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS ... - TYPE SOURCE */
		for (int i = 0; tok && i < 4; i++)
			tok = strtok_r(NULL, " ", &save);
		mnt = tok;
		mopts = mnt ? strtok_r(NULL, " ", &save) : NULL;
		sep = mopts && save ? strstr(save, "- ") : NULL;
		if (!sep || (sep != save && sep[-1] != ' '))
			continue;
		type = strtok_r(sep + 2, " ", &save);
		if (!type)
			continue;
		smr_mtab_unescape(mnt);
		if (strcmp(mnt, path))
			continue;
		/* Later lines are newer mounts, on top of earlier ones. */
		copy_cut(fstype, fstype_len, type);
		copy_cut(opts, opts_len, mopts);
		rc = 0;
	}
	free(line);
	fclose(f);
	return rc;
}
