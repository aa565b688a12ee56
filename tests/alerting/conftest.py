from __future__ import annotations

import shutil
import socket
import subprocess
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from tenantplane.db.engine import Database
from tenantplane.providers.alerting.alertmanager import TEMPLATE_DIR
from tenantplane.providers.alerting.render import dump_yaml, shared_config
from tests.alerting.amtool import amtool_path
from tests.backends import INSTALL_TOOLS
from tests.conftest import make_settings
from tests.fakes.mimir import FakeMimir, running_fake_mimir
from tests.http_client import api_client, running_app


@pytest.fixture
def fake_mimir() -> Iterator[FakeMimir]:
    with running_fake_mimir(amtool_path()) as fake:
        yield fake


@pytest.fixture
async def mimir_client(
    database: Database, database_url: str, tmp_path: Path, fake_mimir: FakeMimir
) -> AsyncIterator[httpx.AsyncClient]:
    """The API with ALERTING_BACKEND=mimir pointed at the loopback fake."""
    settings = make_settings(
        database_url, tmp_path, alerting_backend="mimir", mimir_url=fake_mimir.url
    )
    async with running_app(settings) as app, api_client(app) as client:
        yield client


@dataclass(frozen=True)
class SharedAlertmanager:
    url: str
    config_file: Path


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def alertmanager_binary() -> str:
    found = shutil.which("prometheus-alertmanager") or shutil.which("alertmanager")
    if found is None:
        pytest.fail(
            f"prometheus-alertmanager (Debian package) is not installed; run: {INSTALL_TOOLS}",
            pytrace=False,
        )
    return found


@pytest.fixture(scope="module")
def shared_alertmanager(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SharedAlertmanager]:
    """The real Debian Alertmanager on a loopback port, loading the file the backend writes."""
    directory = tmp_path_factory.mktemp("alertmanager")
    config_file = directory / "alertmanager.yml"
    config_file.write_text(dump_yaml(shared_config({}, TEMPLATE_DIR)), encoding="utf-8")
    port = _free_port()
    log = (directory / "alertmanager.log").open("w")
    process = subprocess.Popen(
        [
            alertmanager_binary(),
            f"--config.file={config_file}",
            f"--storage.path={directory / 'data'}",
            f"--web.listen-address=127.0.0.1:{port}",
            "--cluster.listen-address=",
            "--log.level=warn",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                if httpx.get(f"{url}/-/ready", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError((directory / "alertmanager.log").read_text())
            time.sleep(0.1)
        yield SharedAlertmanager(url, config_file)
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()


@pytest.fixture
async def shared_client(
    database: Database, database_url: str, tmp_path: Path, shared_alertmanager: SharedAlertmanager
) -> AsyncIterator[httpx.AsyncClient]:
    """The API with ALERTING_BACKEND=alertmanager, writing the real Alertmanager's file
    (receivers firewall as deployed by default)."""
    settings = make_settings(
        database_url,
        tmp_path,
        alerting_backend="alertmanager",
        alertmanager_url=shared_alertmanager.url,
        alertmanager_config_file=shared_alertmanager.config_file,
    )
    async with running_app(settings) as app, api_client(app) as client:
        yield client


@pytest.fixture
async def loopback_shared_client(
    database: Database, database_url: str, tmp_path: Path, shared_alertmanager: SharedAlertmanager
) -> AsyncIterator[httpx.AsyncClient]:
    """The same with private addresses allowed, so that receivers can reach loopback sinks
    (the shared Alertmanager's own address stays blocked)."""
    settings = make_settings(
        database_url,
        tmp_path,
        alerting_backend="alertmanager",
        alertmanager_url=shared_alertmanager.url,
        alertmanager_config_file=shared_alertmanager.config_file,
        alerting_firewall_block_private=False,
    )
    async with running_app(settings) as app, api_client(app) as client:
        yield client
