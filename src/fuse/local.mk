# SPDX-License-Identifier: GPL-2.0-or-later
# mount.smrfs: the FUSE daemon, a thin adapter over the namespace layer.
sbin_PROGRAMS += src/fuse/mount.smrfs
src_fuse_mount_smrfs_SOURCES = \
	src/fuse/fuse_ops.h \
	src/fuse/fuse_ops.c \
	src/fuse/session_io.c \
	src/fuse/main.c
src_fuse_mount_smrfs_CFLAGS = $(AM_CFLAGS) $(FUSE_CFLAGS) $(MOUNT_CFLAGS)
src_fuse_mount_smrfs_LDADD = libsmrfs.la $(FUSE_LIBS) $(MOUNT_LIBS)

# umount.smrfs: umount(8)'s helper (as umount.fuse.smrfs), which returns
# once the daemon has written its last commit.
sbin_PROGRAMS += src/fuse/umount.smrfs
src_fuse_umount_smrfs_SOURCES = src/fuse/umount.c src/fuse/smrfs_ioctl.h
src_fuse_umount_smrfs_LDADD = src/util/libsmrfs_util.la

# The same daemon over the in-memory engine of the tests: a fresh empty
# filesystem per mount, for trying the adapter without a device.
check_PROGRAMS += tests/mount_memcow
tests_mount_memcow_SOURCES = src/fuse/fuse_ops.c src/fuse/session_io.c \
	src/fuse/main.c tests/memcow.c
tests_mount_memcow_CPPFLAGS = $(AM_CPPFLAGS) -DSMR_FUSE_MEMCOW
tests_mount_memcow_CFLAGS = $(AM_CFLAGS) $(FUSE_CFLAGS) $(MOUNT_CFLAGS)
tests_mount_memcow_LDADD = src/namespace/libsmrfs_ns.la \
	src/format/libsmrfs_format.la src/util/libsmrfs_util.la \
	$(XXHASH_LIBS) $(FUSE_LIBS) $(MOUNT_LIBS) -lpthread

# The namespace audit of an unmounted device, for the integration tests.
check_PROGRAMS += tests/fs/ns_audit
tests_fs_ns_audit_SOURCES = tests/fs/ns_audit.c
tests_fs_ns_audit_LDADD = libsmrfs.la

# Integration tests: mkfs, mount and use real mounts (they skip, exit 77,
# where FUSE or the programs are missing).
SMR_FS_TESTS = \
	tests/fs/mount_zloop.sh \
	tests/fs/mount_file.sh \
	tests/fs/mount_relative.sh \
	tests/fs/mount_atime.sh \
	tests/fs/remount.sh \
	tests/fs/umount.sh \
	tests/fs/errors.sh \
	tests/fs/crash.sh \
	tests/fs/kill9.sh \
	tests/fs/fsync_log.sh \
	tests/fs/eio.sh \
	tests/fs/user_mount.sh \
	tests/fs/posix_space.sh \
	tests/fs/posix_tools.sh \
	tests/fs/posix.sh \
	tests/fs/killpriv.sh \
	tests/fs/overlay.sh \
	tests/fs/fsx.sh \
	tests/fs/fsstress.sh \
	tests/fs/space_retry.sh \
	tests/fs/space_honest.sh \
	tests/fs/space_enforced.sh \
	tests/fs/space_holes.sh \
	tests/fs/ace.sh \
	tests/fs/meta_reserve.sh \
	tests/fs/meta_frag.sh \
	tests/fs/space_fragmented.sh \
	tests/fs/space_writeback.sh
TESTS += $(SMR_FS_TESTS)
EXTRA_DIST += $(SMR_FS_TESTS) tests/fs/lib.sh tests/fs/fsops.py tests/fs/fsx.py \
	tests/fs/killload.py tests/fs/posix.py tests/fs/fsstress.py \
	tests/fs/ace.py

# The full run of kill9.sh: 200 deaths of the daemon (about 10 minutes).
check-kill9: all $(check_PROGRAMS)
	KILL9_CYCLES=$${KILL9_CYCLES:-200} srcdir=$(top_srcdir) \
		top_builddir=$(top_builddir) $(SHELL) $(top_srcdir)/tests/fs/kill9.sh
.PHONY: check-kill9

dist_man_MANS += src/fuse/mount.smrfs.8 src/fuse/umount.smrfs.8

# mount(8) finds the helper for "mount -t smrfs" only under /sbin: link it
# there (configure --with-mount-helper-dir), with umount.smrfs, which
# umount(8) runs for the note helper=smrfs the daemon leaves in the mount
# table. For a mount it has (a remount) mount(8) goes by the type in the
# mount table, fuse.smrfs, and looks for mount.fuse.smrfs: a link of that
# name; umount(8) likewise looks for umount.fuse.smrfs where it reads the
# mount table (for another user, or with -l, -f or -r). The links name the
# installed programs without DESTDIR, so a staged install links right once
# unpacked; where the directory is sbindir itself (/sbin -> usr/sbin), only
# the links of other names are made, beside the programs.
SMR_HELPER_LINKS = mount.fuse.smrfs:mount.smrfs umount.fuse.smrfs:umount.smrfs
install-exec-hook:
	@if test -n "$(mounthelperdir)"; then \
	  $(MKDIR_P) "$(DESTDIR)$(mounthelperdir)" || exit 1; \
	  if test "$(DESTDIR)$(mounthelperdir)" -ef "$(DESTDIR)$(sbindir)"; then \
	    dir=; links="$(SMR_HELPER_LINKS)"; \
	  else \
	    dir="$(sbindir)/"; \
	    links="mount.smrfs:mount.smrfs umount.smrfs:umount.smrfs $(SMR_HELPER_LINKS)"; \
	  fi; \
	  for l in $$links; do \
	    n=$${l%%:*}; to=$$dir$${l#*:}; \
	    echo " LN $(DESTDIR)$(mounthelperdir)/$$n -> $$to"; \
	    ln -sf "$$to" "$(DESTDIR)$(mounthelperdir)/$$n" || exit 1; \
	  done; \
	fi

uninstall-hook:
	@for n in mount.smrfs umount.smrfs mount.fuse.smrfs umount.fuse.smrfs; do \
	  if test -n "$(mounthelperdir)" && \
	      test -L "$(DESTDIR)$(mounthelperdir)/$$n"; then \
	    rm -f "$(DESTDIR)$(mounthelperdir)/$$n"; \
	  fi; \
	done

# The ioctls smrfsctl stat and zones ask a mounted filesystem.
src_fuse_mount_smrfs_SOURCES += src/fuse/ioctl.c src/fuse/smrfs_ioctl.h
tests_mount_memcow_SOURCES += src/fuse/ioctl.c

# The same daemon with the fault device (src/dev/fault.h) under the
# filesystem, for the I/O error tests (tests/fs/fault_daemon.h).
check_PROGRAMS += tests/mount_fault
tests_mount_fault_SOURCES = src/fuse/fuse_ops.c src/fuse/session_io.c \
	src/fuse/main.c src/fuse/ioctl.c tests/fs/fault_daemon.c \
	tests/fs/fault_daemon.h
tests_mount_fault_CPPFLAGS = $(AM_CPPFLAGS) -DSMR_FUSE_FAULT \
	-I$(top_srcdir)/tests/fs
tests_mount_fault_CFLAGS = $(AM_CFLAGS) $(FUSE_CFLAGS) $(MOUNT_CFLAGS)
tests_mount_fault_LDADD = libsmrfs.la $(FUSE_LIBS) $(MOUNT_LIBS) -lpthread
