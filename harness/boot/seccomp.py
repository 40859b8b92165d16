"""A seccomp filter, for bubblewrap's --seccomp, that refuses a sandboxed service a new user
namespace where bwrap's own --disable-userns cannot be had.

    fd = no_user_namespaces()        # a sealed memfd holding the program, or None
    bwrap --seccomp FD ...           # (pass_fds=(fd,)); close it here once bwrap has started

A user namespace is where an unprivileged process regains every capability (over what it
creates), and the kernel's most reached-for attack surface: a sandbox made as root (no user
namespace of its own, `harness.boot.sandbox._AS_ROOT`) or by an older bwrap cannot forbid one
with --disable-userns. This program, a classic BPF array of `struct sock_filter`, answers EPERM
to unshare(2) and clone(2) asking for CLONE_NEWUSER, and ENOSYS to clone3(2), whose flags lie
in memory a filter cannot read (libc then falls back to clone, as Flatpak's filter relies on).
Everything else is allowed. The native architecture and its 32-bit compatibility one (i386 and
x32 on x86_64, arm on aarch64) are covered; on any other machine there is no filter (None).
"""

from __future__ import annotations

import contextlib
import os
import platform
import struct
import sys

_LD_ABS = 0x20  # BPF_LD | BPF_W | BPF_ABS
_JEQ = 0x15  # BPF_JMP | BPF_JEQ | BPF_K
_JSET = 0x45  # BPF_JMP | BPF_JSET | BPF_K
_RET = 0x06  # BPF_RET | BPF_K
_ALLOW = 0x7FFF0000  # SECCOMP_RET_ALLOW
_ERRNO = 0x00050000  # SECCOMP_RET_ERRNO | errno
_EPERM, _ENOSYS = 1, 38
_CLONE_NEWUSER = 0x10000000
_X32 = 0x40000000  # __X32_SYSCALL_BIT
# struct seccomp_data: nr at 0, arch at 4, args[0] at 16 (its low half, little-endian)
_NR, _ARCH, _ARG0 = 0, 4, 16

_FLAGS, _REFUSE = "flags", "refuse"  # check arg0 for CLONE_NEWUSER; ENOSYS outright
# machine -> [(AUDIT_ARCH_*, {syscall number: what to do})]
_CALLS: dict[str, list[tuple[int, dict[int, str]]]] = {
    "x86_64": [
        (0xC000003E, {272: _FLAGS, 56: _FLAGS, 435: _REFUSE,  # unshare, clone, clone3
                      _X32 | 272: _FLAGS, _X32 | 56: _FLAGS, _X32 | 435: _REFUSE}),
        (0x40000003, {310: _FLAGS, 120: _FLAGS, 435: _REFUSE}),  # i386
    ],
    "aarch64": [
        (0xC00000B7, {97: _FLAGS, 220: _FLAGS, 435: _REFUSE}),
        (0x40000028, {337: _FLAGS, 120: _FLAGS, 435: _REFUSE}),  # arm (32-bit)
    ],
}  # fmt: skip


def program(machine: str | None = None) -> bytes | None:
    """The filter for `machine` (default: this one's), or None where it is not known."""
    arches = _CALLS.get(machine or platform.machine())
    if arches is None or sys.byteorder != "little":
        return None
    # Instructions as (code, true target, false target, k), targets as labels resolved below.
    code: list[tuple[int, str | None, str | None, int]] = [(_LD_ABS, None, None, _ARCH)]
    code += [(_JEQ, f"arch{i}", None, audit) for i, (audit, _) in enumerate(arches)]
    code.append((_RET, None, None, _ALLOW))
    labels: dict[str, int] = {}
    for i, (_, calls) in enumerate(arches):
        labels[f"arch{i}"] = len(code)
        code.append((_LD_ABS, None, None, _NR))
        for number, what in calls.items():
            code.append((_JEQ, "flags" if what == _FLAGS else "enosys", None, number))
        code.append((_RET, None, None, _ALLOW))
    labels["flags"] = len(code)
    code.append((_LD_ABS, None, None, _ARG0))
    code.append((_JSET, "eperm", "allow", _CLONE_NEWUSER))
    for name, value in (("allow", _ALLOW), ("eperm", _ERRNO | _EPERM),
                        ("enosys", _ERRNO | _ENOSYS)):  # fmt: skip
        labels[name] = len(code)
        code.append((_RET, None, None, value))
    out = b""
    for at, (op, true, false, k) in enumerate(code):
        jt = 0 if true is None else labels[true] - at - 1
        jf = 0 if false is None else labels[false] - at - 1
        out += struct.pack("=HBBI", op, jt, jf, k)
    return out


def no_user_namespaces() -> int | None:
    """A file descriptor (inheritable, at offset 0) holding `program()`, for bwrap's
    --seccomp; None where there is no filter for this machine or no memfd."""
    filtered = program()
    if filtered is None:
        return None
    try:
        fd = os.memfd_create("harness-seccomp", os.MFD_CLOEXEC)
    except (AttributeError, OSError):
        return None
    try:
        os.write(fd, filtered)
        os.lseek(fd, 0, os.SEEK_SET)
    except OSError:
        with contextlib.suppress(OSError):
            os.close(fd)
        return None
    return fd
