#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# On a plain file, statfs and the allocator must agree once the free space
# is cut into holes: overwrites of every other block of a big file leave
# one-block holes, while the reserve for metadata is kept in whole nodes.
# Filling what is left with a mix of big files and small overwrites must
# then run to what statfs offered, and at ENOSPC statfs must offer
# (almost) nothing: what it counts free is writable, and ENOSPC means full.
. "${srcdir:-.}/tests/fs/lib.sh"
FSCK=${SMRFS_FSCK:-$B/fsck/fsck.smrfs}
[ -x "$FSCK" ] || skip "$FSCK not built"
command -v timeout >/dev/null || skip "no timeout(1)"
M=$T/mnt

for alloc in rotational flash; do
	note "-o alloc=$alloc"
	rm -f "$T/img"
	truncate -s 64M "$T/img" || fail "truncate"
	"$MKFS" "$T/img" >/dev/null || fail "mkfs"
	mount_fs "$T/img" "$M" "alloc=$alloc"
	timeout 300 python3 - "$M" <<'PY' || fail "$alloc: $(tail -3 "$T/daemon.err")"
import errno, os, random, sys
m, B, MIB = sys.argv[1], 4096, 1 << 20

def avail():
    v = os.statvfs(m)
    return v.f_bavail * v.f_frsize

def write_file(name, size, chunk):
    """Write up to size bytes in chunk-sized writes; the bytes written."""
    fd = os.open(os.path.join(m, name), os.O_CREAT | os.O_WRONLY, 0o644)
    done = 0
    try:
        while done < size:
            n = os.write(fd, os.urandom(min(chunk, size - done)))
            done += n
            if not n:
                break
        os.fsync(fd)
    except OSError as e:
        if e.errno != errno.ENOSPC:
            raise
    finally:
        os.close(fd)
    return done

# A big file, then every other block of it overwritten: its old blocks
# come back as one-block holes.
size = avail() * 3 // 4 // MIB * MIB
if write_file("big", size, MIB) != size:
    sys.exit("the first file did not fit in what statfs offered")
fd = os.open(os.path.join(m, "big"), os.O_RDWR)
for b in range(0, size // B, 2):
    os.pwrite(fd, b"o" * B, b * B)
    if b % 256 == 0:
        os.fsync(fd)
os.fsync(fd)
os.close(fd)
os.sync()

# Fill the rest: big files and small overwrites of them, until ENOSPC.
r = random.Random(7)
files = []
full = False
while not full and len(files) < 1000:
    name = "f%d" % len(files)
    want = r.choice([B, 8 * B, MIB])
    offer = avail()
    got = write_file(name, want, want if want < MIB else 64 << 10)
    files.append(name)
    if got < want:
        full = True
        if got < min(want, offer) - 64 * 1024:
            sys.exit("ENOSPC after %d of %d bytes with %d available"
                     % (got, want, offer))
    if files and r.random() < 0.3:
        f = os.path.join(m, r.choice(files))
        n = os.path.getsize(f)
        if n:
            fd = os.open(f, os.O_WRONLY)
            try:
                os.pwrite(fd, b"s" * B, r.randrange(n // B) * B)
            except OSError as e:
                if e.errno != errno.ENOSPC:
                    raise
            os.close(fd)
os.sync()
left = avail()
print("--- full after %d files, %d bytes available" % (len(files), left))
# Whatever statfs still offers, a new file gets; after it, nothing is
# left to offer.
got = write_file("last", left, B)
if got < left - 64 * 1024:
    sys.exit("wrote %d bytes, statfs offered %d" % (got, left))
os.sync()
if avail() > 64 * 1024:
    sys.exit("ENOSPC with %d bytes available" % avail())
PY
	touch "$M/still-writable" 2>/dev/null || rm -f "$M/last" ||
		fail "$alloc: read-only: $(tail -3 "$T/daemon.err")"
	umount_fs "$M"
	"$FSCK" -n "$T/img" >"$T/fsck.out" 2>&1 ||
		fail "$alloc: fsck.smrfs -n: $(cat "$T/fsck.out")"
done
exit 0
