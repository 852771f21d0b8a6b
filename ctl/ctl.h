/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ctl.h - what the files of smrfsctl share: the commands of the top-level
 * table and the one-line error reports.
 */
#ifndef SMR_CTL_CTL_H
#define SMR_CTL_CTL_H

/* Exit status of a usage error. */
#define EXIT_USAGE 2

/*
 * Report a failed library call as one line on stderr: the library's own
 * last warning or error if it logged one, else @what and the text of
 * @rc (a negative errno). Returns 1, the exit status of a failure.
 */
int ctl_fail(const char *cmd, const char *what, int rc);

/* Forget the library's last message (after an error that was handled). */
void ctl_clear_log(void);

/* Print "smrfsctl: " @fmt (with one %s, @arg) " (see --help)" on stderr;
 * returns EXIT_USAGE. */
int ctl_usage_error(const char *fmt, const char *arg);

/* smrfsctl stat and smrfsctl zones (stat.c). argv[0] is the command's
 * name. Return the exit status. */
int cmd_stat(int argc, char **argv);
int cmd_zones(int argc, char **argv);

#endif /* SMR_CTL_CTL_H */
