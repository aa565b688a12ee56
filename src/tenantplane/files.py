"""Files that hold credentials or tenants' data, readable by their owner only (mode 0600).

The embedded database, the generated secret key and the rendered Alertmanager configuration
are created with mode 0600 from the start (never written first and restricted afterwards),
whatever the process's umask; directories this module creates are 0700.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

PRIVATE_FILE_MODE = 0o600
PRIVATE_DIR_MODE = 0o700


def private_directory(path: Path) -> None:
    """Create ``path`` (and its parents) if missing; the ones created here are 0700."""
    path.mkdir(parents=True, exist_ok=True, mode=PRIVATE_DIR_MODE)


def create_private(path: Path, contents: bytes = b"") -> bool:
    """Create ``path`` with ``contents`` and mode 0600 unless it exists (False then). Two
    processes racing here cannot overwrite each other: the creation is exclusive."""
    private_directory(path.parent)
    try:
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE_FILE_MODE)
    except FileExistsError:
        return False
    with os.fdopen(descriptor, "wb") as handle:
        handle.write(contents)
    return True


def write_private(path: Path, contents: str) -> None:
    """Replace ``path`` atomically with ``contents`` (UTF-8), mode 0600."""
    temporary = path.with_name(f".{path.name}.tmp")
    with contextlib.suppress(FileNotFoundError):
        temporary.unlink()  # a leftover of a crash may have other permissions
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE_FILE_MODE)
    with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
        handle.write(contents)
    os.replace(temporary, path)
