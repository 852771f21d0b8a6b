#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
#
# demo.sh BUILD_DIR - the main job on the embedded default: a zoned loop
# directory shaped like a small host-managed SMR disk, and its zone report.
set -eu

build=${1:?usage: demo.sh BUILD_DIR}
ctl=$build/ctl/smrfsctl
work=$(mktemp -d "${TMPDIR:-/tmp}/smrfs-demo.XXXXXX")
trap 'rm -rf "$work"' EXIT INT TERM

zdir=$work/zloop
echo "== A zoned loop directory: 1 GiB, 64 MiB zones, 2 conventional, 16 open at most"
"$ctl" zloop create "$zdir" --capacity 1G --zone-size 64M --conv-zones 2 \
	--max-open 16
"$ctl" zloop report "$zdir"
ls "$zdir" | head -5
echo "..."
