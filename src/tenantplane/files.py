"""Files that hold credentials or tenants' data, readable by their owner only (mode 0600).

The embedded database, the generated secret key, the rendered Alertmanager configuration and
templates and the lock files beside them are created with mode 0600 from the start (never
written first and restricted afterwards), whatever the process's umask; every directory this
module creates, parents included, is 0700. Files and directories that existed before keep
their mode.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

PRIVATE_FILE_MODE = 0o600
PRIVATE_DIR_MODE = 0o700


def private_directory(path: Path) -> None:
    """Create ``path`` and its missing parents, each 0700 whatever the umask (pathlib's
    ``mkdir(parents=True)`` gives the parents the umask's default, 0755 under 022)."""
    if path.is_dir():
        return
    private_directory(path.parent)
    try:
        # The umask can only take permissions away: the directory is never wider than 0700,
        # and set to exactly 0700 while still empty.
        path.mkdir(mode=PRIVATE_DIR_MODE)
    except FileExistsError:
        if path.is_dir():
            return  # made by another process meanwhile: its mode is its creator's
        raise
    os.chmod(path, PRIVATE_DIR_MODE)


def _create_exclusive(path: Path, flags: int) -> int:
    """A descriptor of ``path``, created now with mode 0600 (FileExistsError if it exists)."""
    descriptor = os.open(path, flags | os.O_CREAT | os.O_EXCL, PRIVATE_FILE_MODE)
    # The umask can only have taken permissions away; nothing is written yet.
    os.fchmod(descriptor, PRIVATE_FILE_MODE)
    return descriptor


def create_private(path: Path, contents: bytes = b"") -> bool:
    """Create ``path`` with ``contents`` and mode 0600 unless it exists (False then). Two
    processes racing here cannot overwrite each other: the creation is exclusive."""
    private_directory(path.parent)
    try:
        descriptor = _create_exclusive(path, os.O_WRONLY)
    except FileExistsError:
        return False
    with os.fdopen(descriptor, "wb") as handle:
        handle.write(contents)
    return True


def write_private(path: Path, contents: str) -> None:
    """Replace ``path`` atomically with ``contents`` (UTF-8), mode 0600."""
    private_directory(path.parent)
    temporary = path.with_name(f".{path.name}.tmp")
    with contextlib.suppress(FileNotFoundError):
        temporary.unlink()  # a leftover of a crash may have other permissions
    descriptor = _create_exclusive(temporary, os.O_WRONLY)
    with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
        handle.write(contents)
    os.replace(temporary, path)


@contextmanager
def private_lock_file(path: Path) -> Iterator[IO[bytes]]:
    """``path`` opened for appending (to hold an ``flock`` on), created 0600 when missing."""
    private_directory(path.parent)
    try:
        descriptor = _create_exclusive(path, os.O_WRONLY | os.O_APPEND)
    except FileExistsError:
        descriptor = os.open(path, os.O_WRONLY | os.O_APPEND)
    with os.fdopen(descriptor, "ab") as handle:
        yield handle
