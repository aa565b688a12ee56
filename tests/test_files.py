"""The embedded database and the generated secret key are created readable by their owner
only (mode 0600), by a real `tenantplane` process with a permissive umask (022)."""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

from tests.contract.server import TENANTPLANE


def mode(path: Path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def test_database_and_generated_secret_key_are_private(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    env = {name: value for name, value in os.environ.items() if not name.startswith("TENANTPLANE_")}
    env["TENANTPLANE_DATA_DIR"] = str(data_dir)
    for command in (["migrate"], ["tenant", "create", "acme", "--json"]):
        finished = subprocess.run(
            [TENANTPLANE, *command],
            env=env,
            capture_output=True,
            check=False,
            umask=0o022,
        )
        assert finished.returncode == 0, finished.stderr.decode()

    database = data_dir / "tenantplane.db"
    assert mode(database) == 0o600
    assert mode(data_dir / "secret.key") == 0o600
    assert mode(data_dir) == 0o700
    # SQLite gives its write-ahead log and shared-memory files the database's mode.
    for companion in (Path(f"{database}-wal"), Path(f"{database}-shm")):
        if companion.exists():
            assert mode(companion) == 0o600, companion
