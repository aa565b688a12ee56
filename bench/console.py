"""The console's first load: the clusters page of a signed-in member in headless Chromium
(Debian's, driven by Playwright), against a real `tenantplane serve` on loopback.

    uv run python -m bench.console [--loads 20] [--clusters 20] [--backend sqlite|postgresql]

A first load is a fresh browser context (no cache, no cookies but the session's): every
byte of the page and its assets counts. Printed per load set: bytes transferred (the
encoded, i.e. compressed when compressed, sizes Chromium reports for every response),
bytes of HTML/CSS/JS, and the time to interactive (the Navigation Timing entry's
domInteractive, and domContentLoadedEventEnd once the deferred script has run), median
and worst. Targets (docs/console.md): under 250 KB transferred and interactive under 1 s.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from playwright.sync_api import Page, sync_playwright

from bench.server import Server, cli

CHROMIUM = "/usr/bin/chromium"
# A throwaway server's key (its data directory is deleted after the run).
SECRET = "bench-console-secret-key-0123456789abcdef"  # noqa: S105


@dataclass(frozen=True)
class Load:
    transferred: int
    interactive_ms: float
    content_loaded_ms: float


def environment(data_dir: Path, database_url: str | None) -> dict[str, str]:
    env = {
        **os.environ,
        "TENANTPLANE_DATA_DIR": str(data_dir),
        "TENANTPLANE_SECRET_KEY": SECRET,
        "TENANTPLANE_SIMULATOR_STEP_SECONDS": "0.05",
    }
    if database_url:
        env["TENANTPLANE_DATABASE_URL"] = database_url
    return env


def seed(env: dict[str, str], server: Server, clusters: int) -> None:
    """A tenant with ``clusters`` clusters, created through the API as a client would."""
    created = json.loads(
        cli(
            env,
            "tenant",
            "create",
            "bench",
            "--plan",
            "enterprise",
            "--admin-email",
            "admin@bench.example.com",
            "--json",
        )
    )
    key = created["apiKey"]["key"]
    with httpx.Client(
        base_url=f"{server.base}/api/v1", headers={"Authorization": f"Bearer {key}"}
    ) as api:
        for index in range(clusters):
            api.post("/tenants/bench/clusters", json={"name": f"c{index:03d}"}).raise_for_status()


def first_load(page: Page, url: str) -> Load:
    transferred: list[int] = []
    client = page.context.new_cdp_session(page)
    client.send("Network.enable")
    client.on(
        "Network.loadingFinished", lambda event: transferred.append(int(event["encodedDataLength"]))
    )
    page.goto(url, wait_until="load")
    timing: dict[str, Any] = page.evaluate(
        "(() => { const n = performance.getEntriesByType('navigation')[0];"
        " return {interactive: n.domInteractive, loaded: n.domContentLoadedEventEnd}; })()"
    )
    client.detach()
    return Load(sum(transferred), float(timing["interactive"]), float(timing["loaded"]))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--loads", type=int, default=20)
    parser.add_argument("--clusters", type=int, default=20)
    parser.add_argument("--database-url", default=None, help="PostgreSQL URL (default: SQLite)")
    arguments = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        data_dir = Path(scratch)
        env = environment(data_dir, arguments.database_url)
        cli(env, "migrate")
        server = Server(env, data_dir / "server.log")
        try:
            server.wait_ready()
            seed(env, server, arguments.clusters)
            loads = measure(env, server, arguments.loads)
        finally:
            server.stop()
    report(loads, arguments.clusters)


def measure(env: dict[str, str], server: Server, count: int) -> list[Load]:
    loads: list[Load] = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            for _ in range(count + 1):  # the first warms the server's templates: not counted
                link = cli(
                    env, "console-login", "bench", "admin@bench.example.com", "--url", server.base
                ).strip()
                context = browser.new_context(viewport={"width": 1280, "height": 800})
                page = context.new_page()
                page.goto(link)
                page.wait_for_url("**/clusters")
                # Signed in: a new context with the session's cookie only is a first visit.
                cookies = context.cookies()
                context.close()
                fresh = browser.new_context(viewport={"width": 1280, "height": 800})
                fresh.add_cookies(cookies)  # type: ignore[arg-type]
                loads.append(
                    first_load(fresh.new_page(), f"{server.base}/console/t/bench/clusters")
                )
                fresh.close()
        finally:
            browser.close()
    return loads[1:]


def _line(name: str, values: list[float], unit: str, scale: float, target: str) -> str:
    median, worst = statistics.median(values) / scale, max(values) / scale
    return f"  {name}: median {median:.1f} {unit}, max {worst:.1f} {unit}{target}"


def report(loads: list[Load], clusters: int) -> None:
    print(f"console first load, clusters page with {clusters} clusters, {len(loads)} loads")
    transferred = [float(load.transferred) for load in loads]
    print(_line("transferred", transferred, "KB", 1024, " (target < 250 KB)"))
    interactive = [load.interactive_ms for load in loads]
    print(_line("domInteractive", interactive, "ms", 1, " (target < 1000 ms)"))
    loaded = [load.content_loaded_ms for load in loads]
    print(_line("DOMContentLoaded end", loaded, "ms", 1, ""))


if __name__ == "__main__":
    main()
