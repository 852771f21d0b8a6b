# SPDX-License-Identifier: GPL-2.0-or-later
"""posix.py - POSIX rules of file system calls, in the manner of pjdfstest.

Usage: python3 posix.py [-v] [-k CASE] REFDIR [DIR]

Runs every case in a fresh directory under REFDIR (a file system whose
behaviour is the reference, such as tmpfs) and, if given, under DIR (the
file system under test). Each case checks errno values, link counts,
ownership, modes and timestamps of one system call, as root and, with
uid/gid switched in a child process, as ordinary users. A case that passes
on REFDIR must pass on DIR; exit status 1 if one does not.

Must run as root (it switches to the users 65534 and 65533).
"""
import ctypes
import errno
import mmap
import os
import pickle
import stat
import struct
import subprocess
import sys
import time

U1, G1 = 65534, 65534  # an ordinary user
U2, G2 = 65533, 65533  # another one
G3 = 65532             # a group U1 is in as a supplementary group
NAME_MAX = 255
PATH_MAX = 4096
UTIME_NOW = (1 << 30) - 1
UTIME_OMIT = (1 << 30) - 2
AT_FDCWD = -100
AT_SYMLINK_NOFOLLOW = 0x100
RENAME_NOREPLACE = 1
RENAME_EXCHANGE = 2
RENAME_WHITEOUT = 4

libc = ctypes.CDLL(None, use_errno=True)


class Fail(Exception):
    pass


def check(cond, msg):
    if not cond:
        raise Fail(msg)


def ename(e):
    return errno.errorcode.get(e, str(e)) if e else "success"


def call(fn, *args):
    """0 if fn(*args) succeeds, else its errno."""
    try:
        fn(*args)
    except OSError as e:
        return e.errno
    return 0


def expect(err, fn, *args):
    got = call(fn, *args)
    check(got == err, "%s%s: %s, expected %s" % (
        fn.__name__, short(args), ename(got), ename(err)))


def short(args):
    s = repr(args)
    return s if len(s) < 120 else s[:117] + "..."


def as_user(uid, gid, groups, fn, *args):
    """Run fn(*args) in a child with the given ids; return 0 or errno
    (an exception other than OSError fails the case)."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        try:
            os.setgroups(groups)
            os.setgid(gid)
            os.setuid(uid)
            res = (0, fn(*args))
        except OSError as e:
            res = (e.errno, None)
        except BaseException as e:  # report, never run on in the child
            res = (-1, repr(e))
        os.write(w, pickle.dumps(res))
        os._exit(0)
    os.close(w)
    data = b""
    while True:
        b = os.read(r, 65536)
        if not b:
            break
        data += b
    os.close(r)
    os.waitpid(pid, 0)
    err, val = pickle.loads(data)
    check(err != -1, "%s as uid %d: %s" % (fn.__name__, uid, val))
    return err


def uexpect(err, uid, gid, fn, *args, groups=()):
    got = as_user(uid, gid, list(groups), fn, *args)
    check(got == err, "uid %d: %s%s: %s, expected %s" % (
        uid, fn.__name__, short(args), ename(got), ename(err)))


def utimens(path, atime, mtime, follow=True):
    """utimensat(2); atime and mtime are (sec, nsec) or UTIME_NOW/OMIT."""
    class ts(ctypes.Structure):
        _fields_ = [("sec", ctypes.c_long), ("nsec", ctypes.c_long)]
    t = (ts * 2)()
    for i, v in enumerate((atime, mtime)):
        if isinstance(v, tuple):
            t[i].sec, t[i].nsec = v
        else:
            t[i].sec, t[i].nsec = 0, v
    rc = libc.utimensat(AT_FDCWD, os.fsencode(path), t,
                        0 if follow else AT_SYMLINK_NOFOLLOW)
    if rc:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e), path)


def renameat2(old, new, flags):
    rc = libc.renameat2(AT_FDCWD, os.fsencode(old), AT_FDCWD,
                        os.fsencode(new), flags)
    if rc:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e), old)


OLD = (1000000000, 0)  # a time long past, to see that an update happens
# The filesystem runs with FUSE's writeback cache: the kernel keeps the
# times of files and answers for them itself.
WRITEBACK = bool(os.environ.get("POSIX_WRITEBACK"))


def age(*paths):
    """Set atime and mtime of the paths to OLD, then wait so that a ctime
    set later differs from the one they have now."""
    for p in paths:
        utimens(p, OLD, OLD, follow=False)
    time.sleep(0.02)


def times(p):
    st = os.lstat(p)
    return st.st_atime_ns, st.st_mtime_ns, st.st_ctime_ns


def changed(before, p, which):
    """Check that exactly the timestamps in @which ('a', 'm', 'c') moved."""
    after = times(p)
    for i, t in enumerate("amc"):
        moved = after[i] != before[i]
        if t in which:
            check(moved, "%s of %s did not change" % (t + "time", p))
        else:
            check(not moved, "%s of %s changed" % (t + "time", p))


def create(p, mode=0o644):
    os.close(os.open(p, os.O_CREAT | os.O_EXCL | os.O_WRONLY, mode))


def symlink_loop(d):
    """loop1 -> loop2 -> loop1 in @d."""
    os.symlink("loop2", d + "/loop1")
    os.symlink("loop1", d + "/loop2")


def mode_of(p):
    return stat.S_IMODE(os.lstat(p).st_mode)


def kernel_at_least(major, minor):
    rel = os.uname().release.split("-")[0].split(".")
    return tuple(int(x) for x in rel[:2]) >= (major, minor)


def write_file(p, data):
    fd = os.open(p, os.O_WRONLY)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)


CASES = []


def case(fn):
    CASES.append(fn)
    return fn


# ---------------------------------------------------------------------------
# chmod
# ---------------------------------------------------------------------------

@case
def chmod_basic(d):
    f = d + "/f"
    create(f)
    for m in (0o777, 0o000, 0o4755, 0o2755, 0o1755, 0o7777, 0o640):
        before = times(f)
        time.sleep(0.02)
        os.chmod(f, m)
        check(mode_of(f) == m, "chmod %o gave %o" % (m, mode_of(f)))
        changed(before, f, "c")
    os.mkdir(d + "/dir")
    os.chmod(d + "/dir", 0o1777)
    check(mode_of(d + "/dir") == 0o1777, "chmod of a directory")
    os.symlink("f", d + "/l")
    os.chmod(d + "/l", 0o600)  # follows the link
    check(mode_of(f) == 0o600, "chmod through a symlink")


@case
def chmod_perm(d):
    f = d + "/f"
    create(f)
    os.chown(f, U1, G1)
    uexpect(0, U1, G1, os.chmod, f, 0o600)
    uexpect(errno.EPERM, U2, G2, os.chmod, f, 0o644)
    check(mode_of(f) == 0o600, "a refused chmod changed the mode")
    # The owner setting S_ISGID while not in the file's group: dropped.
    os.chown(f, U1, G2)
    uexpect(0, U1, G1, os.chmod, f, 0o2755)
    check(mode_of(f) == 0o755, "S_ISGID kept: %o" % mode_of(f))
    # ... but kept for a group the owner is in.
    os.chown(f, U1, G3)
    uexpect(0, U1, G1, os.chmod, f, 0o2755, groups=[G3])
    check(mode_of(f) == 0o2755, "S_ISGID of own group: %o" % mode_of(f))


@case
def chmod_errors(d):
    create(d + "/f")
    expect(errno.ENOENT, os.chmod, d + "/none", 0o644)
    expect(errno.ENOTDIR, os.chmod, d + "/f/x", 0o644)
    expect(errno.ENAMETOOLONG, os.chmod, d + "/" + "x" * (NAME_MAX + 1),
           0o644)
    symlink_loop(d)
    expect(errno.ELOOP, os.chmod, d + "/loop1", 0o644)
    # No search permission on a directory of the path.
    os.mkdir(d + "/x", 0o700)
    create(d + "/x/f")
    os.chown(d + "/x/f", U1, G1)
    uexpect(errno.EACCES, U1, G1, os.chmod, d + "/x/f", 0o600)


# ---------------------------------------------------------------------------
# chown
# ---------------------------------------------------------------------------

@case
def chown_root(d):
    f = d + "/f"
    create(f)
    before = times(f)
    time.sleep(0.02)
    os.chown(f, U1, G2)
    st = os.stat(f)
    check((st.st_uid, st.st_gid) == (U1, G2), "chown by root")
    changed(before, f, "c")
    before = times(f)
    time.sleep(0.02)
    os.chown(f, -1, -1)
    st = os.stat(f)
    check((st.st_uid, st.st_gid) == (U1, G2), "chown -1 -1 changed ids")
    os.symlink("f", d + "/l")
    os.lchown(d + "/l", U2, G2)
    check(os.lstat(d + "/l").st_uid == U2, "lchown of a symlink")
    check(os.stat(f).st_uid == U1, "lchown followed the link")
    os.chown(d + "/l", U2, -1)
    check(os.stat(f).st_uid == U2, "chown through a symlink")


@case
def chown_user(d):
    f = d + "/f"
    create(f)
    os.chown(f, U1, G1)
    uexpect(errno.EPERM, U1, G1, os.chown, f, U2, -1)
    uexpect(errno.EPERM, U1, G1, os.chown, f, -1, G2)
    uexpect(0, U1, G1, os.chown, f, -1, G3, groups=[G3])
    check(os.stat(f).st_gid == G3, "owner's chown to a group of theirs")
    uexpect(0, U1, G1, os.chown, f, U1, -1)  # to themselves: allowed
    uexpect(errno.EPERM, U2, G2, os.chown, f, -1, G2)
    uexpect(0, U1, G1, os.chown, f, -1, -1)


@case
def chown_clears_setid(d):
    f = d + "/f"
    create(f)
    os.chown(f, U1, G1)
    os.chmod(f, 0o6755)
    os.chown(f, U2, -1)  # root too
    check(mode_of(f) & 0o6000 == 0, "set-id bits kept by chown: %o" %
          mode_of(f))
    os.chmod(f, 0o6755)
    os.chown(f, U1, G1)
    os.chmod(f, 0o6755)
    uexpect(0, U1, G1, os.chown, f, -1, G3, groups=[G3])
    check(mode_of(f) & 0o6000 == 0, "set-id bits kept by the owner's chown")
    # S_ISGID without group execute is mandatory locking: it stays.
    os.chmod(f, 0o2745)
    os.chown(f, U2, -1)
    check(mode_of(f) == 0o2745, "S_ISGID without g+x: %o" % mode_of(f))
    # Directories keep theirs.
    os.mkdir(d + "/dir")
    os.chmod(d + "/dir", 0o2755)
    os.chown(d + "/dir", U1, G1)
    check(mode_of(d + "/dir") == 0o2755, "chown of a setgid directory")


@case
def chown_errors(d):
    create(d + "/f")
    expect(errno.ENOENT, os.chown, d + "/none", U1, G1)
    expect(errno.ENOTDIR, os.chown, d + "/f/x", U1, G1)
    expect(errno.ENAMETOOLONG, os.chown, d + "/" + "x" * (NAME_MAX + 1),
           U1, G1)
    symlink_loop(d)
    expect(errno.ELOOP, os.chown, d + "/loop1", U1, G1)


# ---------------------------------------------------------------------------
# link
# ---------------------------------------------------------------------------

@case
def link_basic(d):
    f = d + "/f"
    create(f)
    age(d)
    before, dbefore = times(f), times(d)
    os.link(f, d + "/g")
    st = os.stat(f)
    check(st.st_nlink == 2, "nlink after link: %d" % st.st_nlink)
    check(os.stat(d + "/g").st_ino == st.st_ino, "link: another inode")
    changed(before, f, "c")
    changed(dbefore, d, "mc")
    os.link(d + "/g", d + "/h")
    check(os.stat(f).st_nlink == 3, "nlink 3")
    os.unlink(f)
    check(os.stat(d + "/h").st_nlink == 2, "nlink after unlink")
    # Special files too.
    os.mkfifo(d + "/fifo")
    os.link(d + "/fifo", d + "/fifo2")
    check(os.stat(d + "/fifo2").st_nlink == 2, "link of a fifo")
    # A symlink itself (link(2) does not follow it on Linux).
    os.symlink("h", d + "/sl")
    os.link(d + "/sl", d + "/sl2")
    check(stat.S_ISLNK(os.lstat(d + "/sl2").st_mode), "link of a symlink")
    check(os.lstat(d + "/sl").st_nlink == 2, "symlink nlink")


@case
def link_many(d):
    f = d + "/f"
    create(f)
    for i in range(1000):
        os.link(f, "%s/l%d" % (d, i))
    check(os.stat(f).st_nlink == 1001, "1001 links")
    for i in range(1000):
        os.unlink("%s/l%d" % (d, i))
    check(os.stat(f).st_nlink == 1, "after unlinking 1000")


@case
def link_errors(d):
    f = d + "/f"
    create(f)
    create(d + "/g")
    os.mkdir(d + "/dir")
    expect(errno.EEXIST, os.link, f, d + "/g")
    expect(errno.EEXIST, os.link, f, d + "/dir")
    expect(errno.EPERM, os.link, d + "/dir", d + "/dir2")
    expect(errno.ENOENT, os.link, d + "/none", d + "/x")
    expect(errno.ENOENT, os.link, f, d + "/none/x")
    expect(errno.ENOTDIR, os.link, f, d + "/g/x")
    expect(errno.ENOTDIR, os.link, d + "/g/x", d + "/y")
    expect(errno.ENAMETOOLONG, os.link, f, d + "/" + "x" * (NAME_MAX + 1))
    check(call(os.link, f, d + "/" + "x" * NAME_MAX) == 0, "255-byte name")
    # Non-root: write permission on the target directory.
    os.mkdir(d + "/ro", 0o755)
    os.chmod(f, 0o666)
    uexpect(errno.EACCES, U1, G1, os.link, f, d + "/ro/x")
    check(os.stat(f).st_nlink == 2, "refused links changed nlink")


# ---------------------------------------------------------------------------
# mkdir
# ---------------------------------------------------------------------------

@case
def mkdir_basic(d):
    age(d)
    dbefore = times(d)
    nl = os.stat(d).st_nlink
    os.mkdir(d + "/a", 0o755)
    st = os.stat(d + "/a")
    check(stat.S_ISDIR(st.st_mode) and mode_of(d + "/a") == 0o755,
          "mode of a new directory: %o" % st.st_mode)
    check(st.st_nlink == 2, "new directory nlink %d" % st.st_nlink)
    check(st.st_uid == 0 and st.st_gid == 0, "owner of a new directory")
    check(os.stat(d).st_nlink == nl + 1, "parent nlink")
    check(st.st_atime_ns == st.st_mtime_ns == st.st_ctime_ns,
          "the times of a new directory differ")
    changed(dbefore, d, "mc")
    os.umask(0o077)
    try:
        os.mkdir(d + "/b", 0o777)
    finally:
        os.umask(0o022)
    check(mode_of(d + "/b") == 0o700, "umask: %o" % mode_of(d + "/b"))
    os.mkdir(d + "/c", 0o7777)
    check(mode_of(d + "/c") & 0o777 == 0o755, "mode 7777 & ~022: %o" %
          mode_of(d + "/c"))
    os.chmod(d, 0o777)
    uexpect(0, U1, G2, os.mkdir, d + "/u", 0o700)
    st = os.stat(d + "/u")
    check((st.st_uid, st.st_gid) == (U1, G2), "owner is the caller's")
    os.rmdir(d + "/a")
    check(os.stat(d).st_nlink == nl + 3, "parent nlink after rmdir")


@case
def mkdir_errors(d):
    create(d + "/f")
    os.mkdir(d + "/e")
    expect(errno.EEXIST, os.mkdir, d + "/e")
    expect(errno.EEXIST, os.mkdir, d + "/f")
    os.symlink("nowhere", d + "/dangling")
    expect(errno.EEXIST, os.mkdir, d + "/dangling")
    expect(errno.ENOENT, os.mkdir, d + "/none/x")
    expect(errno.ENOTDIR, os.mkdir, d + "/f/x")
    expect(errno.ENAMETOOLONG, os.mkdir, d + "/" + "x" * (NAME_MAX + 1))
    expect(0, os.mkdir, d + "/" + "x" * NAME_MAX)
    symlink_loop(d)
    expect(errno.ELOOP, os.mkdir, d + "/loop1/x")
    os.mkdir(d + "/ro", 0o755)
    uexpect(errno.EACCES, U1, G1, os.mkdir, d + "/ro/x")
    os.mkdir(d + "/nx", 0o766)
    uexpect(errno.EACCES, U1, G1, os.mkdir, d + "/nx/x")


# ---------------------------------------------------------------------------
# mkfifo, mknod
# ---------------------------------------------------------------------------

@case
def mkfifo_mknod(d):
    age(d)
    dbefore = times(d)
    os.mkfifo(d + "/p", 0o640)
    st = os.stat(d + "/p")
    check(stat.S_ISFIFO(st.st_mode) and mode_of(d + "/p") == 0o640,
          "fifo mode %o" % st.st_mode)
    changed(dbefore, d, "mc")
    check(st.st_atime_ns == st.st_mtime_ns == st.st_ctime_ns,
          "the times of a new fifo differ")
    os.mknod(d + "/r", 0o600 | stat.S_IFREG)
    check(stat.S_ISREG(os.stat(d + "/r").st_mode), "mknod S_IFREG")
    os.mknod(d + "/c", 0o600 | stat.S_IFCHR, os.makedev(1, 3))
    st = os.stat(d + "/c")
    check(stat.S_ISCHR(st.st_mode) and st.st_rdev == os.makedev(1, 3),
          "char device: %o %x" % (st.st_mode, st.st_rdev))
    os.mknod(d + "/b", 0o600 | stat.S_IFBLK, os.makedev(7, 200))
    st = os.stat(d + "/b")
    check(stat.S_ISBLK(st.st_mode) and st.st_rdev == os.makedev(7, 200),
          "block device")
    os.mknod(d + "/s", 0o600 | stat.S_IFSOCK)
    check(stat.S_ISSOCK(os.stat(d + "/s").st_mode), "mknod S_IFSOCK")
    expect(errno.EEXIST, os.mkfifo, d + "/p")
    expect(errno.EEXIST, os.mknod, d + "/c", 0o600 | stat.S_IFCHR, 0)
    expect(errno.ENOENT, os.mkfifo, d + "/none/p")
    expect(errno.ENOTDIR, os.mkfifo, d + "/r/p")
    expect(errno.ENAMETOOLONG, os.mkfifo, d + "/" + "x" * (NAME_MAX + 1))
    os.chmod(d, 0o777)
    uexpect(errno.EPERM, U1, G1, os.mknod, d + "/uc",
            0o600 | stat.S_IFCHR, os.makedev(1, 3))
    uexpect(0, U1, G1, os.mkfifo, d + "/up", 0o600)
    check(os.stat(d + "/up").st_uid == U1, "fifo owner")


# ---------------------------------------------------------------------------
# open
# ---------------------------------------------------------------------------

@case
def open_create(d):
    age(d)
    dbefore = times(d)
    fd = os.open(d + "/f", os.O_CREAT | os.O_WRONLY, 0o640)
    os.close(fd)
    st = os.stat(d + "/f")
    check(stat.S_ISREG(st.st_mode) and mode_of(d + "/f") == 0o640,
          "mode %o" % st.st_mode)
    check(st.st_size == 0 and st.st_nlink == 1, "size or nlink")
    check(st.st_atime_ns == st.st_mtime_ns == st.st_ctime_ns,
          "the times of a new file differ")
    changed(dbefore, d, "mc")
    # O_CREAT of an existing file changes nothing.
    age(d, d + "/f")
    dbefore, before = times(d), times(d + "/f")
    os.close(os.open(d + "/f", os.O_CREAT | os.O_RDONLY, 0o600))
    check(mode_of(d + "/f") == 0o640, "O_CREAT changed the mode")
    changed(dbefore, d, "")
    changed(before, d + "/f", "")
    # A read-only file can be created writable by its creator.
    os.chmod(d, 0o777)
    def mk():
        fd = os.open(d + "/ro", os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o444)
        os.write(fd, b"x")
        os.close(fd)
    uexpect(0, U1, G2, mk)
    st = os.stat(d + "/ro")
    check((st.st_uid, st.st_gid, st.st_size) == (U1, G2, 1),
          "a file made by a user")


@case
def open_trunc(d):
    f = d + "/f"
    create(f)
    write_file(f, b"data")
    age(f)
    before = times(f)
    os.close(os.open(f, os.O_WRONLY | os.O_TRUNC))
    check(os.stat(f).st_size == 0, "O_TRUNC")
    changed(before, f, "mc")
    # Opening without O_TRUNC changes no time.
    age(f)
    before = times(f)
    os.close(os.open(f, os.O_WRONLY))
    changed(before, f, "")


@case
def open_errors(d):
    f = d + "/f"
    create(f)
    os.mkdir(d + "/dir")
    expect(errno.EEXIST, os.open, f, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    expect(errno.EEXIST, os.open, d + "/dir", os.O_CREAT | os.O_EXCL)
    expect(errno.ENOENT, os.open, d + "/none", os.O_RDONLY)
    expect(errno.ENOENT, os.open, d + "/none/x", os.O_CREAT | os.O_WRONLY)
    expect(errno.ENOTDIR, os.open, f + "/x", os.O_RDONLY)
    expect(errno.ENOTDIR, os.open, f, os.O_RDONLY | os.O_DIRECTORY)
    expect(errno.EISDIR, os.open, d + "/dir", os.O_WRONLY)
    expect(errno.EISDIR, os.open, d + "/dir", os.O_RDWR)
    expect(errno.ENAMETOOLONG, os.open, d + "/" + "x" * (NAME_MAX + 1),
           os.O_CREAT | os.O_WRONLY)
    os.symlink("f", d + "/sl")
    expect(errno.ELOOP, os.open, d + "/sl", os.O_RDONLY | os.O_NOFOLLOW)
    symlink_loop(d)
    expect(errno.ELOOP, os.open, d + "/loop1", os.O_RDONLY)
    expect(errno.ELOOP, os.open, d + "/loop1", os.O_CREAT | os.O_WRONLY)
    os.mkfifo(d + "/fifo")
    expect(errno.ENXIO, os.open, d + "/fifo", os.O_WRONLY | os.O_NONBLOCK)
    # Dangling symlink with O_CREAT|O_EXCL: EEXIST, nothing created.
    os.symlink("target", d + "/dangling")
    expect(errno.EEXIST, os.open, d + "/dangling",
           os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    check(not os.path.lexists(d + "/target"), "O_EXCL followed a symlink")
    os.chmod(f, 0o644)
    uexpect(errno.EACCES, U1, G1, os.open, f, os.O_WRONLY)
    uexpect(errno.EACCES, U1, G1, os.open, f, os.O_RDWR)
    os.chmod(f, 0o600)
    uexpect(errno.EACCES, U1, G1, os.open, f, os.O_RDONLY)
    uexpect(errno.EACCES, U1, G1, os.open, d + "/new",
            os.O_CREAT | os.O_WRONLY)


@case
def open_etxtbsy(d):
    # A running program cannot be opened for writing or truncated.
    exe = d + "/prog"
    with open("/bin/sleep", "rb") as src, open(exe, "wb") as dst:
        dst.write(src.read())
    os.chmod(exe, 0o755)
    pid = os.fork()
    if pid == 0:
        try:
            os.execv(exe, [exe, "5"])
        finally:
            os._exit(127)
    try:
        time.sleep(0.3)
        expect(errno.ETXTBSY, os.open, exe, os.O_WRONLY)
        expect(errno.ETXTBSY, os.truncate, exe, 0)
    finally:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
    os.close(os.open(exe, os.O_WRONLY))  # not busy any more


# ---------------------------------------------------------------------------
# rename
# ---------------------------------------------------------------------------

@case
def rename_file(d):
    os.mkdir(d + "/a")
    os.mkdir(d + "/b")
    f = d + "/a/f"
    create(f)
    ino = os.stat(f).st_ino
    age(d + "/a", d + "/b", f)
    abefore, bbefore, fbefore = times(d + "/a"), times(d + "/b"), times(f)
    os.rename(f, d + "/b/g")
    check(os.stat(d + "/b/g").st_ino == ino, "rename: another inode")
    check(not os.path.lexists(f), "rename left the old name")
    changed(abefore, d + "/a", "mc")
    changed(bbefore, d + "/b", "mc")
    changed(fbefore, d + "/b/g", "c")
    # Over an existing file: that inode loses a link.
    create(d + "/b/h")
    os.link(d + "/b/h", d + "/b/h2")
    age(d + "/b/h2")
    before = times(d + "/b/h2")
    os.rename(d + "/b/g", d + "/b/h")
    check(os.stat(d + "/b/h").st_ino == ino, "rename over a file")
    check(os.stat(d + "/b/h2").st_nlink == 1, "replaced inode's nlink")
    changed(before, d + "/b/h2", "c")
    # Onto another link of the same inode: nothing happens.
    os.link(d + "/b/h", d + "/b/same")
    os.rename(d + "/b/h", d + "/b/same")
    check(os.path.exists(d + "/b/h") and os.path.exists(d + "/b/same"),
          "rename onto a hard link of itself removed a name")
    check(os.stat(d + "/b/h").st_nlink == 2, "nlink after a no-op rename")
    # A symlink is moved, not followed.
    os.symlink("h", d + "/b/sl")
    os.rename(d + "/b/sl", d + "/a/sl")
    check(os.readlink(d + "/a/sl") == "h", "renamed symlink")


@case
def rename_dir(d):
    os.mkdir(d + "/a")
    os.mkdir(d + "/b")
    os.mkdir(d + "/a/sub")
    create(d + "/a/sub/f")
    na, nb = os.stat(d + "/a").st_nlink, os.stat(d + "/b").st_nlink
    os.rename(d + "/a/sub", d + "/b/sub")
    check(os.stat(d + "/a").st_nlink == na - 1, "old parent nlink")
    check(os.stat(d + "/b").st_nlink == nb + 1, "new parent nlink")
    check(os.stat(d + "/b/sub/..").st_ino == os.stat(d + "/b").st_ino,
          ".. after rename")
    check(os.path.exists(d + "/b/sub/f"), "contents after rename")
    # Over an empty directory.
    os.mkdir(d + "/a/empty")
    os.rename(d + "/b/sub", d + "/a/empty")
    check(os.path.exists(d + "/a/empty/f"), "rename over an empty dir")
    check(os.stat(d + "/b").st_nlink == nb, "nlink after replacing")
    check(os.stat(d + "/a").st_nlink == na, "nlink of the target parent")


@case
def rename_errors(d):
    os.mkdir(d + "/dir")
    os.mkdir(d + "/full")
    create(d + "/full/x")
    create(d + "/f")
    expect(errno.ENOENT, os.rename, d + "/none", d + "/x")
    expect(errno.ENOENT, os.rename, d + "/f", d + "/none/x")
    expect(errno.ENOTDIR, os.rename, d + "/dir", d + "/f")
    expect(errno.EISDIR, os.rename, d + "/f", d + "/dir")
    expect(errno.ENOTEMPTY, os.rename, d + "/dir", d + "/full")
    expect(errno.EINVAL, os.rename, d + "/dir", d + "/dir/sub")
    os.mkdir(d + "/dir/sub")
    expect(errno.EINVAL, os.rename, d + "/dir", d + "/dir/sub/deeper")
    expect(errno.ENOTDIR, os.rename, d + "/f/x", d + "/y")
    expect(errno.ENAMETOOLONG, os.rename, d + "/f",
           d + "/" + "x" * (NAME_MAX + 1))
    expect(errno.EBUSY, os.rename, d + "/dir/.", d + "/moved")
    create(d + "/g")
    expect(errno.EEXIST, renameat2, d + "/f", d + "/g", RENAME_NOREPLACE)
    expect(errno.ENOENT, renameat2, d + "/f", d + "/none",
           RENAME_EXCHANGE)
    ino_f, ino_dir = os.stat(d + "/f").st_ino, os.stat(d + "/dir").st_ino
    expect(0, renameat2, d + "/f", d + "/dir", RENAME_EXCHANGE)
    check(os.stat(d + "/dir").st_ino == ino_f and
          os.stat(d + "/f").st_ino == ino_dir, "RENAME_EXCHANGE")
    check(os.stat(d + "/f/sub/..").st_ino == ino_dir, ".. after exchange")
    # Non-root: write permission on both directories.
    os.mkdir(d + "/ro", 0o755)
    create(d + "/ro/x")
    os.chmod(d, 0o777)
    uexpect(errno.EACCES, U1, G1, os.rename, d + "/ro/x", d + "/y")
    uexpect(errno.EACCES, U1, G1, os.rename, d + "/g", d + "/ro/y")


@case
def rename_whiteout(d):
    # The old name becomes a whiteout, a character device 0:0 of mode 0
    # owned by the caller (any user, since Linux 5.8); not with
    # RENAME_EXCHANGE.
    create(d + "/f")
    create(d + "/g")
    os.mkdir(d + "/sub")
    expect(errno.EINVAL, renameat2, d + "/f", d + "/g",
           RENAME_WHITEOUT | RENAME_EXCHANGE)
    ino = os.stat(d + "/f").st_ino
    expect(0, renameat2, d + "/f", d + "/g", RENAME_WHITEOUT)
    check(os.stat(d + "/g").st_ino == ino, "the renamed file")
    st = os.lstat(d + "/f")
    check(stat.S_ISCHR(st.st_mode) and stat.S_IMODE(st.st_mode) == 0 and
          st.st_rdev == 0 and st.st_uid == 0 and st.st_nlink == 1,
          "whiteout: mode %o, rdev %d, uid %d, %d links" % (
              st.st_mode, st.st_rdev, st.st_uid, st.st_nlink))
    nlink = os.stat(d).st_nlink
    expect(0, renameat2, d + "/sub", d + "/sub2", RENAME_WHITEOUT)
    check(stat.S_ISCHR(os.lstat(d + "/sub").st_mode) and
          os.stat(d).st_nlink == nlink, "whiteout of a directory")
    expect(errno.EEXIST, renameat2, d + "/g", d + "/f",
           RENAME_WHITEOUT | RENAME_NOREPLACE)
    os.chmod(d, 0o777)
    uexpect(0, U1, G1, renameat2, d + "/g", d + "/h", RENAME_WHITEOUT)
    st = os.lstat(d + "/g")
    check(stat.S_ISCHR(st.st_mode) and (st.st_uid, st.st_gid) == (U1, G1),
          "a user's whiteout: mode %o, owner %d:%d" % (
              st.st_mode, st.st_uid, st.st_gid))
    os.unlink(d + "/f")
    check(sorted(os.listdir(d)) == ["g", "h", "sub", "sub2"],
          "names: %s" % sorted(os.listdir(d)))


@case
def rename_dir_perm(d):
    # Moving a directory to another parent rewrites its "..": the mover
    # needs write permission on the directory itself.
    os.mkdir(d + "/a")
    os.mkdir(d + "/b")
    os.mkdir(d + "/a/sub")
    for x in (d, d + "/a", d + "/b"):
        os.chmod(x, 0o777)
    uexpect(errno.EACCES, U1, G1, os.rename, d + "/a/sub", d + "/b/sub")
    uexpect(0, U1, G1, os.rename, d + "/a/sub", d + "/a/sub2")


# ---------------------------------------------------------------------------
# sticky and setgid directories
# ---------------------------------------------------------------------------

@case
def sticky(d):
    os.chmod(d, 0o1777)
    for u, g in ((U1, G1), (U2, G2)):
        uexpect(0, u, g, create, "%s/f%d" % (d, u))
        uexpect(0, u, g, os.mkdir, "%s/d%d" % (d, u))
    uexpect(errno.EPERM, U2, G2, os.unlink, "%s/f%d" % (d, U1))
    uexpect(errno.EPERM, U2, G2, os.rmdir, "%s/d%d" % (d, U1))
    uexpect(errno.EPERM, U2, G2, os.rename, "%s/f%d" % (d, U1),
            d + "/stolen")
    uexpect(errno.EPERM, U2, G2, os.rename, "%s/f%d" % (d, U2),
            "%s/f%d" % (d, U1))
    check(os.path.exists("%s/f%d" % (d, U1)), "sticky: file gone")
    uexpect(0, U1, G1, os.rename, "%s/f%d" % (d, U1), d + "/mine")
    uexpect(0, U1, G1, os.unlink, d + "/mine")
    uexpect(0, U1, G1, os.rmdir, "%s/d%d" % (d, U1))
    # The directory's owner may remove anything in it.
    os.chown(d, U2, G2)
    uexpect(0, U1, G1, create, d + "/g")
    uexpect(0, U2, G2, os.unlink, d + "/g")
    # Root may.
    os.unlink("%s/f%d" % (d, U2))


@case
def setgid_dir(d):
    os.chmod(d, 0o777)
    os.mkdir(d + "/sg")
    os.chown(d + "/sg", 0, G3)
    os.chmod(d + "/sg", 0o2777)
    create(d + "/sg/f")
    check(os.stat(d + "/sg/f").st_gid == G3, "file gid from a setgid dir")
    os.mkdir(d + "/sg/sub", 0o755)
    st = os.stat(d + "/sg/sub")
    check(st.st_gid == G3, "directory gid from a setgid dir")
    check(st.st_mode & stat.S_ISGID, "new directory lacks S_ISGID")
    os.mkfifo(d + "/sg/p")
    check(os.stat(d + "/sg/p").st_gid == G3, "fifo gid")
    os.symlink("f", d + "/sg/sl")
    check(os.lstat(d + "/sg/sl").st_gid == G3, "symlink gid")
    uexpect(0, U1, G1, create, d + "/sg/u")
    check(os.stat(d + "/sg/u").st_gid == G3, "user's file gid")
    # A user not in the group asking for S_ISGID on a group-executable file
    # in it does not get it.
    def mk():
        fd = os.open(d + "/sg/x", os.O_CREAT | os.O_EXCL | os.O_WRONLY,
                     0o2775)
        os.close(fd)
    uexpect(0, U1, G1, mk)
    check(os.stat(d + "/sg/x").st_gid == G3, "gid of x")
    os.mkdir(d + "/plain")
    create(d + "/plain/f")
    check(os.stat(d + "/plain/f").st_gid == 0, "gid without setgid")


# ---------------------------------------------------------------------------
# rmdir, unlink
# ---------------------------------------------------------------------------

@case
def rmdir_basic(d):
    os.mkdir(d + "/a")
    nl = os.stat(d).st_nlink
    age(d)
    dbefore = times(d)
    os.rmdir(d + "/a")
    check(os.stat(d).st_nlink == nl - 1, "parent nlink after rmdir")
    changed(dbefore, d, "mc")
    check(not os.path.lexists(d + "/a"), "rmdir left the name")


@case
def rmdir_errors(d):
    os.mkdir(d + "/full")
    create(d + "/full/x")
    create(d + "/f")
    os.mkdir(d + "/e")
    expect(errno.ENOTEMPTY, os.rmdir, d + "/full")
    expect(errno.ENOTDIR, os.rmdir, d + "/f")
    expect(errno.ENOENT, os.rmdir, d + "/none")
    expect(errno.EINVAL, os.rmdir, d + "/e/.")
    expect(errno.ENOTEMPTY, os.rmdir, d + "/e/..")
    expect(errno.ENAMETOOLONG, os.rmdir, d + "/" + "x" * (NAME_MAX + 1))
    os.symlink("e", d + "/sl")
    expect(errno.ENOTDIR, os.rmdir, d + "/sl")
    os.chmod(d, 0o755)
    uexpect(errno.EACCES, U1, G1, os.rmdir, d + "/e")


@case
def unlink_basic(d):
    f = d + "/f"
    create(f)
    os.link(f, d + "/g")
    age(d, f)
    dbefore, before = times(d), times(f)
    os.unlink(d + "/g")
    check(os.stat(f).st_nlink == 1, "nlink after unlink")
    changed(dbefore, d, "mc")
    changed(before, f, "c")
    # An open file lives on.
    fd = os.open(f, os.O_RDWR)
    try:
        os.unlink(f)
        os.write(fd, b"still here")
        os.lseek(fd, 0, 0)
        check(os.read(fd, 100) == b"still here", "open unlinked file")
        check(os.fstat(fd).st_nlink == 0, "nlink of an unlinked file")
    finally:
        os.close(fd)
    os.symlink("nowhere", d + "/sl")
    os.unlink(d + "/sl")
    check(not os.path.lexists(d + "/sl"), "unlink of a symlink")
    os.mkfifo(d + "/p")
    os.unlink(d + "/p")


@case
def unlink_errors(d):
    os.mkdir(d + "/dir")
    create(d + "/f")
    expect(errno.EISDIR, os.unlink, d + "/dir")
    expect(errno.ENOENT, os.unlink, d + "/none")
    expect(errno.ENOTDIR, os.unlink, d + "/f/x")
    expect(errno.ENAMETOOLONG, os.unlink, d + "/" + "x" * (NAME_MAX + 1))
    os.chmod(d, 0o755)
    os.chmod(d + "/f", 0o666)
    uexpect(errno.EACCES, U1, G1, os.unlink, d + "/f")


# ---------------------------------------------------------------------------
# symlink, readlink
# ---------------------------------------------------------------------------

@case
def symlink_basic(d):
    age(d)
    dbefore = times(d)
    os.symlink("target/of/link", d + "/sl")
    st = os.lstat(d + "/sl")
    check(stat.S_ISLNK(st.st_mode), "symlink type")
    check(st.st_size == len("target/of/link"), "symlink size %d" %
          st.st_size)
    check(os.readlink(d + "/sl") == "target/of/link", "readlink")
    changed(dbefore, d, "mc")
    long = "/".join(["y" * 255] * 15) + "/" + "z" * (PATH_MAX - 1 - 15 * 256)
    os.symlink(long, d + "/long")
    check(os.readlink(d + "/long") == long, "a 4095-byte symlink")
    expect(errno.ENAMETOOLONG, os.symlink, long + "x", d + "/toolong")
    expect(errno.EEXIST, os.symlink, "x", d + "/sl")
    expect(errno.ENOENT, os.symlink, "x", d + "/none/sl")
    expect(errno.ENAMETOOLONG, os.symlink, "x",
           d + "/" + "x" * (NAME_MAX + 1))
    expect(errno.ENOENT, os.symlink, "", d + "/empty")
    create(d + "/f")
    expect(errno.EINVAL, os.readlink, d + "/f")
    os.chmod(d, 0o755)
    uexpect(errno.EACCES, U1, G1, os.symlink, "x", d + "/u")
    os.chmod(d, 0o777)
    uexpect(0, U1, G1, os.symlink, "x", d + "/u")
    check(os.lstat(d + "/u").st_uid == U1, "symlink owner")


@case
def symlink_follow(d):
    os.mkdir(d + "/dir")
    create(d + "/dir/f")
    os.symlink("dir", d + "/ld")
    os.symlink(d + "/dir/f", d + "/abs")
    check(os.path.exists(d + "/ld/f"), "relative symlink to a directory")
    check(os.stat(d + "/abs").st_ino == os.stat(d + "/dir/f").st_ino,
          "absolute symlink")
    # A chain of 40 links resolves; Linux allows 40 in a path.
    prev = "dir/f"
    for i in range(40):
        os.symlink(prev, "%s/c%d" % (d, i))
        prev = "c%d" % i
    check(call(os.stat, d + "/c39") == 0, "a chain of 40 symlinks")
    os.symlink("c39", d + "/c40")
    expect(errno.ELOOP, os.stat, d + "/c40")


# ---------------------------------------------------------------------------
# truncate
# ---------------------------------------------------------------------------

@case
def truncate_basic(d):
    f = d + "/f"
    create(f)
    write_file(f, b"x" * 10000)
    age(f)
    before = times(f)
    os.truncate(f, 100)
    check(os.stat(f).st_size == 100, "truncate down")
    changed(before, f, "mc")
    os.truncate(f, 1 << 33)
    check(os.stat(f).st_size == 1 << 33, "truncate up")
    with open(f, "rb") as fp:
        fp.seek(50)
        check(fp.read(100) == b"x" * 50 + b"\0" * 50, "zeros past the old end")
        fp.seek((1 << 33) - 10)
        check(fp.read() == b"\0" * 10, "zeros at the end")
    age(f)
    before = times(f)
    os.truncate(f, 1 << 33)  # same size: times still change
    # POSIX asks for it only when the size changes; with the writeback
    # cache the kernel keeps the times it has then (and sends none).
    if not (WRITEBACK and times(f) == before):
        changed(before, f, "mc")
    fd = os.open(f, os.O_RDWR)
    try:
        age(f)
        before = times(f)
        os.ftruncate(fd, 5)
        check(os.fstat(fd).st_size == 5, "ftruncate")
        changed(before, f, "mc")
    finally:
        os.close(fd)


@case
def truncate_errors(d):
    f = d + "/f"
    create(f)
    os.mkdir(d + "/dir")
    expect(errno.EISDIR, os.truncate, d + "/dir", 0)
    expect(errno.EINVAL, os.truncate, f, -1)
    expect(errno.ENOENT, os.truncate, d + "/none", 0)
    expect(errno.ENOTDIR, os.truncate, f + "/x", 0)
    expect(errno.ENAMETOOLONG, os.truncate, d + "/" + "x" * (NAME_MAX + 1),
           0)
    os.chmod(f, 0o644)
    uexpect(errno.EACCES, U1, G1, os.truncate, f, 0)
    fd = os.open(f, os.O_RDONLY)
    try:
        expect(errno.EINVAL, os.ftruncate, fd, 0)
    finally:
        os.close(fd)


@case
def write_clears_setid(d):
    f = d + "/f"
    create(f)
    os.chmod(f, 0o6777)
    uexpect(0, U1, G1, write_file, f, b"data")
    check(mode_of(f) & 0o6000 == 0, "write by a user kept set-id bits: %o"
          % mode_of(f))
    os.chmod(f, 0o6777)
    uexpect(0, U1, G1, os.truncate, f, 1)
    check(mode_of(f) & 0o6000 == 0, "truncate by a user kept set-id bits")


@case
def write_times(d):
    f = d + "/f"
    create(f)
    age(f)
    before = times(f)
    write_file(f, b"abc")
    changed(before, f, "mc")
    # Reading updates atime when it is older than mtime (relatime).
    utimens(f, OLD, (OLD[0] + 10, 0))
    before = times(f)
    with open(f, "rb") as fp:
        fp.read()
    check(times(f)[0] != before[0], "read did not update an old atime")
    check(times(f)[1] == before[1], "read changed mtime")


# ---------------------------------------------------------------------------
# utimensat
# ---------------------------------------------------------------------------

@case
def utimens_basic(d):
    f = d + "/f"
    create(f)
    before = times(f)
    time.sleep(0.02)
    utimens(f, (1234567890, 123456789), (1234567891, 987654321))
    st = os.stat(f)
    check(st.st_atime_ns == 1234567890123456789, "atime %d" % st.st_atime_ns)
    check(st.st_mtime_ns == 1234567891987654321, "mtime %d" % st.st_mtime_ns)
    check(st.st_ctime_ns != before[2], "ctime did not change")
    before = times(f)
    time.sleep(0.02)
    utimens(f, UTIME_OMIT, (5, 0))
    st = os.stat(f)
    check(st.st_atime_ns == before[0] and st.st_mtime_ns == 5 * 10**9,
          "UTIME_OMIT for atime")
    before = times(f)
    time.sleep(0.02)
    utimens(f, UTIME_NOW, UTIME_OMIT)
    st = os.stat(f)
    check(st.st_atime_ns > before[0] and st.st_mtime_ns == before[1],
          "UTIME_NOW for atime")
    before = times(f)
    time.sleep(0.02)
    utimens(f, UTIME_OMIT, UTIME_OMIT)
    changed(before, f, "")
    # Times before the epoch and far in the future.
    utimens(f, (-1000, 0), (1 << 33, 5))
    st = os.stat(f)
    check(st.st_atime_ns == -1000 * 10**9, "negative atime")
    check(st.st_mtime_ns == (1 << 33) * 10**9 + 5, "far mtime")
    # Of a symlink itself.
    os.symlink("f", d + "/sl")
    utimens(d + "/sl", (7, 0), (8, 0), follow=False)
    check(os.lstat(d + "/sl").st_mtime_ns == 8 * 10**9, "symlink mtime")
    check(os.stat(f).st_mtime_ns != 8 * 10**9, "followed the symlink")


@case
def utimens_perm(d):
    f = d + "/f"
    create(f)
    os.chown(f, U1, G1)
    os.chmod(f, 0o666)
    uexpect(0, U1, G1, utimens, f, (1, 0), (2, 0))
    # Another user who may write: "now" only.
    uexpect(0, U2, G2, utimens, f, UTIME_NOW, UTIME_NOW)
    uexpect(errno.EPERM, U2, G2, utimens, f, (1, 0), (2, 0))
    uexpect(errno.EPERM, U2, G2, utimens, f, UTIME_NOW, (2, 0))
    os.chmod(f, 0o644)
    uexpect(errno.EACCES, U2, G2, utimens, f, UTIME_NOW, UTIME_NOW)
    uexpect(errno.EPERM, U2, G2, utimens, f, (1, 0), (2, 0))
    uexpect(0, U2, G2, utimens, f, UTIME_OMIT, UTIME_OMIT)
    expect(errno.ENOENT, utimens, d + "/none", UTIME_NOW, UTIME_NOW)


# ---------------------------------------------------------------------------
# names and paths
# ---------------------------------------------------------------------------

@case
def name_max(d):
    n = "n" * NAME_MAX
    create(d + "/" + n)
    check(n in os.listdir(d), "a 255-byte name in readdir")
    os.rename(d + "/" + n, d + "/" + "m" * NAME_MAX)
    os.mkdir(d + "/" + n)
    u = "\u00e9" * 127  # 254 bytes of UTF-8
    create(d + "/" + u)
    check(u in os.listdir(d), "a UTF-8 name")
    expect(errno.ENAMETOOLONG, create, d + "/" + "\u00e9" * 128)
    expect(errno.ENAMETOOLONG, os.stat, d + "/" + "x" * (NAME_MAX + 1))
    expect(errno.ENAMETOOLONG, os.rename, d + "/" + n,
           d + "/" + "x" * (NAME_MAX + 1))


@case
def path_max(d):
    # Build a path just under PATH_MAX out of long components, by chdir.
    comp = "p" * 200
    depth = (PATH_MAX - len(d)) // (len(comp) + 1) + 1
    cwd = os.getcwd()
    try:
        os.chdir(d)
        for _ in range(depth):
            os.mkdir(comp)
            os.chdir(comp)
        create("leaf")
    finally:
        os.chdir(cwd)
    full = d + ("/" + comp) * depth + "/leaf"
    check(len(full) >= PATH_MAX, "path not long enough: %d" % len(full))
    expect(errno.ENAMETOOLONG, os.stat, full)
    expect(errno.ENAMETOOLONG, os.open, full, os.O_RDONLY)
    expect(errno.ENAMETOOLONG, os.mkdir, full + "x")
    # Under PATH_MAX through a relative path: works.
    rel = ("/" + comp) * (depth - 1)
    cwd = os.getcwd()
    try:
        os.chdir(d + ("/" + comp))
        check(call(os.stat, "." + rel + "/leaf") == 0 or
              len("." + rel + "/leaf") >= PATH_MAX,
              "a long relative path")
    finally:
        os.chdir(cwd)


@case
def eloop(d):
    os.symlink("self", d + "/self")
    expect(errno.ELOOP, os.stat, d + "/self")
    expect(errno.ELOOP, os.open, d + "/self/x", os.O_RDONLY)
    expect(errno.ELOOP, os.mkdir, d + "/self/x")
    expect(errno.ELOOP, os.unlink, d + "/self/x")
    expect(errno.ELOOP, os.rename, d + "/self/x", d + "/y")
    expect(errno.ELOOP, os.truncate, d + "/self", 0)
    check(call(os.lstat, d + "/self") == 0, "lstat of a loop")
    check(call(os.unlink, d + "/self") == 0, "unlink of a loop")


@case
def dot_entries(d):
    os.mkdir(d + "/a")
    check(os.stat(d + "/a/.").st_ino == os.stat(d + "/a").st_ino, ".")
    check(os.stat(d + "/a/..").st_ino == os.stat(d).st_ino, "..")
    names = os.listdir(d + "/a")
    check(names == [], "listdir of an empty dir: %r" % names)
    expect(errno.EEXIST, os.mkdir, d + "/a/.")
    expect(errno.EEXIST, os.mkdir, d + "/a/..")
    expect(errno.EISDIR, os.unlink, d + "/a/.")
    expect(errno.EEXIST, os.link, d + "/a", d + "/a/.")


@case
def search_perm(d):
    # Search (x) on every directory of a path; read (r) to list.
    os.chmod(d, 0o755)
    os.mkdir(d + "/nx", 0o644)
    create(d + "/nx/f")
    uexpect(errno.EACCES, U1, G1, os.stat, d + "/nx/f")
    os.mkdir(d + "/xo", 0o711)
    create(d + "/xo/f")
    uexpect(0, U1, G1, os.stat, d + "/xo/f")
    uexpect(errno.EACCES, U1, G1, os.listdir, d + "/xo")
    # Group and other bits: the owner class decides, even if it has less.
    os.mkdir(d + "/own", 0o077)
    os.chown(d + "/own", U1, G1)
    uexpect(errno.EACCES, U1, G1, os.listdir, d + "/own")
    os.mkdir(d + "/grp", 0o070)
    os.chown(d + "/grp", 0, G3)
    uexpect(0, U1, G1, os.listdir, d + "/grp", groups=[G3])
    uexpect(errno.EACCES, U1, G1, os.listdir, d + "/grp")


@case
def xattr_basic(d):
    f = d + "/f"
    create(f)
    os.setxattr(f, "user.a", b"1")
    check(os.getxattr(f, "user.a") == b"1", "getxattr")
    expect(errno.EEXIST, os.setxattr, f, "user.a", b"2", os.XATTR_CREATE)
    expect(errno.ENODATA, os.setxattr, f, "user.b", b"2", os.XATTR_REPLACE)
    expect(errno.ENODATA, os.getxattr, f, "user.none")
    check("user.a" in os.listxattr(f), "listxattr")
    os.removexattr(f, "user.a")
    expect(errno.ENODATA, os.removexattr, f, "user.a")
    os.chmod(f, 0o644)
    uexpect(errno.EACCES, U1, G1, os.setxattr, f, "user.c", b"1")
    uexpect(errno.EPERM, U1, G1, os.setxattr, f, "trusted.c", b"1")


# ---------------------------------------------------------------------------
# More of what pjdfstest and xfstests look at: xattr limits, link counts
# across RENAME_EXCHANGE, open files that lost their name, open flags, far
# offsets, the times of chown, fallocate and copy_file_range, long
# directories read while they change, permissions, statfs
# ---------------------------------------------------------------------------

def getxattr_size(p, name, size):
    """getxattr(2) into a buffer of @size bytes; returns the value size."""
    buf = ctypes.create_string_buffer(max(size, 1))
    n = libc.getxattr(os.fsencode(p), name.encode(), buf,
                      ctypes.c_size_t(size))
    if n < 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e), p)
    return n


def listxattr_size(p, size):
    buf = ctypes.create_string_buffer(max(size, 1))
    n = libc.listxattr(os.fsencode(p), buf, ctypes.c_size_t(size))
    if n < 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e), p)
    return n


@case
def xattr_errors(d):
    f = d + "/f"
    create(f)
    os.setxattr(f, "user.a", b"12345")
    check(getxattr_size(f, "user.a", 0) == 5, "getxattr size query")
    expect(errno.ERANGE, getxattr_size, f, "user.a", 2)
    check(listxattr_size(f, 0) >= len("user.a") + 1, "listxattr size")
    expect(errno.ERANGE, listxattr_size, f, 2)
    expect(errno.ERANGE, os.setxattr, f, "user." + "x" * 256, b"1")
    expect(errno.E2BIG, os.setxattr, f, "user.big", b"x" * 65537)
    os.setxattr(f, "user.empty", b"")
    check(os.getxattr(f, "user.empty") == b"", "an empty value")
    # No user xattrs on a symlink.
    os.symlink("f", d + "/sl")
    expect(errno.EPERM, lambda: os.setxattr(d + "/sl", "user.a", b"1", 0,
                                            follow_symlinks=False))
    age(f)
    before = times(f)
    os.setxattr(f, "user.b", b"1")
    changed(before, f, "c")
    age(f)
    before = times(f)
    os.removexattr(f, "user.b")
    changed(before, f, "c")
    os.mkdir(d + "/dir")
    os.setxattr(d + "/dir", "user.d", b"v" * 4000)
    check(os.getxattr(d + "/dir", "user.d") == b"v" * 4000,
          "an xattr of a directory")


@case
def xattr_big(d):
    f = d + "/f"
    create(f)
    v = bytes(range(256)) * 256
    os.setxattr(f, "user.big", v)
    check(os.getxattr(f, "user.big") == v, "a 64 KiB value")
    for i in range(100):
        os.setxattr(f, "user.n%03d" % i, b"%d" % i)
    names = [x for x in os.listxattr(f) if x.startswith("user.n")]
    check(len(names) == 100, "100 xattrs: %d listed" % len(names))
    check(os.getxattr(f, "user.n042") == b"42", "one of 100")


# ---------------------------------------------------------------------------
# POSIX ACLs (system.posix_acl_*, in the kernel's xattr form)
# ---------------------------------------------------------------------------

A_UOBJ, A_USER, A_GOBJ, A_GROUP, A_MASK, A_OTHER = 1, 2, 4, 8, 0x10, 0x20
NOID = 0xffffffff
ACL_A, ACL_D = "system.posix_acl_access", "system.posix_acl_default"


def acl(*entries):
    """An ACL's xattr value from (tag, perm[, id]) entries."""
    return struct.pack("<I", 2) + b"".join(
        struct.pack("<HHI", e[0], e[1], e[2] if len(e) > 2 else NOID)
        for e in entries)


def open_close(p, flags):
    os.close(os.open(p, flags))


@case
def acl_access(d):
    f = d + "/f"
    create(f, 0o644)
    # A named user and a named group (U1's supplementary one), as the mask
    # allows: the mask is the group bits.
    a = acl((A_UOBJ, 6), (A_USER, 6, U1), (A_GOBJ, 4), (A_GROUP, 2, G3),
            (A_MASK, 6), (A_OTHER, 0))
    age(f)
    before = times(f)
    os.setxattr(f, ACL_A, a)
    changed(before, f, "c")
    check(mode_of(f) == 0o660, "mode after an access ACL: %o" % mode_of(f))
    check(os.getxattr(f, ACL_A) == a, "the ACL does not read back")
    uexpect(0, U1, G1, open_close, f, os.O_RDWR)
    uexpect(errno.EACCES, U2, G2, open_close, f, os.O_RDONLY)
    # Touching the times needs write permission, which the ACL gives.
    uexpect(0, U1, G1, os.utime, f)
    uexpect(errno.EACCES, U2, G2, os.utime, f)
    uexpect(0, U2, G2, open_close, f, os.O_WRONLY, groups=[G3])
    uexpect(errno.EACCES, U2, G2, open_close, f, os.O_RDONLY, groups=[G3])
    # chmod sets the mask: the named user loses write.
    os.chmod(f, 0o640)
    check(os.getxattr(f, ACL_A) ==
          acl((A_UOBJ, 6), (A_USER, 6, U1), (A_GOBJ, 4), (A_GROUP, 2, G3),
              (A_MASK, 4), (A_OTHER, 0)), "chmod did not set the mask")
    uexpect(errno.EACCES, U1, G1, open_close, f, os.O_WRONLY)
    uexpect(0, U1, G1, open_close, f, os.O_RDONLY)
    # One the mode says all of: the mode, and no ACL.
    os.setxattr(f, ACL_A, acl((A_UOBJ, 7), (A_GOBJ, 5), (A_OTHER, 1)))
    check(mode_of(f) == 0o751, "mode after a plain ACL: %o" % mode_of(f))
    expect(errno.ENODATA, os.getxattr, f, ACL_A)
    # Only the owner; valid ones only; a default one on a directory only.
    os.chown(f, U1, G1)
    uexpect(errno.EPERM, U2, G2, os.setxattr, f, ACL_A, a)
    uexpect(0, U1, G1, os.setxattr, f, ACL_A, a)
    expect(errno.EINVAL, os.setxattr, f, ACL_A,
           acl((A_UOBJ, 6), (A_USER, 6, U1), (A_GOBJ, 4), (A_OTHER, 0)))
    expect(errno.EINVAL, os.setxattr, f, ACL_A,
           acl((A_GOBJ, 4), (A_UOBJ, 6), (A_OTHER, 0)))
    expect(errno.EACCES, os.setxattr, f, ACL_D, a)
    os.removexattr(f, ACL_A)
    expect(errno.ENODATA, os.getxattr, f, ACL_A)
    check(mode_of(f) == 0o660, "removing the ACL changed the mode")


@case
def acl_default(d):
    top = d + "/top"
    os.mkdir(top, 0o755)
    dflt = acl((A_UOBJ, 7), (A_USER, 7, U1), (A_GOBJ, 5), (A_MASK, 7),
               (A_OTHER, 5))
    os.setxattr(top, ACL_D, dflt)
    check(os.getxattr(top, ACL_D) == dflt, "the default ACL")
    check(mode_of(top) == 0o755, "a default ACL changed the mode")
    expect(errno.ENODATA, os.getxattr, top, ACL_A)
    # The default ACL in place of the umask, masked by the mode asked for.
    os.umask(0o077)
    create(top + "/f", 0o666)
    check(mode_of(top + "/f") == 0o664, "file mode %o" % mode_of(top + "/f"))
    check(os.getxattr(top + "/f", ACL_A) ==
          acl((A_UOBJ, 6), (A_USER, 7, U1), (A_GOBJ, 5), (A_MASK, 6),
              (A_OTHER, 4)), "the file's access ACL")
    expect(errno.ENODATA, os.getxattr, top + "/f", ACL_D)
    os.mkdir(top + "/dir", 0o750)
    check(mode_of(top + "/dir") == 0o750, "dir mode %o" %
          mode_of(top + "/dir"))
    check(os.getxattr(top + "/dir", ACL_D) == dflt, "the dir's default ACL")
    check(os.getxattr(top + "/dir", ACL_A) ==
          acl((A_UOBJ, 7), (A_USER, 7, U1), (A_GOBJ, 5), (A_MASK, 5),
              (A_OTHER, 0)), "the dir's access ACL")
    os.mkfifo(top + "/dir/p", 0o644)
    check(mode_of(top + "/dir/p") == 0o644, "fifo mode %o" %
          mode_of(top + "/dir/p"))
    os.symlink("f", top + "/l")
    expect(errno.EOPNOTSUPP, lambda: os.getxattr(top + "/l", ACL_A,
                                                 follow_symlinks=False))
    uexpect(0, U1, G1, open_close, top + "/f", os.O_RDWR)
    uexpect(errno.EACCES, U2, G2, open_close, top + "/f", os.O_WRONLY)
    # Without a default ACL, the umask.
    create(d + "/g", 0o666)
    check(mode_of(d + "/g") == 0o600, "umask: %o" % mode_of(d + "/g"))
    expect(errno.ENODATA, os.getxattr, d + "/g", ACL_A)
    # An empty one removes it.
    os.setxattr(top, ACL_D, acl())
    expect(errno.ENODATA, os.getxattr, top, ACL_D)


@case
def exchange_nlink(d):
    # A directory and a file swap parents: the parents' link counts move.
    os.mkdir(d + "/a")
    os.mkdir(d + "/b")
    os.mkdir(d + "/a/sub")
    create(d + "/b/f")
    na, nb = os.stat(d + "/a").st_nlink, os.stat(d + "/b").st_nlink
    age(d + "/a/sub", d + "/b/f")
    sbefore, fbefore = times(d + "/a/sub"), times(d + "/b/f")
    renameat2(d + "/a/sub", d + "/b/f", RENAME_EXCHANGE)
    check(os.stat(d + "/a").st_nlink == na - 1, "nlink of the dir's old "
          "parent: %d, expected %d" % (os.stat(d + "/a").st_nlink, na - 1))
    check(os.stat(d + "/b").st_nlink == nb + 1, "nlink of its new parent")
    check(os.stat(d + "/b/f/..").st_ino == os.stat(d + "/b").st_ino,
          ".. after the exchange")
    changed(sbefore, d + "/b/f", "c")
    changed(fbefore, d + "/a/sub", "c")


@case
def nlink_dirs(d):
    n = os.stat(d).st_nlink
    os.mkdir(d + "/x")
    check(os.stat(d + "/x").st_nlink == 2, "nlink of a new directory")
    check(os.stat(d).st_nlink == n + 1, "parent's nlink after mkdir")
    os.mkdir(d + "/x/y")
    check(os.stat(d + "/x").st_nlink == 3, "nlink with a subdirectory")
    os.rmdir(d + "/x/y")
    check(os.stat(d + "/x").st_nlink == 2, "nlink after rmdir")
    os.rmdir(d + "/x")
    check(os.stat(d).st_nlink == n, "parent's nlink after rmdir")
    # A directory removed while open: nlink 0, and nothing is made in it.
    os.mkdir(d + "/z")
    fd = os.open(d + "/z", os.O_RDONLY)
    try:
        os.rmdir(d + "/z")
        check(os.fstat(fd).st_nlink == 0, "nlink of a removed open dir")
        expect(errno.ENOENT, os.open, d + "/z/new",
               os.O_CREAT | os.O_WRONLY)
    finally:
        os.close(fd)


@case
def unlinked_open(d):
    f = d + "/f"
    create(f)
    write_file(f, b"hello" * 1000)
    fd = os.open(f, os.O_RDWR)
    try:
        os.unlink(f)
        check(os.fstat(fd).st_nlink == 0, "nlink of an unlinked open file")
        os.pwrite(fd, b"more", 5000)
        check(os.pread(fd, 10, 4998) == b"lomore", "read after the unlink")
        os.ftruncate(fd, 3)
        check(os.fstat(fd).st_size == 3, "ftruncate after the unlink")
        os.fsync(fd)
    finally:
        os.close(fd)
    check(not os.path.lexists(f), "the name came back")


@case
def open_flags(d):
    f = d + "/f"
    create(f)
    os.symlink("none", d + "/dangling")
    os.symlink("f", d + "/sl")
    expect(errno.EEXIST, os.open, d + "/dangling",
           os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    expect(errno.ELOOP, os.open, d + "/sl", os.O_RDONLY | os.O_NOFOLLOW)
    expect(errno.ENOTDIR, os.open, f, os.O_RDONLY | os.O_DIRECTORY)
    expect(errno.EISDIR, os.open, d, os.O_WRONLY)
    # O_CREAT through a dangling symlink makes its target.
    os.close(os.open(d + "/dangling", os.O_CREAT | os.O_WRONLY, 0o600))
    check(os.path.exists(d + "/none"), "O_CREAT through a dangling symlink")
    # With O_APPEND, Linux appends even what pwrite asks to put elsewhere.
    fd = os.open(f, os.O_WRONLY | os.O_APPEND)
    try:
        os.write(fd, b"abc")
        os.pwrite(fd, b"XY", 0)
    finally:
        os.close(fd)
    with open(f, "rb") as fp:
        got = fp.read()
    check(got == b"abcXY", "O_APPEND: %r" % got)


@case
def big_offsets(d):
    f = d + "/f"
    create(f)
    fd = os.open(f, os.O_RDWR)
    try:
        os.pwrite(fd, b"end", (1 << 40) - 3)
        check(os.fstat(fd).st_size == 1 << 40, "size after a write at 1 TiB")
        check(os.pread(fd, 6, (1 << 40) - 6) == b"\0\0\0end",
              "read at 1 TiB")
        for size in (1 << 62, (1 << 63) - 1):
            e = call(os.ftruncate, fd, size)
            check(e in (0, errno.EFBIG, errno.EINVAL),
                  "ftruncate to %d: %s" % (size, ename(e)))
        e = call(os.pwrite, fd, b"x", (1 << 63) - 1)
        check(e in (errno.EFBIG, errno.EINVAL),
              "write at 2^63 - 1: %s" % ename(e))
    finally:
        os.close(fd)


@case
def setattr_noop_times(d):
    # chown(-1, -1) and chmod to the same mode still change ctime.
    f = d + "/f"
    create(f)
    age(f)
    before = times(f)
    os.chown(f, -1, -1)
    changed(before, f, "c")
    age(f)
    before = times(f)
    os.chmod(f, mode_of(f))
    changed(before, f, "c")


@case
def punch_times(d):
    f = d + "/f"
    create(f)
    write_file(f, b"x" * 20000)
    age(f)
    before = times(f)
    fd = os.open(f, os.O_RDWR)
    try:
        rc = libc.fallocate(fd, 3, ctypes.c_long(4096), ctypes.c_long(8192))
        check(rc == 0, "fallocate punch hole: %s" % ename(ctypes.get_errno()))
        changed(before, f, "mc")
        check(os.pread(fd, 8192, 4096) == bytes(8192), "zeros in the hole")
        check(os.fstat(fd).st_size == 20000, "the punch changed the size")
    finally:
        os.close(fd)


TMPFS_MAGIC = 0x01021994
FALLOC_FL_KEEP_SIZE = 1
FALLOC_FL_ZERO_RANGE = 0x10


def fs_type(path):
    buf = ctypes.create_string_buffer(256)  # struct statfs, f_type first
    if libc.statfs(path.encode(), buf) != 0:
        raise OSError(ctypes.get_errno(), "statfs " + path)
    return ctypes.c_long.from_buffer(buf).value


def fallocate(fd, mode, off, length):
    if libc.fallocate(fd, mode, ctypes.c_long(off), ctypes.c_long(length)):
        return ctypes.get_errno()
    return 0


@case
def zero_range(d):
    # As ext4 and XFS: zeros inside, the size grows to the end of the
    # range unless KEEP_SIZE, and never shrinks. (tmpfs, the reference
    # here, does not zero ranges: that alone is let pass.)
    f = d + "/f"
    create(f)
    data = bytes((i * 7 + 3) % 251 for i in range(20000))
    write_file(f, data)
    fd = os.open(f, os.O_RDWR)
    try:
        e = fallocate(fd, FALLOC_FL_ZERO_RANGE, 3000, 6000)
        if e == errno.EOPNOTSUPP and fs_type(d) == TMPFS_MAGIC:
            return
        check(e == 0, "zero range: %s" % ename(e))
        want = bytearray(data)
        want[3000:9000] = bytes(6000)
        age(f)
        before = times(f)
        e = fallocate(fd, FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE,
                      15000, 30000)
        check(e == 0, "zero range, keep size: %s" % ename(e))
        changed(before, f, "mc")
        want[15000:] = bytes(5000)
        check(os.fstat(fd).st_size == 20000, "KEEP_SIZE changed the size")
        check(os.pread(fd, 30000, 0) == bytes(want), "zeros in the range")
        check(fallocate(fd, FALLOC_FL_ZERO_RANGE, 10, 10) == 0,
              "zero range inside the file")
        check(os.fstat(fd).st_size == 20000, "a zero range shrank the file")
        e = fallocate(fd, FALLOC_FL_ZERO_RANGE, 19990, 10010)
        check(e == 0, "zero range past the end: %s" % ename(e))
        want[10:20] = bytes(10)
        want[19990:] = bytes(10)
        want += bytes(10000)
        check(os.fstat(fd).st_size == 30000, "the size after a zero range")
        check(os.pread(fd, 40000, 0) == bytes(want), "zeros past the end")
        check(fallocate(fd, FALLOC_FL_ZERO_RANGE, 0, 0) == errno.EINVAL,
              "zero range of length 0")
    finally:
        os.close(fd)
    rfd = os.open(f, os.O_RDONLY)
    try:
        check(fallocate(rfd, FALLOC_FL_ZERO_RANGE, 0, 1) == errno.EBADF,
              "zero range through a read-only descriptor")
    finally:
        os.close(rfd)


@case
def tmpfile(d):
    # O_TMPFILE: an unnamed file, with the umask, that linkat(AT_EMPTY_PATH)
    # can name and name again, unless it was made with O_EXCL. FUSE passes
    # it on since Linux 6.1; before, the kernel says EOPNOTSUPP.
    AT_EMPTY_PATH = 0x1000

    def name(fd, path):
        rc = libc.linkat(fd, b"", AT_FDCWD, path.encode(), AT_EMPTY_PATH)
        return 0 if rc == 0 else ctypes.get_errno()

    try:
        fd = os.open(d, os.O_TMPFILE | os.O_RDWR, 0o666)
    except OSError as e:
        check(e.errno == errno.EOPNOTSUPP and not kernel_at_least(6, 1),
              "O_TMPFILE: %s" % ename(e.errno))
        return
    try:
        st = os.fstat(fd)
        check(stat.S_ISREG(st.st_mode) and st.st_nlink == 0,
              "O_TMPFILE: mode %o, %d links" % (st.st_mode, st.st_nlink))
        check(stat.S_IMODE(st.st_mode) == 0o644,
              "O_TMPFILE with the umask 022: %o" % stat.S_IMODE(st.st_mode))
        os.write(fd, b"tmp")
        check(os.listdir(d) == [], "O_TMPFILE made a name")
        rc = name(fd, d + "/named")
        check(rc == 0, "linkat of the O_TMPFILE: %s" % ename(rc))
        check(os.fstat(fd).st_nlink == 1, "named O_TMPFILE: %d links" %
              os.fstat(fd).st_nlink)
        rc = name(fd, d + "/again")
        check(rc == 0, "second linkat of the O_TMPFILE: %s" % ename(rc))
    finally:
        os.close(fd)
    with open(d + "/named", "rb") as fp:
        check(fp.read() == b"tmp", "the linked O_TMPFILE's data")
    check(os.stat(d + "/again").st_nlink == 2, "two names, two links")
    fd = os.open(d, os.O_TMPFILE | os.O_WRONLY | os.O_EXCL, 0o600)
    try:
        rc = name(fd, d + "/excl")
        check(rc == errno.ENOENT, "linkat of an O_EXCL O_TMPFILE: %s" %
              ename(rc))
    finally:
        os.close(fd)
    check(sorted(os.listdir(d)) == ["again", "named"],
          "names: %s" % sorted(os.listdir(d)))


@case
def birth_time(d):
    # statx's birth time (stat(1) asks for it): set when the file is made,
    # kept by writes and renames. FUSE passes the request on since Linux
    # 6.6; before, no filesystem of it has one.
    def birth(p):
        out = subprocess.run(["stat", "-c", "%W", p], capture_output=True,
                             text=True, check=True).stdout.strip()
        return int(out) if out.isdigit() else 0

    f = d + "/f"
    before = int(time.time())
    create(f)
    b = birth(f)
    if b == 0 and not kernel_at_least(6, 6):
        return
    check(before - 1 <= b <= int(time.time()) + 1,
          "birth time %d, made at %d" % (b, before))
    time.sleep(1.1)
    write_file(f, b"later")
    os.rename(f, d + "/g")
    check(birth(d + "/g") == b, "birth time %d after a write and a rename, "
          "%d before" % (birth(d + "/g"), b))
    check(os.stat(d + "/g").st_mtime > b, "mtime not after the birth")
    os.mkdir(d + "/sub")
    check(birth(d + "/sub") >= b, "a directory's birth time")


@case
def copy_range_times(d):
    f, g = d + "/f", d + "/g"
    create(f)
    create(g)
    write_file(f, b"y" * 20000)
    age(f, g)
    gbefore = times(g)
    src, dst = os.open(f, os.O_RDONLY), os.open(g, os.O_WRONLY)
    try:
        n = os.copy_file_range(src, dst, 20000, 0, 100)
        check(n == 20000, "copy_file_range copied %d" % n)
    finally:
        os.close(src)
        os.close(dst)
    changed(gbefore, g, "mc")
    with open(g, "rb") as fp:
        check(fp.read() == bytes(100) + b"y" * 20000, "copied contents")


@case
def reopen_sees_changes(d):
    """Data read through one open and changed in every way there is, by
    path or by another descriptor: each new open reads the change (the
    daemon lets the kernel keep its cached pages from one open to the
    next), and a descriptor kept open through the changes too."""
    f, g = d + "/f", d + "/g"
    create(f)
    create(g)
    write_file(g, b"g" * 6000)
    exp = bytearray(b"a" * 20000)
    write_file(f, bytes(exp))
    held = os.open(f, os.O_RDONLY)

    def same(what):
        with open(f, "rb") as fp:
            check(fp.read() == exp, "a new open after %s" % what)
        check(os.pread(held, 30000, 0) == exp,
              "a descriptor open before %s" % what)

    try:
        same("the write")
        fd = os.open(f, os.O_WRONLY)
        os.pwrite(fd, b"b" * 100, 5000)
        os.close(fd)
        exp[5000:5100] = b"b" * 100
        same("a write")
        os.truncate(f, 3000)
        del exp[3000:]
        same("a shrinking truncate")
        os.truncate(f, 16384)
        exp += bytes(16384 - 3000)
        same("a growing truncate")
        fd = os.open(f, os.O_RDWR)
        try:
            os.pwrite(fd, b"c" * 16384, 0)
            exp[:] = b"c" * 16384
            same("an overwrite")
            rc = libc.fallocate(fd, 3, ctypes.c_long(4096), ctypes.c_long(4096))
            check(rc == 0, "punch: %s" % ename(ctypes.get_errno()))
            exp[4096:8192] = bytes(4096)
            same("a punch")
            rc = libc.fallocate(fd, FALLOC_FL_ZERO_RANGE,
                                ctypes.c_long(100), ctypes.c_long(200))
            if rc == 0:
                exp[100:300] = bytes(200)
                same("a zeroed range")
            src = os.open(g, os.O_RDONLY)
            try:
                n = os.copy_file_range(src, fd, 6000, 0, 10000)
                check(n == 6000, "copy_file_range copied %d" % n)
            finally:
                os.close(src)
            exp[10000:16000] = b"g" * 6000
            same("a copy into it")
            with mmap.mmap(fd, 8192) as mp:
                mp[8000:8100] = b"m" * 100
            exp[8000:8100] = b"m" * 100
            same("a write through mmap")
        finally:
            os.close(fd)
        try:
            fd = os.open(f, os.O_WRONLY | os.O_DIRECT)
        except OSError as e:
            check(e.errno == errno.EINVAL, "O_DIRECT: %s" % ename(e.errno))
            fd = -1
        if fd >= 0:
            try:
                with mmap.mmap(-1, 4096) as buf:  # page-aligned memory
                    buf.write(b"d" * 4096)
                    check(os.pwritev(fd, [buf], 12288) == 4096,
                          "O_DIRECT write")
            finally:
                os.close(fd)
            exp[12288:16384] = b"d" * 4096
            same("an O_DIRECT write")
    finally:
        os.close(held)


@case
def readdir_many(d):
    names = set("f%04d" % i for i in range(1500))
    for n in names:
        create(d + "/" + n)
    got = os.listdir(d)
    check(len(got) == len(set(got)) and set(got) == names,
          "listdir of 1500 names: %d" % len(got))
    # Names removed while the directory is read: every name that stays is
    # seen, and no name twice.
    seen, gone = [], set()
    with os.scandir(d) as it:
        for i, e in enumerate(it):
            seen.append(e.name)
            if i % 3 == 0:
                for k in range(3):
                    victim = "f%04d" % ((i * 7 + k) % 1500)
                    if victim not in gone:
                        os.unlink(d + "/" + victim)
                        gone.add(victim)
    check(len(seen) == len(set(seen)), "a name seen twice")
    missing = (names - gone) - set(seen)
    check(not missing, "names not seen: %s" % sorted(missing)[:5])


@case
def access_groups(d):
    f = d + "/f"
    create(f, 0o640)
    os.chown(f, U1, G2)
    uexpect(0, U1, G1, lambda: os.close(os.open(f, os.O_RDWR)))
    uexpect(errno.EACCES, U2, G1, os.open, f, os.O_RDONLY)
    uexpect(0, U2, G2, lambda: os.close(os.open(f, os.O_RDONLY)))
    uexpect(errno.EACCES, U2, G2, os.open, f, os.O_WRONLY)
    os.chmod(d, 0o711)
    uexpect(errno.EACCES, U2, G2, os.listdir, d)
    uexpect(0, U2, G2, os.stat, f)


@case
def statfs_basic(d):
    s = os.statvfs(d)
    check(s.f_namemax == NAME_MAX, "f_namemax %d" % s.f_namemax)
    check(s.f_bsize > 0 and s.f_blocks > 0, "f_bsize or f_blocks is 0")
    check(s.f_blocks >= s.f_bfree >= s.f_bavail, "blocks < free < avail")


@case
def dir_entry_times(d):
    # Every change to a directory's entries moves its mtime and ctime.
    os.mkdir(d + "/x")
    create(d + "/f")
    for fn in (lambda: os.symlink("f", d + "/x/s"),
               lambda: os.link(d + "/f", d + "/x/l"),
               lambda: os.mkfifo(d + "/x/p"),
               lambda: os.unlink(d + "/x/l"),
               lambda: os.rename(d + "/x/s", d + "/x/s2"),
               lambda: os.mkdir(d + "/x/sub"),
               lambda: os.rmdir(d + "/x/sub")):
        age(d + "/x")
        before = times(d + "/x")
        fn()
        changed(before, d + "/x", "mc")


# ---------------------------------------------------------------------------
# The runner
# ---------------------------------------------------------------------------

def run_all(base, only, verbose):
    """Run the cases under @base; return {name: None or failure text}."""
    res = {}
    os.umask(0o022)
    top = os.path.join(base, "posix.%d" % os.getpid())
    os.mkdir(top, 0o755)
    for fn in CASES:
        if only and fn.__name__ not in only:
            continue
        d = os.path.join(top, fn.__name__)
        os.mkdir(d)
        try:
            fn(d)
            res[fn.__name__] = None
        except Fail as e:
            res[fn.__name__] = str(e)
        except OSError as e:
            res[fn.__name__] = "unexpected %s: %s" % (ename(e.errno), e)
        finally:
            os.umask(0o022)
        if res[fn.__name__] and len(res[fn.__name__]) > 300:
            res[fn.__name__] = res[fn.__name__][:297] + "..."
        if verbose:
            print("  %-20s %s" % (fn.__name__, res[fn.__name__] or "ok"))
    return res


def main():
    args = sys.argv[1:]
    verbose = "-v" in args
    args = [a for a in args if a != "-v"]
    only = set()
    while "-k" in args:
        i = args.index("-k")
        only.add(args[i + 1])
        del args[i:i + 2]
    if not 1 <= len(args) <= 2:
        sys.exit(__doc__)
    if os.geteuid() != 0:
        print("SKIP: posix.py must run as root")
        sys.exit(77)
    results = []
    for base in args:
        if verbose:
            print(base)
        results.append(run_all(base, only, verbose))
    ref = results[0]
    for name, err in sorted(ref.items()):
        if err:
            print("reference %s fails %s: %s" % (args[0], name, err))
    bad = 0
    if len(results) == 2:
        for name, err in sorted(results[1].items()):
            if err and ref[name] is None:
                print("FAIL %s: %s" % (name, err))
                bad += 1
        print("%d cases: %d pass on %s, %d of them fail on %s" % (
            len(ref), sum(e is None for e in ref.values()), args[0], bad,
            args[1]))
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
