"""The console's routes, its static files and the answers to its two control-flow signals."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from fastapi.staticfiles import StaticFiles

from tenantplane.console.api import SignInRequired
from tenantplane.console.pages import PAGE_ROUTERS
from tenantplane.console.sign_in import router as sign_in_router
from tenantplane.console.web import PAGE_HEADERS, AdminRequired, CsrfRefused, render
from tenantplane.http.route_index import include

STATIC = Path(__file__).parent / "static"
CONSOLE_STATIC_PREFIX = "/console/static/"


class ConsoleAssets(StaticFiles):
    """The console's CSS and script: kept by browsers but revalidated (a 304 by ETag) on each
    use, so that a new release is picked up at once."""

    def file_response(self, *args: Any, **kwargs: Any) -> Response:
        response = super().file_response(*args, **kwargs)
        response.headers["Cache-Control"] = "no-cache"
        return response


async def _sign_in_required(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, SignInRequired)
    # A live region's poll gets a plain 401 (the page reloads into the sign-in page).
    if request.headers.get("x-console-fragment"):
        return Response(status_code=401, headers=PAGE_HEADERS)
    query = {key: value for key, value in (("tenant", exc.tenant), ("error", exc.message)) if value}
    target = "/console/sign-in" + (f"?{urlencode(query)}" if query else "")
    return RedirectResponse(target, status_code=303, headers=PAGE_HEADERS)


async def _admin_required(_: Request, exc: Exception) -> HTMLResponse:
    assert isinstance(exc, AdminRequired)
    return exc.response


async def _csrf_refused(request: Request, _: Exception) -> HTMLResponse:
    return render(
        request,
        "message.html",
        status=403,
        heading="Refused",
        message="This form is missing its security token (CSRF). Reload the page and try again.",
        viewer=None,
        back=None,
    )


def install_console(app: FastAPI) -> None:
    include(app, sign_in_router)
    for router in PAGE_ROUTERS:
        include(app, router)
    app.mount(
        CONSOLE_STATIC_PREFIX.rstrip("/"), ConsoleAssets(directory=STATIC), name="console-static"
    )
    app.add_exception_handler(SignInRequired, _sign_in_required)
    app.add_exception_handler(CsrfRefused, _csrf_refused)
    app.add_exception_handler(AdminRequired, _admin_required)
