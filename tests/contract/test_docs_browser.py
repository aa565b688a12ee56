"""/docs (Swagger UI) and /redoc render every operation in a real browser, offline.

Headless Chromium loads the pages from a real server process; the rendered DOM must hold
each operation of the served document, and the pages may load assets only from the
server itself (the service runs where the internet may be unreachable).
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.contract.server import Served, served

CHROMIUM = "/usr/bin/chromium"
BROWSER_TIMEOUT_SECONDS = 60
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
# A blank 1280x2000 page compresses to a few kilobytes; a rendered operation list is far larger.
MIN_SCREENSHOT_BYTES = 50_000
ASSET = re.compile(r"""<(?:script|link|img)\b[^>]*?\b(?:src|href)\s*=\s*["']([^"']+)["']""")


def chromium() -> str:
    found = CHROMIUM if Path(CHROMIUM).exists() else shutil.which("chromium")
    if found is None:
        pytest.fail("chromium is not installed: apt-get install chromium")
    return found


def browse(server: Served, page: str, tmp_path: Path, *action: str) -> str:
    """Run headless Chromium on ``page`` until its scripts have settled; returns stdout."""
    result = subprocess.run(
        [
            chromium(),
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            f"--user-data-dir={tmp_path / 'chromium-profile'}",
            "--virtual-time-budget=10000",
            "--window-size=1280,2000",
            *action,
            f"{server.base_url}{page}",
        ],
        capture_output=True,
        text=True,
        timeout=BROWSER_TIMEOUT_SECONDS,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout


def operations(document: dict[str, Any]) -> list[tuple[str, str]]:
    """(first tag, operationId) of every operation in the document."""
    return [
        (operation["tags"][0], operation["operationId"])
        for item in document["paths"].values()
        for operation in item.values()
    ]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """One server for the module: the pages only read the document."""
    with served(tmp_path_factory.mktemp("docs-server")) as running:
        yield running


@pytest.mark.slow
def test_docs_pages_reference_only_same_origin_assets(server: Served) -> None:
    for page in ("/docs", "/redoc"):
        response = httpx.get(f"{server.base_url}{page}")
        assert response.status_code == 200
        assets = ASSET.findall(response.text)
        assert assets, f"{page} loads no assets: {response.text}"
        external = [asset for asset in assets if not asset.startswith("/")]
        assert external == [], f"{page} loads assets from elsewhere: {external}"
        for asset in assets:
            assert httpx.get(f"{server.base_url}{asset}").status_code == 200, asset


@pytest.mark.slow
def test_swagger_ui_renders_every_operation(server: Served, tmp_path: Path) -> None:
    document = httpx.get(f"{server.base_url}/openapi.json").json()
    dom = browse(server, "/docs", tmp_path, "--dump-dom")
    assert 'class="opblock opblock-get' in dom
    missing = [
        operation_id
        for tag, operation_id in operations(document)
        if f'id="operations-{tag}-{operation_id}"' not in dom
    ]
    assert missing == [], f"Swagger UI did not render: {missing}"
    assert "List the tenant's clusters" in dom

    screenshot = tmp_path / "docs.png"
    browse(server, "/docs", tmp_path, f"--screenshot={screenshot}")
    image = screenshot.read_bytes()
    assert image.startswith(PNG_SIGNATURE)
    assert len(image) > MIN_SCREENSHOT_BYTES, f"the screenshot is nearly empty: {len(image)} B"


@pytest.mark.slow
def test_redoc_renders_every_operation(server: Served, tmp_path: Path) -> None:
    document = httpx.get(f"{server.base_url}/openapi.json").json()
    dom = browse(server, "/redoc", tmp_path, "--dump-dom")
    missing = [
        operation_id
        for _, operation_id in operations(document)
        if f'id="operation/{operation_id}"' not in dom
    ]
    assert missing == [], f"ReDoc did not render: {missing}"
    assert "List the tenant's clusters" in dom
