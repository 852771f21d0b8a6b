# SPDX-License-Identifier: GPL-2.0-or-later
#
# Set-up shared by the fsck.smrfs command-line tests. The caller sets
# "tag" (names the scratch directory) and lists the programs it needs in
# "need"; this checks they are built, makes the scratch directory $T
# (removed at exit) and gives fail(), which counts failures in $fails.
for p in $need; do
	[ -x "$p" ] || { echo "not built: $p" >&2; exit 1; }
done
T=$(mktemp -d "${TMPDIR:-/tmp}/smrfs-$tag-XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT
fails=0

fail() {
	echo "FAIL: $*" >&2
	fails=$((fails + 1))
}
