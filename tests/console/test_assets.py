"""The console's static assets are served by the app (no CDN) and revalidated by ETag; its
forms are urlencoded, which the API's paths still refuse."""

from __future__ import annotations

from pathlib import Path

import httpx
from fastapi import FastAPI

from tenantplane.db.engine import Database
from tests.conftest import make_settings
from tests.http_client import BASE_URL, running_app


def browser(app: FastAPI) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=BASE_URL)


async def test_assets_are_served_here_and_revalidated(app: FastAPI) -> None:
    async with browser(app) as http:
        for asset, media in (("console.css", "text/css"), ("console.js", "javascript")):
            served = await http.get(f"/console/static/{asset}")
            assert served.status_code == 200
            assert media in served.headers["content-type"]
            assert served.headers["cache-control"] == "no-cache"
            unchanged = await http.get(
                f"/console/static/{asset}", headers={"If-None-Match": served.headers["etag"]}
            )
            assert unchanged.status_code == 304
        sign_in = await http.get("/console/sign-in")
        assert sign_in.headers["cache-control"] == "no-store"
        for reference in ('href="/console/static/console.css"', 'src="/console/static/console.js"'):
            assert reference in sign_in.text
        assert "<script>" not in sign_in.text  # no inline script anywhere (CSP)


async def test_forms_are_urlencoded_only_under_the_console(app: FastAPI) -> None:
    async with browser(app) as http:
        json_form = await http.post("/console/sign-in/key", json={"tenant": "acme"})
        assert json_form.status_code == 415
        form_to_api = await http.post(
            "/api/v1/tenants/acme/clusters",
            content="name=web",
            headers={"Content-Type": "application/x-www-form-urlencoded"},
        )
        assert form_to_api.status_code == 415


async def test_a_deployment_without_the_console_serves_none_of_it(
    database: Database, database_url: str, tmp_path: Path
) -> None:
    settings = make_settings(database_url, tmp_path, console=False)
    async with running_app(settings) as app, browser(app) as http:
        for path in ("/console/", "/console/sign-in", "/console/static/console.css"):
            assert (await http.get(path)).status_code == 404, path
        assert (await http.get("/healthz")).status_code == 200
