"""What every alerting page shares: the API's paths, a part of the configuration edited as a
YAML or JSON document in a textarea, the API's refusals placed where the user can act on
them, and the states in which alerting cannot be used at all.

The Alertmanager configuration is too rich for a form per field, so each part is edited as
the body the API takes. The API stays the judge of its contents: its validation error names
a field of that body (``webhook_configs[0].url``), which is shown beside the textarea with
the text kept as typed. Only YAML syntax is checked here, since there is no body to send.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

import yaml
from fastapi.responses import HTMLResponse

from tenantplane.console.api import ApiAnswer
from tenantplane.console.web import Page, field_errors, tenant_url

# The textarea's form field.
DOCUMENT_FIELD = "document"

# What the API's 503s mean for someone looking at the console (alerting/service.py).
UNAVAILABLE = {
    "ALERTING_DISABLED": (
        "Alerting is not enabled in this deployment: no alerting backend is configured, so "
        "there is no configuration to read or change here. The operator can enable one "
        "(TENANTPLANE_ALERTING_BACKEND)."
    ),
    "TENANT_CREDENTIALS_PENDING": (
        "This tenant's alerting backend is not reachable yet: the operator has not set its "
        "credentials (tenantplane alerting set-credentials). Try again later."
    ),
    "ALERTING_BACKEND_UNAVAILABLE": (
        "The alerting backend could not be reached just now. Try again in a few seconds."
    ),
}


# The prefix of every alerting page; each of the three page modules has a router of its own
# under it, all three included into the app (http/route_index.py).
PAGES_PREFIX = "/console/t/{tenant}/alerting"


def api_path(page: Page, *parts: str) -> str:
    """A path of the alerting API, each part escaped as one path segment."""
    base = f"/tenants/{quote(page.tenant, safe='')}/alerting"
    return "/".join([base, *(quote(part, safe="") for part in parts)])


def page_path(*parts: str) -> str:
    """A console path under the tenant (for ``page.redirect``), escaped the same way."""
    return "/".join(["alerting", *(quote(part, safe="") for part in parts)])


def page_url(page: Page, *parts: str) -> str:
    """The same as a link."""
    return tenant_url(page.tenant, page_path(*parts))


def if_match(page: Page) -> dict[str, str] | None:
    """The wrapper ETag the form was rendered with: a write made on a stale page is 412."""
    etag = str(page.form.get("etag", ""))
    return {"If-Match": etag} if etag else None


def typed_text(page: Page) -> str:
    # Browsers send a textarea's line breaks as CRLF; what is stored keeps Unix ones.
    return str(page.form.get(DOCUMENT_FIELD, "")).replace("\r\n", "\n")


@dataclass(frozen=True)
class Problem:
    """A refusal of the document, shown beside the textarea: the place it names (the API's
    ``field``, or a line of the YAML) and why."""

    field: str
    message: str


@dataclass(frozen=True)
class Parsed:
    body: Any = None
    problem: Problem | None = None


def parse_mapping(text: str) -> Parsed:
    """The textarea's YAML (or JSON, which YAML reads too) as a JSON object for the API."""
    try:
        value = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        reason = getattr(exc, "problem", None) or str(exc)
        return Parsed(problem=Problem(where, f"not valid YAML: {reason}"))
    if value is None:
        value = {}  # an empty document: nothing set
    if not isinstance(value, dict):
        return Parsed(problem=Problem("", "the document must be a mapping of fields (name: value)"))
    try:
        json.dumps(value)
    except (TypeError, ValueError) as exc:
        # YAML has types JSON has not (dates, sets): such a value must be quoted.
        return Parsed(problem=Problem("", f"{exc}; quote such values"))
    return Parsed(body=value)


def yaml_text(value: Any) -> str:
    """A part as the textarea shows it: block-style YAML in the API's own field order."""
    return yaml.safe_dump(
        value, sort_keys=False, allow_unicode=True, default_flow_style=False, width=1000
    )


@dataclass(frozen=True)
class Refusal:
    """Where the API's refusal of a write is shown."""

    errors: Mapping[str, str]  # at a form input it names, or above the form ("")
    problem: Problem | None = None  # beside the textarea
    stale: bool = False  # 412: the configuration changed since the page was rendered


NO_REFUSAL = Refusal({})


def refusal(answer: ApiAnswer, inputs: tuple[str, ...] = ()) -> Refusal:
    """A failed write's error at the input it names (``inputs``: the form's own fields, such
    as the name), else a validation error beside the textarea, else above the form."""
    if answer.status == 412:
        return Refusal({}, stale=True)
    errors = field_errors(answer)
    named = answer.field or ""
    if named and named in inputs:
        return Refusal(errors)
    if answer.status == 400 and named not in ("id", "etag"):
        return Refusal({}, Problem(named, errors.get(named, answer.error)))
    return Refusal({"": answer.error})


@dataclass(frozen=True)
class NameInput:
    """The input naming the item (a receiver's name, a template's file name)."""

    field: str  # the API's name for it, which its errors carry
    label: str
    value: str
    editable: bool  # only when creating: a rename would be another item
    hint: str = ""


@dataclass(frozen=True)
class Editor:
    """A part of the configuration as a document: a form for admins, a view for others."""

    heading: str
    back: str  # the link up (the list)
    back_label: str
    action: str  # where the form posts
    reload: str  # this page, read again
    text: str
    text_label: str
    text_hint: str
    etag: str = ""
    name: NameInput | None = None
    refusal: Refusal = NO_REFUSAL
    submit: str = "Save"
    delete: str | None = None  # the deletion's confirmation page
    notes: tuple[str, ...] = field(default_factory=tuple)  # shown above the form

    @property
    def inputs(self) -> tuple[str, ...]:
        return (self.name.field,) if self.name is not None and self.name.editable else ()


def render_editor(page: Page, editor: Editor, status: int = 200) -> HTMLResponse:
    return page.render("alerting/editor.html", status=status, editor=editor)


def unavailable(page: Page, answer: ApiAnswer, heading: str) -> HTMLResponse:
    """A page whose data the API would not give: why, in the API's words, and what it means
    (alerting not enabled, credentials pending) when the API says so."""
    return page.render(
        "alerting/unavailable.html",
        status=answer.status,
        heading=heading,
        answer=answer,
        explanation=UNAVAILABLE.get(answer.code or ""),
        retry_after=answer.headers.get("retry-after"),
    )
