# SPDX-License-Identifier: GPL-2.0-or-later
"""fsops.py - file operations through a mounted smrfs, with exact errors.

Usage: python3 fsops.py MODE MOUNTPOINT
  ops     run the operations and check their results and errors
  verify  check what "ops" left behind (after an unmount and a remount)
  fsync   write a file, fsync it, print nothing (the caller kills the daemon)
  synced  check the file "fsync" wrote
"""
import ctypes
import errno
import hashlib
import os
import sys

RENAME_NOREPLACE = 1
RENAME_EXCHANGE = 2
AT_FDCWD = -100


def renameat2(old, new, flags):
    libc = ctypes.CDLL(None, use_errno=True)
    rc = libc.renameat2(AT_FDCWD, old.encode(), AT_FDCWD, new.encode(),
                        flags)
    if rc != 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e), old)


def fail(msg):
    print("FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


def expect_err(err, fn, *args):
    try:
        fn(*args)
    except OSError as e:
        if e.errno != err:
            fail("%s%r: errno %s, expected %s" % (
                fn.__name__, args, errno.errorcode.get(e.errno, e.errno),
                errno.errorcode[err]))
        return
    fail("%s%r: succeeded, expected %s" % (fn.__name__, args,
                                           errno.errorcode[err]))


def check(cond, msg):
    if not cond:
        fail(msg)


def pattern(n, seed):
    out = bytearray()
    block = hashlib.sha256(str(seed).encode()).digest()
    while len(out) < n:
        block = hashlib.sha256(block).digest()
        out += block
    return bytes(out[:n])


def read(path):
    with open(path, "rb") as f:
        return f.read()


def write(path, data, mode="wb"):
    with open(path, mode) as f:
        f.write(data)


def ops(m):
    p = lambda *x: os.path.join(m, *x)
    check(sorted(os.listdir(m)) == [], "new filesystem not empty: %r" %
          os.listdir(m))
    st = os.stat(m)
    check(st.st_ino == 1 and st.st_nlink == 2, "root: ino %d nlink %d" %
          (st.st_ino, st.st_nlink))

    # Files, data of every size and alignment.
    write(p("f"), b"hello world")
    check(read(p("f")) == b"hello world", "small file")
    big = pattern(3 * 1024 * 1024 + 123, 1)
    write(p("big"), big)
    check(read(p("big")) == big, "3 MiB file")
    with open(p("big"), "r+b") as f:
        f.seek(1000000)
        f.write(b"X" * 5000)
    big = big[:1000000] + b"X" * 5000 + big[1005000:]
    check(read(p("big")) == big, "overwrite in the middle")
    write(p("big"), b"tail", "ab")
    big += b"tail"
    check(read(p("big")) == big, "append")

    # Names.
    os.mkdir(p("d"))
    expect_err(errno.EEXIST, os.mkdir, p("d"))
    expect_err(errno.EEXIST, os.mkdir, p("f"))
    write(p("d", "inner"), b"in")
    expect_err(errno.ENOTEMPTY, os.rmdir, p("d"))
    expect_err(errno.ENOTDIR, os.rmdir, p("f"))
    expect_err(errno.EISDIR, os.unlink, p("d"))
    expect_err(errno.ENOENT, os.unlink, p("nope"))
    expect_err(errno.ENOTDIR, os.stat, p("f", "x"))
    expect_err(errno.ENAMETOOLONG, os.mkdir, p("n" * 256))
    os.mkdir(p("n" * 255))
    os.rmdir(p("n" * 255))
    os.mkdir(p("d", "sub"))
    check(os.stat(p("d")).st_nlink == 3, "nlink of a dir with a subdir")
    check(os.stat(m).st_nlink == 3, "nlink of the root")

    # Symlinks.
    os.symlink("f", p("s"))
    check(os.readlink(p("s")) == "f", "readlink")
    check(read(p("s")) == b"hello world", "read through a symlink")
    # The longest target is 4095 bytes (PATH_MAX with its NUL).
    long_target = "t" * 4095
    os.symlink(long_target, p("longlink"))
    check(os.readlink(p("longlink")) == long_target, "4095-byte symlink")
    check(os.lstat(p("longlink")).st_size == 4095, "size of a 4095-byte link")
    expect_err(errno.ENAMETOOLONG, os.symlink, "t" * 4096, p("toolong"))
    expect_err(errno.ENOENT, os.lstat, p("toolong"))

    # Rename rules.
    os.rename(p("f"), p("g"))
    expect_err(errno.ENOENT, os.stat, p("f"))
    check(read(p("g")) == b"hello world", "renamed file")
    expect_err(errno.EINVAL, os.rename, p("d"), p("d", "sub", "x"))
    expect_err(errno.EISDIR, os.rename, p("g"), p("d"))
    expect_err(errno.ENOTDIR, os.rename, p("d"), p("g"))
    os.mkdir(p("e"))
    expect_err(errno.ENOTEMPTY, os.rename, p("e"), p("d"))
    os.rename(p("e"), p("d", "sub"))  # over an empty directory
    write(p("victim"), b"old")
    write(p("newer"), b"new")
    os.rename(p("newer"), p("victim"))
    check(read(p("victim")) == b"new", "rename over a file")

    # renameat2 flags.
    write(p("x1"), b"one")
    write(p("x2"), b"two")
    expect_err(errno.EEXIST, renameat2, p("x1"), p("x2"), RENAME_NOREPLACE)
    renameat2(p("x1"), p("x2"), RENAME_EXCHANGE)
    check(read(p("x1")) == b"two" and read(p("x2")) == b"one",
          "RENAME_EXCHANGE")
    expect_err(errno.ENOENT, renameat2, p("x1"), p("x3"), RENAME_EXCHANGE)
    renameat2(p("x1"), p("x3"), RENAME_NOREPLACE)
    os.unlink(p("x2"))
    os.unlink(p("x3"))

    # Hard links.
    os.link(p("g"), p("h"))
    check(os.stat(p("g")).st_nlink == 2, "nlink after link")
    expect_err(errno.EEXIST, os.link, p("g"), p("h"))
    expect_err(errno.EPERM, os.link, p("d"), p("dlink"))
    os.unlink(p("h"))
    check(os.stat(p("g")).st_nlink == 1, "nlink after unlink")

    # Special files.
    os.mkfifo(p("fifo"))
    check(os.stat(p("fifo")).st_mode & 0o170000 == 0o010000, "fifo type")

    # Extended attributes.
    os.setxattr(p("g"), "user.k", b"value")
    check(os.getxattr(p("g"), "user.k") == b"value", "getxattr")
    expect_err(errno.EEXIST, os.setxattr, p("g"), "user.k", b"x",
               os.XATTR_CREATE)
    expect_err(errno.ENODATA, os.setxattr, p("g"), "user.none", b"x",
               os.XATTR_REPLACE)
    expect_err(errno.ENODATA, os.getxattr, p("g"), "user.none")
    bigval = pattern(65536, 2)
    os.setxattr(p("g"), "user.big", bigval)
    check(os.getxattr(p("g"), "user.big") == bigval, "64 KiB xattr")
    check(sorted(os.listxattr(p("g"))) == ["user.big", "user.k"],
          "listxattr: %r" % os.listxattr(p("g")))
    os.removexattr(p("g"), "user.k")
    expect_err(errno.ENODATA, os.removexattr, p("g"), "user.k")

    # Truncate up and down; holes; SEEK_DATA / SEEK_HOLE.
    os.truncate(p("g"), 3)
    check(read(p("g")) == b"hel", "truncate down")
    os.truncate(p("g"), 10)
    check(read(p("g")) == b"hel" + b"\0" * 7, "truncate up shows zeros")
    with open(p("sparse"), "wb") as f:
        f.seek(5 * 1024 * 1024 * 1024)
        f.write(b"end")
    check(os.stat(p("sparse")).st_size == 5 * 1024 * 1024 * 1024 + 3,
          "5 GiB sparse size")
    fd = os.open(p("sparse"), os.O_RDONLY)
    check(os.lseek(fd, 0, os.SEEK_HOLE) == 0, "SEEK_HOLE at 0")
    check(os.lseek(fd, 0, os.SEEK_DATA) == 5 * 1024 * 1024 * 1024,
          "SEEK_DATA")
    check(os.pread(fd, 10, 4096) == b"\0" * 10, "hole reads zeros")
    os.close(fd)

    # An unlinked file lives while it is open.
    fd = os.open(p("tmp"), os.O_RDWR | os.O_CREAT, 0o644)
    os.write(fd, b"still here")
    os.unlink(p("tmp"))
    expect_err(errno.ENOENT, os.stat, p("tmp"))
    check(os.pread(fd, 100, 0) == b"still here", "open-unlinked read")
    os.close(fd)

    # Attributes.
    os.chmod(p("g"), 0o600)
    check(os.stat(p("g")).st_mode & 0o7777 == 0o600, "chmod")
    os.utime(p("g"), (1000, 2000))
    st = os.stat(p("g"))
    check(st.st_atime == 1000 and st.st_mtime == 2000, "utime")
    vfs = os.statvfs(m)
    check(vfs.f_bsize == 4096 and vfs.f_blocks > 0 and
          vfs.f_bavail <= vfs.f_bfree <= vfs.f_blocks, "statvfs")
    check(vfs.f_namemax == 255, "namemax")

    # Directory listing.
    names = sorted(os.listdir(m))
    want = sorted(["big", "d", "fifo", "g", "longlink", "s", "sparse",
                   "victim"])
    check(names == want, "listdir: %r" % names)
    many = p("many")
    os.mkdir(many)
    for i in range(300):
        write(os.path.join(many, "f%03d" % i), b"")
    check(sorted(os.listdir(many)) == ["f%03d" % i for i in range(300)],
          "listdir of 300 entries")


def verify(m):
    p = lambda *x: os.path.join(m, *x)
    big = pattern(3 * 1024 * 1024 + 123, 1)
    big = big[:1000000] + b"X" * 5000 + big[1005000:] + b"tail"
    check(read(p("big")) == big, "big after remount")
    check(read(p("g")) == b"hel" + b"\0" * 7, "g after remount")
    check(os.stat(p("g")).st_mode & 0o7777 == 0o600, "mode after remount")
    check(os.stat(p("g")).st_mtime == 2000, "mtime after remount")
    check(os.readlink(p("s")) == "f", "symlink after remount")
    check(os.readlink(p("longlink")) == "t" * 4095, "long symlink")
    check(os.getxattr(p("g"), "user.big") == pattern(65536, 2),
          "xattr after remount")
    check(os.stat(p("d")).st_nlink == 3, "dir nlink after remount")
    check(read(p("victim")) == b"new", "renamed file after remount")
    check(len(os.listdir(p("many"))) == 300, "300 entries after remount")
    check(os.stat(p("sparse")).st_size == 5 * 1024 * 1024 * 1024 + 3,
          "sparse size after remount")


def do_fsync(m):
    data = pattern(2 * 1024 * 1024 + 5, 3)
    fd = os.open(os.path.join(m, "synced"), os.O_WRONLY | os.O_CREAT, 0o644)
    os.write(fd, data)
    os.fsync(fd)
    os.close(fd)


def synced(m):
    check(read(os.path.join(m, "synced")) == pattern(2 * 1024 * 1024 + 5, 3),
          "fsync'd data after kill -9")


if __name__ == "__main__":
    modes = {"ops": ops, "verify": verify, "fsync": do_fsync,
             "synced": synced}
    if len(sys.argv) != 3 or sys.argv[1] not in modes:
        fail(__doc__)
    modes[sys.argv[1]](sys.argv[2])
