"""Routes: the root route's children in order (which receiver gets which alerts), add,
edit, delete and move, and the root route's own settings.

A child route is addressed by its index, which means something only in the version of the
configuration it was read from: every write here sends the wrapper ETag the page was
rendered with (If-Match), so a concurrent change is a 412, shown as "changed meanwhile",
rather than a change to another route than the one the user saw.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fastapi.responses import HTMLResponse, Response

from tenantplane.console.pages.alerting_editing import (
    PAGES_PREFIX,
    Editor,
    Refusal,
    api_path,
    if_match,
    page_path,
    page_url,
    parse_mapping,
    refusal,
    render_editor,
    typed_text,
    unavailable,
    yaml_text,
)
from tenantplane.console.web import AdminPageDep, Page, PageDep
from tenantplane.http.routers import PrefixedRouter

router = PrefixedRouter(prefix=PAGES_PREFIX, include_in_schema=False)

ROUTE_HINT = (
    'Alertmanager\'s route fields: receiver, matchers (e.g. severity="critical"), group_by, '
    "group_wait, group_interval, repeat_interval, continue, mute_time_intervals, "
    "active_time_intervals, nested routes."
)


@dataclass(frozen=True)
class RouteRow:
    index: int
    href: str
    receiver: str  # "" inherits the root route's
    matchers: list[str]
    details: list[str]


def matchers_of(route: Any) -> list[str]:
    """Every condition of a route as Alertmanager's matcher syntax, the old `match` and
    `match_re` maps included."""
    found = [str(matcher) for matcher in route.get("matchers", [])]
    found += [f'{name}="{value}"' for name, value in route.get("match", {}).items()]
    found += [f'{name}=~"{value}"' for name, value in route.get("match_re", {}).items()]
    return found


def details_of(route: Any) -> list[str]:
    details = []
    if route.get("group_by"):
        details.append("grouped by " + ", ".join(route["group_by"]))
    for setting in ("group_wait", "group_interval", "repeat_interval"):
        if route.get(setting):
            details.append(f"{setting.replace('_', ' ')} {route[setting]}")
    if route.get("mute_time_intervals"):
        details.append("muted during " + ", ".join(route["mute_time_intervals"]))
    if route.get("active_time_intervals"):
        details.append("active only during " + ", ".join(route["active_time_intervals"]))
    if route.get("routes"):
        details.append(f"{len(route['routes'])} nested routes")
    if route.get("continue"):
        details.append("continues to the next routes")
    return details


async def _root(page: Page) -> tuple[Any, str, Response | None]:
    """The root route (children included) and the wrapper ETag, or the page saying why not."""
    answer = await page.api.get(api_path(page, "route"))
    if not answer.ok:
        return None, "", unavailable(page, answer, "Routes")
    return answer.body, answer.headers.get("etag", ""), None


async def _listing(page: Page, refused: Refusal = Refusal({}), status: int = 200) -> Response:
    root, etag, failed = await _root(page)
    if failed is not None:
        return failed
    children = root.get("routes", [])
    rows = [
        RouteRow(
            index,
            page_url(page, "routes", str(index)),
            str(route.get("receiver", "")),
            matchers_of(route),
            details_of(route),
        )
        for index, route in enumerate(children)
    ]
    return page.render(
        "alerting/routes.html",
        status=status,
        root=root,
        root_details=details_of({key: value for key, value in root.items() if key != "routes"}),
        rows=rows,
        etag=etag,
        refused=refused,
    )


@router.get("/routes")
async def list_routes(page: PageDep) -> Response:
    return await _listing(page)


async def _receiver_names(page: Page) -> list[str]:
    answer = await page.api.get(api_path(page, "receivers"))
    return [str(item["name"]) for item in answer.body.get("items", [])] if answer.ok else []


async def _new_form(page: Page, text: str | None, refused: Refusal, status: int) -> HTMLResponse:
    names = await _receiver_names(page)
    if text is None:
        receiver = next((name for name in names if name != "default"), names[0] if names else "")
        example = {"receiver": receiver, "matchers": ['severity="critical"']}
        text = yaml_text({**example, "group_by": ["alertname", "cluster"]})
    editor = Editor(
        heading="New route",
        back=page_url(page, "routes"),
        back_label="Routes",
        action=page_url(page, "routes"),
        reload=page_url(page, "routes", "-", "new"),
        text=text,
        text_label="Route (YAML or JSON)",
        text_hint=ROUTE_HINT,
        refusal=refused,
        submit="Add route",
        notes=(
            "Added after the existing routes.",
            "Receivers: " + (", ".join(names) or "none yet") + ".",
        ),
    )
    return render_editor(page, editor, status)


@router.get("/routes/-/new")
async def new_route(page: AdminPageDep) -> HTMLResponse:
    return await _new_form(page, None, Refusal({}), 200)


@router.post("/routes")
async def append_route(page: PageDep) -> Response:
    text = typed_text(page)
    parsed = parse_mapping(text)
    if parsed.problem is not None:
        return await _new_form(page, text, Refusal({}, parsed.problem), 400)
    # Appending is a PUT at index == count: the count read now, with its ETag, so that a
    # route appended meanwhile is not replaced (412 instead).
    listed = await page.api.get(api_path(page, "routes"))
    if not listed.ok:
        return await _new_form(page, text, refusal(listed), listed.status)
    count = len(listed.body.get("items", []))
    etag = listed.headers.get("etag", "")
    answer = await page.api.call(
        "PUT", api_path(page, "routes", str(count)), json=parsed.body, headers={"If-Match": etag}
    )
    if not answer.ok:
        return await _new_form(page, text, refusal(answer), answer.status)
    return page.redirect(page_path("routes"), f"Route {count + 1} added.")


def _route_editor(page: Page, index: int, text: str, etag: str, refused: Refusal) -> Editor:
    return Editor(
        heading=f"Route {index + 1}",
        back=page_url(page, "routes"),
        back_label="Routes",
        action=page_url(page, "routes", str(index)),
        reload=page_url(page, "routes", str(index)),
        text=text,
        text_label="Route (YAML or JSON)",
        text_hint=ROUTE_HINT,
        etag=etag,
        refusal=refused,
        delete=page_url(page, "routes", str(index), "delete"),
    )


def _no_such_route(page: Page) -> HTMLResponse:
    # Not the API's 404 message: it counts from 0 (the route's id), the pages from 1.
    return page.message(
        "Route", "There is no such route (any more): see the current list.", 404, "alerting/routes"
    )


@router.get("/routes/{index:int}")
async def show_route(page: PageDep, index: int) -> Response:
    answer = await page.api.get(api_path(page, "routes", str(index)))
    if answer.status == 404:
        return _no_such_route(page)
    if not answer.ok:
        return unavailable(page, answer, f"Route {index + 1}")
    etag = answer.headers.get("etag", "")
    return render_editor(
        page, _route_editor(page, index, yaml_text(answer.body), etag, Refusal({}))
    )


@router.post("/routes/{index:int}")
async def save_route(page: PageDep, index: int) -> Response:
    text, etag = typed_text(page), str(page.form.get("etag", ""))
    parsed = parse_mapping(text)
    if parsed.problem is not None:
        refused = Refusal({}, parsed.problem)
        return render_editor(page, _route_editor(page, index, text, etag, refused), 400)
    path = api_path(page, "routes", str(index))
    answer = await page.api.call("PUT", path, json=parsed.body, headers=if_match(page))
    if not answer.ok:
        editor = _route_editor(page, index, text, etag, refusal(answer))
        return render_editor(page, editor, answer.status)
    return page.redirect(page_path("routes"), f"Route {index + 1} saved.")


async def _deletion(page: Page, index: int, refused: Refusal, status: int) -> Response:
    answer = await page.api.get(api_path(page, "routes", str(index)))
    if answer.status == 404:
        return _no_such_route(page)
    if not answer.ok:
        return unavailable(page, answer, f"Delete route {index + 1}")
    return page.render(
        "alerting/delete.html",
        status=status,
        heading=f"Delete route {index + 1}",
        question=f"Delete route {index + 1}? The routes after it move up one place.",
        text=yaml_text(answer.body),
        etag=answer.headers.get("etag", ""),
        refused=refused,
        action=page_url(page, "routes", str(index), "delete"),
        back=page_url(page, "routes", str(index)),
        submit="Delete route",
    )


@router.get("/routes/{index:int}/delete")
async def confirm_route_deletion(page: PageDep, index: int) -> Response:
    return await _deletion(page, index, Refusal({}), 200)


@router.post("/routes/{index:int}/delete")
async def delete_route(page: PageDep, index: int) -> Response:
    path = api_path(page, "routes", str(index))
    answer = await page.api.call("DELETE", path, headers=if_match(page))
    if not answer.ok:
        return await _deletion(page, index, refusal(answer), answer.status)
    return page.redirect(page_path("routes"), f"Route {index + 1} deleted.")


@router.post("/routes/{index:int}/move")
async def move_route(page: PageDep, index: int) -> Response:
    """Swap a child route with its neighbour: the root route read with its children, and
    written back whole with them swapped (one write, so the order is never half changed),
    under the ETag the list was rendered with."""
    root, etag, failed = await _root(page)
    if failed is not None:
        return failed
    children = list(root.get("routes", []))
    other = index - 1 if page.form.get("direction") == "up" else index + 1
    if not (0 <= index < len(children) and 0 <= other < len(children)):
        return await _listing(page, Refusal({"": f"route {index + 1} cannot move there"}), 400)
    children[index], children[other] = children[other], children[index]
    headers = if_match(page) or {"If-Match": etag}
    answer = await page.api.call(
        "PUT", api_path(page, "route"), json={**root, "routes": children}, headers=headers
    )
    if not answer.ok:
        return await _listing(page, refusal(answer), answer.status)
    return page.redirect(page_path("routes"), f"Route {index + 1} is now route {other + 1}.")
