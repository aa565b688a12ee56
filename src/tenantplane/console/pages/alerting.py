"""Alerting: the overview of the tenant's Alertmanager configuration and the two parts read
and replaced whole (the global section, the root route); receivers, templates and time
intervals (alerting_collections.py) and child routes (alerting_routes.py) have routers of
their own under the same prefix.

Every part is edited as the document the API takes (alerting_editing.py)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from fastapi.responses import Response

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
from tenantplane.console.web import Page, PageDep
from tenantplane.http.routers import PrefixedRouter

router = PrefixedRouter(prefix=PAGES_PREFIX, include_in_schema=False)


@router.get("")
async def overview(page: PageDep) -> Response:
    answer = await page.api.get(api_path(page, "config"))
    if not answer.ok:
        return unavailable(page, answer, "Alerting")
    config = answer.body
    parts = [
        ("Receivers", "receivers", len(config["receivers"]), "where notifications go"),
        (
            "Routes",
            "routes",
            len(config["route"].get("routes", [])),
            "which alerts go to which receiver",
        ),
        ("Templates", "templates", len(config["templates"]), "how notifications are worded"),
        (
            "Time intervals",
            "time-intervals",
            len(config["time_intervals"]),
            "when routes are muted or active",
        ),
        ("Global settings", "global", len(config["global"]), "defaults of every receiver"),
    ]
    return page.render(
        "alerting/overview.html",
        parts=[
            {"label": label, "href": page_url(page, slug), "count": count, "what": what}
            for label, slug, count, what in parts
        ],
        root_receiver=config["route"].get("receiver", ""),
        root_href=page_url(page, "route"),
        version=answer.headers.get("etag", "").strip('"'),
    )


@dataclass(frozen=True)
class Section:
    """A part read and replaced whole: the global section, the root route."""

    segment: str  # in the API's paths and the console's
    heading: str
    text_label: str
    text_hint: str
    back: str  # the console page above it
    back_label: str
    text_of: Callable[[Any], str]  # the part as the API answers it → the textarea's text


def _without_children(route: Any) -> str:
    # Its children have their own pages; a root route PUT without `routes` keeps them.
    return yaml_text({key: value for key, value in route.items() if key != "routes"})


SECTIONS = (
    Section(
        segment="global",
        heading="Global settings",
        text_label="Global section (YAML or JSON)",
        text_hint="Defaults every receiver inherits: resolve_timeout, smtp_* for email, "
        "slack_api_url, pagerduty_url, opsgenie_api_key, http_config, … The section is "
        "replaced whole.",
        back="",
        back_label="Alerting",
        # Nothing set yet reads better as an empty document than as "{}".
        text_of=lambda glob: yaml_text(glob) if glob else "",
    ),
    Section(
        segment="route",
        heading="Root route",
        text_label="Root route (YAML or JSON)",
        text_hint="The route of every alert that no child route matches: receiver, group_by, "
        "group_wait, group_interval, repeat_interval. Its child routes are kept unless you "
        "add routes here, which then replace them.",
        back="routes",
        back_label="Routes",
        text_of=_without_children,
    ),
)


def add_section_pages(section: Section) -> None:
    def editor(page: Page, text: str, etag: str, refused: Refusal) -> Editor:
        return Editor(
            heading=section.heading,
            back=page_url(page, section.back) if section.back else page_url(page),
            back_label=section.back_label,
            action=page_url(page, section.segment),
            reload=page_url(page, section.segment),
            text=text,
            text_label=section.text_label,
            text_hint=section.text_hint,
            etag=etag,
            refusal=refused,
        )

    async def show(page: PageDep) -> Response:
        answer = await page.api.get(api_path(page, section.segment))
        if not answer.ok:
            return unavailable(page, answer, section.heading)
        etag = answer.headers.get("etag", "")
        return render_editor(page, editor(page, section.text_of(answer.body), etag, Refusal({})))

    async def save(page: PageDep) -> Response:
        text, etag = typed_text(page), str(page.form.get("etag", ""))
        parsed = parse_mapping(text)
        if parsed.problem is not None:
            return render_editor(page, editor(page, text, etag, Refusal({}, parsed.problem)), 400)
        answer = await page.api.call(
            "PUT", api_path(page, section.segment), json=parsed.body, headers=if_match(page)
        )
        if not answer.ok:
            return render_editor(page, editor(page, text, etag, refusal(answer)), answer.status)
        return page.redirect(page_path(section.segment), f"{section.heading} saved.")

    router.add_api_route(f"/{section.segment}", show, methods=["GET"])
    router.add_api_route(f"/{section.segment}", save, methods=["POST"])


for _section in SECTIONS:
    add_section_pages(_section)
