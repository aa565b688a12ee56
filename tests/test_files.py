"""The embedded database, the generated secret key and the shared Alertmanager's files are
created readable by their owner only (mode 0600), in directories of mode 0700, by a real
`tenantplane` process with a permissive umask (022, 000)."""

from __future__ import annotations

import json
import os
import stat
import subprocess
from pathlib import Path

import httpx

from tests.contract.server import TENANTPLANE, serving
from tests.fakes.alertmanager_reload import running_refusing_alertmanager


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


def test_everything_a_server_creates_is_private_under_a_permissive_umask(
    tmp_path: Path,
) -> None:
    """With umask 000, a server using the shared Alertmanager creates its data directory
    (and the missing parents), the Alertmanager directory and its templates directory 0700,
    and every file in them (database, lock files, secret key, configuration, templates)
    0600 (issue 35, finding 11: they were 0755 and 0644)."""
    data_dir = tmp_path / "missing" / "parents" / "data"
    env = {name: value for name, value in os.environ.items() if not name.startswith("TENANTPLANE_")}
    with running_refusing_alertmanager(refusals=0) as alertmanager:
        env.update(
            TENANTPLANE_DATA_DIR=str(data_dir),
            TENANTPLANE_ALERTING_BACKEND="alertmanager",
            TENANTPLANE_ALERTMANAGER_URL=alertmanager.url,
            TENANTPLANE_RATE_LIMIT="1000000/minute",
        )
        with serving(env, tmp_path / "server.log", umask=0o000) as base_url:
            created = subprocess.run(
                [TENANTPLANE, "tenant", "create", "acme", "--json"],
                env=env,
                capture_output=True,
                check=False,
                umask=0o000,
            )
            assert created.returncode == 0, created.stderr.decode()
            key = json.loads(created.stdout)["apiKey"]["key"]
            written = httpx.put(
                f"{base_url}/api/v1/tenants/acme/alerting/templates/acme.tmpl",
                json={"contents": '{{ define "acme.title" }}x{{ end }}'},
                headers={"Authorization": f"Bearer {key}"},
                timeout=30,
            )
            assert written.status_code == 201, written.text
        assert alertmanager.reloads >= 1

    directories = [tmp_path / "missing", tmp_path / "missing" / "parents", data_dir]
    alerting = data_dir / "alertmanager"
    directories += [alerting, alerting / "templates"]
    files = [data_dir / "tenantplane.db", data_dir / "tenantplane.db.migrate.lock"]
    files += [data_dir / "secret.key", alerting / "alertmanager.yml"]
    files += [alerting / ".alertmanager.yml.lock", *(alerting / "templates").iterdir()]
    assert len(files) == 6
    modes = {str(path.relative_to(tmp_path)): oct(mode(path)) for path in directories + files}
    expected = {str(path.relative_to(tmp_path)): oct(0o700) for path in directories}
    expected |= {str(path.relative_to(tmp_path)): oct(0o600) for path in files}
    assert modes == expected
    # Nothing else was left beside them with another mode.
    for path in data_dir.rglob("*"):
        assert mode(path) in (0o600, 0o700), path
