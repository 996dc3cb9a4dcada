"""Names that become paths on this machine, checked before they touch the disk.

The emulator keeps AWS resources as files: a bucket is a directory under its home, an object key a path
inside it, an image asset's source a directory of the cloud assembly, a Dockerfile a file of the
repository. Each of those names arrives in a request or a template, which anyone who can reach the
emulator writes. `within` is the one way such a name becomes a path: the result stays under the root it
is meant for, whatever the name says (`/etc`, `../../x`, a symlink that points out), or the name is
refused with `UnsafePath` before anything is created, read or deleted.
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath


class UnsafePath(ValueError):
    """A name that would leave the directory it is meant to stay in (the message says which)."""


def within(root: Path, *names: str) -> Path:
    """`root / name / ...`, refused unless every name is relative and the resolved path (symlinks
    followed) is `root` itself or below it."""
    base = root.resolve()
    for name in names:
        if "\0" in name or PurePosixPath(name).is_absolute() or Path(name).is_absolute():
            raise UnsafePath(f"{name!r} is an absolute path; a name here is relative to {root}")
        if ".." in PurePosixPath(name).parts:
            raise UnsafePath(f"{name!r} climbs out of {root} with '..'")
    path = base.joinpath(*names).resolve()
    if path != base and base not in path.parents:
        raise UnsafePath(f"{'/'.join(names)!r} resolves to {path}, outside {root}")
    return path
