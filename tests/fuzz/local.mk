# SPDX-License-Identifier: GPL-2.0-or-later
# Fuzz targets over everything that parses bytes from a device
# (docs/design/fuzzing.md). Each target is built twice:
#  - tests/fuzz/fuzz_*: with the project's compiler and driver.c, a plain
#    program that runs the seed corpus once (make check, always);
#  - tests/fuzz/lf/fuzz_*: with clang's libFuzzer, ASan and UBSan, the
#    whole library compiled again so instrumented (when configure found
#    FUZZ_CC able to, or --enable-fuzzing); make check fuzzes each for
#    FUZZ_SECS (20) seconds.
FUZZ_TARGETS = fuzz_super fuzz_node fuzz_alloc fuzz_ns fuzz_image fuzz_log
FUZZ_COMMON = tests/fuzz/fuzz.h tests/fuzz/fuzz_util.c
FUZZ_FORMAT_LIBS = src/format/libsmrfs_format.la src/util/libsmrfs_util.la \
	$(XXHASH_LIBS)

check_PROGRAMS += tests/fuzz/fuzz_super tests/fuzz/fuzz_node \
	tests/fuzz/fuzz_alloc tests/fuzz/fuzz_ns tests/fuzz/fuzz_image \
	tests/fuzz/fuzz_log
tests_fuzz_fuzz_super_SOURCES = tests/fuzz/fuzz_super.c tests/fuzz/driver.c \
	$(FUZZ_COMMON)
tests_fuzz_fuzz_super_LDADD = $(FUZZ_FORMAT_LIBS)
tests_fuzz_fuzz_node_SOURCES = tests/fuzz/fuzz_node.c tests/fuzz/driver.c \
	$(FUZZ_COMMON)
tests_fuzz_fuzz_node_LDADD = $(FUZZ_FORMAT_LIBS)
tests_fuzz_fuzz_alloc_SOURCES = tests/fuzz/fuzz_alloc.c tests/fuzz/driver.c \
	tests/fuzz/fuzz_dev.c $(FUZZ_COMMON)
tests_fuzz_fuzz_alloc_LDADD = libsmrfs.la
tests_fuzz_fuzz_ns_SOURCES = tests/fuzz/fuzz_ns.c tests/fuzz/driver.c \
	tests/fuzz/fuzz_walk.c tests/memcow.c tests/memcow.h $(FUZZ_COMMON)
tests_fuzz_fuzz_ns_LDADD = src/namespace/libsmrfs_ns.la $(FUZZ_FORMAT_LIBS) \
	-lpthread
tests_fuzz_fuzz_image_SOURCES = tests/fuzz/fuzz_image.c tests/fuzz/driver.c \
	tests/fuzz/fuzz_dev.c tests/fuzz/fuzz_walk.c fsck/run.c fsck/fsck.h \
	$(FUZZ_COMMON)
tests_fuzz_fuzz_image_LDADD = libsmrfs.la
tests_fuzz_fuzz_log_SOURCES = tests/fuzz/fuzz_log.c tests/fuzz/driver.c \
	$(FUZZ_COMMON)
tests_fuzz_fuzz_log_LDADD = libsmrfs.la

# Makes the seed corpus (tests/fuzz/make-seeds.sh); not part of check.
EXTRA_PROGRAMS = tests/fuzz/fuzz_seeds
tests_fuzz_fuzz_seeds_SOURCES = tests/fuzz/fuzz_seeds.c tests/fuzz/fuzz_dev.c \
	$(FUZZ_COMMON)
tests_fuzz_fuzz_seeds_LDADD = libsmrfs.la
CLEANFILES += tests/fuzz/fuzz_seeds

dist_noinst_SCRIPTS += tests/fuzz/fuzz.sh tests/fuzz/make-seeds.sh
EXTRA_DIST += tests/fuzz/corpus
TESTS += tests/fuzz/fuzz.sh

if HAVE_FUZZER
# The library once more, instrumented for libFuzzer. No pattern rules
# (portable make): one rule compiles all of it.
FUZZ_LF_FLAGS = -g -O1 -fno-omit-frame-pointer \
	-fsanitize=address,undefined -fno-sanitize-recover=undefined
FUZZ_LF_CPPFLAGS = $(DEFS) $(DEFAULT_INCLUDES) $(AM_CPPFLAGS) $(CPPFLAGS)
FUZZ_LF_LIBS = $(URING_LIBS) $(XXHASH_LIBS) $(ZBD_LIBS) -lpthread
FUZZ_LF_SRCS = $(src_util_libsmrfs_util_la_SOURCES) \
	$(src_dev_libsmrfs_dev_la_SOURCES) \
	$(src_format_libsmrfs_format_la_SOURCES) \
	$(src_alloc_libsmrfs_alloc_la_SOURCES) \
	$(src_cow_libsmrfs_cow_la_SOURCES) \
	$(src_namespace_libsmrfs_ns_la_SOURCES)
FUZZ_LF_BINS = tests/fuzz/lf/fuzz_super tests/fuzz/lf/fuzz_node \
	tests/fuzz/lf/fuzz_alloc tests/fuzz/lf/fuzz_ns tests/fuzz/lf/fuzz_image \
	tests/fuzz/lf/fuzz_log
check_DATA = $(FUZZ_LF_BINS)
CLEANFILES += tests/fuzz/lf/obj/*.o tests/fuzz/lf/*.a $(FUZZ_LF_BINS)

tests/fuzz/lf/libsmrfs.a: $(FUZZ_LF_SRCS) config.h
	@$(MKDIR_P) tests/fuzz/lf/obj
	@rm -f $@ tests/fuzz/lf/obj/*.o
	$(AM_V_CC)set -e; for f in $(FUZZ_LF_SRCS); do \
	  case $$f in *.c) ;; *) continue ;; esac; \
	  o=tests/fuzz/lf/obj/`echo $$f | sed 's|/|_|g; s|\.c$$|.o|'`; \
	  $(FUZZ_CC) $(FUZZ_LF_CPPFLAGS) $(FUZZ_LF_FLAGS) -std=gnu11 \
	    -fsanitize=fuzzer-no-link -c $(srcdir)/$$f -o $$o; \
	done; $(AR) rcs $@ tests/fuzz/lf/obj/*.o

# fuzz_link TARGET SOURCES...: compile the target's own sources and link.
FUZZ_LF_LINK = $(FUZZ_CC) $(FUZZ_LF_CPPFLAGS) $(FUZZ_LF_FLAGS) -std=gnu11 \
	-fsanitize=fuzzer
FUZZ_LF_COMMON = $(srcdir)/tests/fuzz/fuzz_util.c

tests/fuzz/lf/fuzz_super: tests/fuzz/fuzz_super.c $(FUZZ_COMMON) tests/fuzz/lf/libsmrfs.a
	$(AM_V_CCLD)$(FUZZ_LF_LINK) $(srcdir)/tests/fuzz/fuzz_super.c \
	  $(FUZZ_LF_COMMON) tests/fuzz/lf/libsmrfs.a $(FUZZ_LF_LIBS) -o $@
tests/fuzz/lf/fuzz_node: tests/fuzz/fuzz_node.c $(FUZZ_COMMON) tests/fuzz/lf/libsmrfs.a
	$(AM_V_CCLD)$(FUZZ_LF_LINK) $(srcdir)/tests/fuzz/fuzz_node.c \
	  $(FUZZ_LF_COMMON) tests/fuzz/lf/libsmrfs.a $(FUZZ_LF_LIBS) -o $@
tests/fuzz/lf/fuzz_alloc: tests/fuzz/fuzz_alloc.c tests/fuzz/fuzz_dev.c $(FUZZ_COMMON) tests/fuzz/lf/libsmrfs.a
	$(AM_V_CCLD)$(FUZZ_LF_LINK) $(srcdir)/tests/fuzz/fuzz_alloc.c \
	  $(srcdir)/tests/fuzz/fuzz_dev.c $(FUZZ_LF_COMMON) \
	  tests/fuzz/lf/libsmrfs.a $(FUZZ_LF_LIBS) -o $@
tests/fuzz/lf/fuzz_ns: tests/fuzz/fuzz_ns.c tests/fuzz/fuzz_walk.c tests/memcow.c $(FUZZ_COMMON) tests/fuzz/lf/libsmrfs.a
	$(AM_V_CCLD)$(FUZZ_LF_LINK) $(srcdir)/tests/fuzz/fuzz_ns.c \
	  $(srcdir)/tests/fuzz/fuzz_walk.c $(srcdir)/tests/memcow.c \
	  $(FUZZ_LF_COMMON) tests/fuzz/lf/libsmrfs.a $(FUZZ_LF_LIBS) -o $@
tests/fuzz/lf/fuzz_image: tests/fuzz/fuzz_image.c tests/fuzz/fuzz_dev.c tests/fuzz/fuzz_walk.c fsck/run.c $(FUZZ_COMMON) tests/fuzz/lf/libsmrfs.a
	$(AM_V_CCLD)$(FUZZ_LF_LINK) $(srcdir)/tests/fuzz/fuzz_image.c \
	  $(srcdir)/tests/fuzz/fuzz_dev.c $(srcdir)/tests/fuzz/fuzz_walk.c \
	  $(srcdir)/fsck/run.c $(FUZZ_LF_COMMON) tests/fuzz/lf/libsmrfs.a \
	  $(FUZZ_LF_LIBS) -o $@

tests/fuzz/lf/fuzz_log: tests/fuzz/fuzz_log.c $(FUZZ_COMMON) tests/fuzz/lf/libsmrfs.a
	$(AM_V_CCLD)$(FUZZ_LF_LINK) $(srcdir)/tests/fuzz/fuzz_log.c \
	  $(FUZZ_LF_COMMON) tests/fuzz/lf/libsmrfs.a $(FUZZ_LF_LIBS) -o $@

# Build the libFuzzer programs without running anything.
fuzz-build: $(FUZZ_LF_BINS)
endif
