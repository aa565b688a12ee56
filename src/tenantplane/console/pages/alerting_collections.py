"""Receivers, templates and time intervals: the named parts of the alerting configuration.

Each is a list, a create form, an item page (its document, editable by admins) and a
deletion confirmed on a page of its own; what differs between the three is a ``Kind``, and
``add_pages`` makes the same handlers for each (as the API's routes.py does). The create
form lives at ``{kind}/-/new``: a name is one path segment and cannot hold ``/``, so no item
can hide it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from fastapi import APIRouter
from fastapi.responses import HTMLResponse, Response

from tenantplane.console.pages.alerting_editing import (
    PAGES_PREFIX,
    Editor,
    NameInput,
    Parsed,
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


@dataclass(frozen=True)
class Kind:
    segment: str  # in the API's paths and the console's: "time-intervals"
    noun: str  # "time interval"
    heading: str  # "Time intervals"
    intro: str
    key_field: str  # the API's field naming an item, which its errors carry
    key_label: str
    key_hint: str
    summary_heading: str
    summary: Callable[[Any], str]  # a listed item → one line for the list
    text_label: str
    text_hint: str
    example: str  # the create form's text
    text_of: Callable[[Any], str]  # the item as the API answers it → the textarea's text
    body_of: Callable[[str], Parsed]  # the textarea's text → the body the API takes

    def key_of(self, item: Any) -> str:
        return str(item[self.key_field])


def _integrations(receiver: Any) -> str:
    counts = [
        f"{key.removesuffix('_configs')} ({len(value)})" if len(value) > 1 else key[:-8]
        for key, value in receiver.items()
        if key.endswith("_configs") and value
    ]
    return ", ".join(counts) or "no integrations: its alerts are dropped"


_DEFINE = re.compile(r'{{-?\s*define\s+"([^"]+)"')


def _template_summary(item: Any) -> str:
    contents = str(item["contents"])
    lines = contents.count("\n") + (0 if contents.endswith("\n") else 1)
    defined = _DEFINE.findall(contents)
    counted = "1 line" if lines == 1 else f"{lines} lines"
    return counted + (f"; defines {', '.join(defined)}" if defined else "")


def _interval_summary(item: Any) -> str:
    entries = item.get("time_intervals", [])
    parts = []
    for entry in entries:
        times = [f"{t.get('start_time')} to {t.get('end_time')}" for t in entry.get("times", [])]
        described = [*entry.get("weekdays", []), *times, entry.get("location", "")]
        parts.append(" ".join(str(value) for value in described if value) or "always")
    return "; ".join(parts) or "no definitions: never active"


RECEIVERS = Kind(
    segment="receivers",
    noun="receiver",
    heading="Receivers",
    intro="Where notifications go. Routes name the receiver of the alerts they match.",
    key_field="name",
    key_label="Name",
    key_hint="What routes call it; 1-128 characters without / \\ % ? #",
    summary_heading="Integrations",
    summary=_integrations,
    text_label="Receiver (YAML or JSON)",
    text_hint="Alertmanager's receiver fields: webhook_configs, email_configs, slack_configs, "
    "pagerduty_configs, … The name comes from the name field.",
    example=yaml_text(
        {"webhook_configs": [{"url": "https://hooks.example.com/alerts", "send_resolved": True}]}
    ),
    text_of=lambda item: yaml_text({k: v for k, v in item.items() if k != "name"}),
    body_of=parse_mapping,
)
TEMPLATES = Kind(
    segment="templates",
    noun="template",
    heading="Templates",
    intro='Go templates that receivers use to word notifications ({{ template "name" . }}).',
    key_field="filename",
    key_label="File name",
    key_hint="Letters, digits, '.', '_' or '-', e.g. team.tmpl",
    summary_heading="Contents",
    summary=_template_summary,
    text_label="Template text",
    text_hint="Go text/template syntax, as Alertmanager reads it.",
    example='{{ define "team.title" }}[{{ .Status }}] {{ .CommonLabels.alertname }}{{ end }}\n',
    text_of=lambda item: str(item["contents"]),
    body_of=lambda text: Parsed(body={"contents": text}),
)
TIME_INTERVALS = Kind(
    segment="time-intervals",
    noun="time interval",
    heading="Time intervals",
    intro="Named times that routes use to mute or to limit their notifications.",
    key_field="name",
    key_label="Name",
    key_hint="What routes call it; 1-128 characters without / \\ % ? #",
    summary_heading="When",
    summary=_interval_summary,
    text_label="Time interval (YAML or JSON)",
    text_hint="time_intervals: a list of Alertmanager's definitions (times, weekdays, "
    "days_of_month, months, years, location). Quote times: '17:00'.",
    example=yaml_text(
        {
            "time_intervals": [
                {
                    "weekdays": ["monday:friday"],
                    "times": [{"start_time": "09:00", "end_time": "17:00"}],
                    "location": "Europe/Berlin",
                }
            ]
        }
    ),
    text_of=lambda item: yaml_text({"time_intervals": item.get("time_intervals", [])}),
    body_of=parse_mapping,
)
KINDS = (RECEIVERS, TEMPLATES, TIME_INTERVALS)


def _editor(
    page: Page, kind: Kind, key: str | None, text: str, etag: str, refused: Refusal
) -> Editor:
    """The create form (``key`` None: the name typed so far is in the form) or an item."""
    typed_key = str(page.form.get(kind.key_field, "")) if key is None else key
    return Editor(
        heading=f"New {kind.noun}" if key is None else f"{kind.noun.capitalize()} {key}",
        back=page_url(page, kind.segment),
        back_label=kind.heading,
        action=page_url(page, kind.segment) if key is None else page_url(page, kind.segment, key),
        reload=page_url(page, kind.segment, *(("-", "new") if key is None else (key,))),
        text=text,
        text_label=kind.text_label,
        text_hint=kind.text_hint,
        etag=etag,
        name=NameInput(kind.key_field, kind.key_label, typed_key, key is None, kind.key_hint),
        refusal=refused,
        submit=f"Create {kind.noun}" if key is None else "Save",
        delete=None if key is None else page_url(page, kind.segment, key, "delete"),
    )


def add_pages(router: APIRouter, kind: Kind) -> None:
    """The list, create, item and delete pages of ``kind`` on ``router``."""
    base = f"/{kind.segment}"

    async def list_items(page: PageDep) -> HTMLResponse:
        answer = await page.api.get(api_path(page, kind.segment))
        if not answer.ok:
            return unavailable(page, answer, kind.heading)
        rows = [
            {
                "key": kind.key_of(item),
                "href": page_url(page, kind.segment, kind.key_of(item)),
                "summary": kind.summary(item),
            }
            for item in answer.body.get("items", [])
        ]
        return page.render(
            "alerting/collection.html",
            kind=kind,
            rows=rows,
            new=page_url(page, kind.segment, "-", "new"),
        )

    async def new_item(page: AdminPageDep) -> HTMLResponse:
        return render_editor(page, _editor(page, kind, None, kind.example, "", Refusal({})))

    async def create_item(page: PageDep) -> Response:
        text = typed_text(page)
        key = str(page.form.get(kind.key_field, "")).strip()
        parsed = kind.body_of(text)
        if parsed.problem is not None:
            return render_editor(
                page, _editor(page, kind, None, text, "", Refusal({}, parsed.problem)), 400
            )
        if not key:
            missing = Refusal({kind.key_field: f"{kind.key_label} is required"})
            return render_editor(page, _editor(page, kind, None, text, "", missing), 400)
        # A PUT would replace an item of that name: creating must not overwrite one.
        existing = await page.api.get(api_path(page, kind.segment, key))
        if existing.ok:
            taken = Refusal({kind.key_field: f"a {kind.noun} named {key} exists already"})
            return render_editor(page, _editor(page, kind, None, text, "", taken), 409)
        answer = await page.api.call("PUT", api_path(page, kind.segment, key), json=parsed.body)
        if not answer.ok:
            refused = refusal(answer, (kind.key_field,))
            return render_editor(page, _editor(page, kind, None, text, "", refused), answer.status)
        return page.redirect(page_path(kind.segment), f"{kind.noun.capitalize()} {key} created.")

    async def show_item(page: PageDep, key: str) -> HTMLResponse:
        answer = await page.api.get(api_path(page, kind.segment, key))
        if not answer.ok:
            return unavailable(page, answer, f"{kind.noun.capitalize()} {key}")
        etag = answer.headers.get("etag", "")
        return render_editor(
            page, _editor(page, kind, key, kind.text_of(answer.body), etag, Refusal({}))
        )

    async def save_item(page: PageDep, key: str) -> Response:
        text = typed_text(page)
        etag = str(page.form.get("etag", ""))
        parsed = kind.body_of(text)
        if parsed.problem is not None:
            editor = _editor(page, kind, key, text, etag, Refusal({}, parsed.problem))
            return render_editor(page, editor, 400)
        answer = await page.api.call(
            "PUT", api_path(page, kind.segment, key), json=parsed.body, headers=if_match(page)
        )
        if not answer.ok:
            editor = _editor(page, kind, key, text, etag, refusal(answer))
            return render_editor(page, editor, answer.status)
        return page.redirect(page_path(kind.segment, key), f"{kind.noun.capitalize()} saved.")

    async def confirm_delete(page: PageDep, key: str) -> Response:
        return await _deletion(page, key, Refusal({}), 200)

    async def delete_item(page: PageDep, key: str) -> Response:
        path = api_path(page, kind.segment, key)
        answer = await page.api.call("DELETE", path, headers=if_match(page))
        if not answer.ok:
            # Shown again as it is now, with the refusal (in use, changed meanwhile).
            return await _deletion(page, key, refusal(answer), answer.status)
        return page.redirect(page_path(kind.segment), f"{kind.noun.capitalize()} {key} deleted.")

    async def _deletion(page: Page, key: str, refused: Refusal, status: int) -> Response:
        answer = await page.api.get(api_path(page, kind.segment, key))
        if not answer.ok:
            return unavailable(page, answer, f"Delete {kind.noun} {key}")
        return page.render(
            "alerting/delete.html",
            status=status,
            heading=f"Delete {kind.noun} {key}",
            question=f"Delete the {kind.noun} {key}?",
            text=kind.text_of(answer.body),
            etag=answer.headers.get("etag", ""),
            refused=refused,
            action=page_url(page, kind.segment, key, "delete"),
            back=page_url(page, kind.segment, key),
            submit=f"Delete {kind.noun}",
        )

    router.add_api_route(base, list_items, methods=["GET"])
    router.add_api_route(f"{base}/-/new", new_item, methods=["GET"])
    router.add_api_route(base, create_item, methods=["POST"])
    router.add_api_route(f"{base}/{{key}}", show_item, methods=["GET"])
    router.add_api_route(f"{base}/{{key}}", save_item, methods=["POST"])
    router.add_api_route(f"{base}/{{key}}/delete", confirm_delete, methods=["GET"])
    router.add_api_route(f"{base}/{{key}}/delete", delete_item, methods=["POST"])


router = PrefixedRouter(prefix=PAGES_PREFIX, include_in_schema=False)
for _kind in KINDS:
    add_pages(router, _kind)
