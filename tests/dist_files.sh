#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# Every file git tracks is in the release tarball, but for the few listed
# below that only the repository needs. A file that a Makefile.am forgets
# (a new test header, a script a test runs) otherwise shows up only when
# "make distcheck" builds from the tarball. This builds the tarball's tree
# with "make distdir", which copies and builds nothing else, and compares.
# Skips outside a git checkout (a tarball build has nothing to compare).
set -u
skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*" >&2; exit 1; }
MAKE=${MAKE:-make}
S=${srcdir:-.}

# Tracked files the tarball leaves out on purpose.
EXCLUDE='
.ci/run
.gitignore
'

command -v git >/dev/null || skip "no git"
top=$(git -C "$S" rev-parse --show-toplevel 2>/dev/null) ||
	skip "$S is not a git checkout"
# An unpacked tarball inside someone's git tree is not a checkout of ours.
[ "$top" -ef "$S" ] || skip "$S is not the top of its git checkout"

T=$(mktemp -d "${TMPDIR:-/tmp}/smrfs-dist.XXXXXX") || fail "mktemp"
trap 'rm -rf "$T"' EXIT

git -C "$S" ls-files | sort >"$T/git" || fail "git ls-files"
[ -s "$T/git" ] || fail "git ls-files lists nothing"
$MAKE -s -C "${top_builddir:-.}" distdir distdir="$T/d" >"$T/log" 2>&1 ||
	fail "make distdir: $(tail -20 "$T/log")"
(cd "$T/d" && find . \( -type f -o -type l \) | sed 's|^\./||' | sort) \
	>"$T/dist" || fail "listing the tarball's tree"
# The check must see a real tarball: this file is in it.
grep -qx tests/dist_files.sh "$T/dist" || fail "tests/dist_files.sh not in the tarball"

printf '%s\n' $EXCLUDE | sort >"$T/exclude"
comm -23 "$T/git" "$T/dist" | comm -23 - "$T/exclude" >"$T/missing"
if [ -s "$T/missing" ]; then
	echo "tracked by git but not in the release tarball (add them to a" \
		"Makefile.am, or to EXCLUDE in $0):" >&2
	sed 's/^/  /' "$T/missing" >&2
	exit 1
fi
# An exclusion that no longer names a tracked file is stale.
comm -13 "$T/git" "$T/exclude" >"$T/stale"
[ ! -s "$T/stale" ] || fail "EXCLUDE names untracked files: $(cat "$T/stale")"
echo "$(wc -l <"$T/git") tracked files, all in the tarball" \
	"but $(wc -l <"$T/exclude") excluded"
