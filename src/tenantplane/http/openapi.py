"""The OpenAPI document: FastAPI's, made truthful and complete in one place.

Routes stay free of documentation plumbing: operation ids, the bearer security scheme,
the error statuses every operation shares (405, 413 on bodies) and the tags are all
applied here, from the routes themselves.
"""

from __future__ import annotations

import inspect
import json
import re
from collections.abc import Iterator
from typing import Any

from fastapi import FastAPI
from fastapi.dependencies.models import Dependant
from fastapi.openapi.utils import get_openapi
from fastapi.routing import APIRoute

from tenantplane.http.access import Access, access_level_of
from tenantplane.http.errors import STATUS_DESCRIPTIONS, ErrorEnvelope
from tenantplane.http.route_index import api_routes

API_PREFIX = "/api/v1"
BEARER_SCHEME = "bearer"
PADDLE_SIGNATURE_HEADER = "Paddle-Signature"
ERROR_SCHEMA_REF = "#/components/schemas/ErrorEnvelope"

TAGS: list[dict[str, str]] = [
    {"name": "tenant", "description": "The tenant record; its fields are platform-managed."},
    {"name": "members", "description": "Tenant members (email and role), who sign in by OIDC."},
    {
        "name": "apikeys",
        "description": "API keys (`svc_…`) for programs; the raw key is shown once, at creation.",
    },
    {
        "name": "clusters",
        "description": "Managed Kubernetes clusters, created asynchronously, and their versions.",
    },
    {
        "name": "secrets",
        "description": "Vault-backed secrets and the cluster namespaces they are synced into.",
    },
    {
        "name": "alerting",
        "description": "The tenant's Alertmanager configuration: receivers, routes, templates.",
    },
    {
        "name": "billing",
        "description": "Plans, invoices, receipt links, payment-portal sessions and the "
        "payment provider's webhook.",
    },
    {
        "name": "events",
        "description": "The tenant's event stream: audit and platform events, newest first.",
    },
    {
        "name": "webhooks",
        "description": "Subscriptions that send the tenant's events, signed, to a URL; and "
        "their deliveries.",
    },
    {
        "name": "operations",
        "description": "Liveness, readiness and Prometheus metrics; no authentication.",
    },
]

# Where a route function's name does not read well as an operation id.
OPERATION_ID_OVERRIDES = {
    "healthz": "getHealth",
    "readyz": "getReadiness",
    "metrics": "getMetrics",
    "patch_tenant": "updateTenant",
    "patch_secret": "updateSecret",
    "change_member_role": "updateMember",
    "get_config": "getAlertingConfig",
    "put_config": "putAlertingConfig",
    "reset_config": "resetAlertingConfig",
    "paddle_webhook": "receivePaddleWebhook",
}

CAMEL_CASE = re.compile(r"^[a-z][a-zA-Z0-9]*$")


def operation_id(route: APIRoute) -> str:
    """A stable camelCase id from the route function's name (``list_clusters`` →
    ``listClusters``); FastAPI calls this for every route (``generate_unique_id_function``)."""
    override = OPERATION_ID_OVERRIDES.get(route.name)
    if override is not None:
        return override
    head, *rest = route.name.split("_")
    return head + "".join(word[:1].upper() + word[1:] for word in rest)


def _access_levels(dependant: Dependant) -> Iterator[Access]:
    level = access_level_of(dependant.call)
    if level is not None:
        yield level
    for dependency in dependant.dependencies:
        yield from _access_levels(dependency)


def _is_public(route: APIRoute) -> bool:
    levels = set(_access_levels(route.dependant))
    return levels == {Access.public}


def _error(description: str) -> dict[str, Any]:
    return {
        "description": description,
        "content": {"application/json": {"schema": {"$ref": ERROR_SCHEMA_REF}}},
    }


def _split_docstring(route: APIRoute) -> tuple[str, str] | None:
    """(summary, description) from the docstring: its first line, then the rest."""
    doc = inspect.getdoc(route.endpoint)
    if not doc:
        return None
    doc = doc.split("\f", 1)[0].strip()
    summary, _, rest = doc.partition("\n")
    summary = summary.strip().removesuffix(".")
    return summary, rest.strip() or summary


def _describe(operation: dict[str, Any], route: APIRoute) -> None:
    parts = _split_docstring(route)
    if parts is not None:
        operation["summary"], operation["description"] = parts


def _secure(operation: dict[str, Any], route: APIRoute) -> None:
    if _is_public(route):
        # Authenticated by other means (the webhook's signature) or not at all.
        operation["security"] = []
        operation.get("responses", {}).pop("403", None)
        return
    operation["security"] = [{BEARER_SCHEME: []}]


def _common_errors(operation: dict[str, Any]) -> None:
    responses = operation.setdefault("responses", {})
    # FastAPI's own 422 (its validation errors) is never answered: they are 400s here. A 422
    # a route declares itself (a reused Idempotency-Key) stays.
    if "HTTPValidationError" in json.dumps(responses.get("422", {})):
        responses.pop("422")
    responses.setdefault("405", _error("Method not allowed; the Allow header lists the methods"))
    responses["405"].setdefault(
        "headers",
        {"Allow": {"description": "The methods this path supports", "schema": {"type": "string"}}},
    )
    if "requestBody" in operation:
        responses.setdefault("413", _error(STATUS_DESCRIPTIONS[413]))
        responses.setdefault("415", _error(STATUS_DESCRIPTIONS[415]))


ETAG_HEADER = {
    "description": 'The resource\'s version, quoted (`"17"`): send it back in If-Match or '
    "If-None-Match",
    "schema": {"type": "string"},
}


def _conditional(operation: dict[str, Any]) -> None:
    """A read that declares 304 (http/etag.py NOT_MODIFIED): its If-None-Match parameter and
    the ETag header of its 200 and 304."""
    responses = operation.get("responses", {})
    if "304" not in responses:
        return
    operation.setdefault("parameters", []).append(
        {
            "name": "If-None-Match",
            "in": "header",
            "required": False,
            "description": 'ETags the client holds (`"17"`, a list, `W/` prefixes, or `*`): '
            "304 with no body when one names the current version (weak comparison)",
            "schema": {"type": "string"},
        }
    )
    for status in ("200", "304"):
        if status in responses:
            responses[status].setdefault("headers", {})["ETag"] = ETAG_HEADER


# Sent on every answer of a rate-limited path (http/ratelimit.py), refusals included; not
# while the rate-limit store is unreachable. draft-ietf-httpapi-ratelimit-headers' names.
RATE_LIMIT_HEADERS: dict[str, dict[str, Any]] = {
    "RateLimit-Limit": {
        "description": "Requests the client address may make in the window",
        "schema": {"type": "integer", "minimum": 1},
    },
    "RateLimit-Remaining": {
        "description": "Requests left in the window after this one (0: the next is 429)",
        "schema": {"type": "integer", "minimum": 0},
    },
    "RateLimit-Reset": {
        "description": "Seconds until the moving window frees a request",
        "schema": {"type": "integer", "minimum": 0},
    },
}


def _rate_limited(operation: dict[str, Any]) -> None:
    responses = operation.get("responses", {})
    for response in responses.values():
        headers = response.setdefault("headers", {})
        for name in RATE_LIMIT_HEADERS:
            headers[name] = {"$ref": f"#/components/headers/{name}"}
    if "429" in responses:
        responses["429"]["headers"]["Retry-After"] = {
            "description": "Seconds to wait before the next request (at least 1)",
            "schema": {"type": "integer", "minimum": 1},
        }


LOCATION_HEADER = {
    "description": "The created resource's absolute URL, from the scheme and host the request "
    "reached (through TENANTPLANE_TRUSTED_PROXIES: X-Forwarded-Proto and X-Forwarded-Host)",
    "schema": {"type": "string", "format": "uri"},
}


def _created(operation: dict[str, Any]) -> None:
    """Every 201 names what it created (http/location.py)."""
    created = operation.get("responses", {}).get("201")
    if created is not None:
        created.setdefault("headers", {})["Location"] = LOCATION_HEADER


def _document_webhook(operation: dict[str, Any]) -> None:
    operation.setdefault("parameters", []).append(
        {
            "name": PADDLE_SIGNATURE_HEADER,
            "in": "header",
            "required": True,
            "description": "Paddle's HMAC signature of the raw body (`ts=…;h1=…`)",
            "schema": {"type": "string"},
        }
    )
    # The handler reads the raw body (the signature covers its exact bytes).
    operation["requestBody"] = {
        "required": True,
        "content": {"application/json": {"schema": {"type": "object"}}},
    }
    operation["responses"].setdefault("401", _error("Missing or invalid webhook signature"))


def build_document(app: FastAPI) -> dict[str, Any]:
    document = get_openapi(
        title=app.title,
        version=app.version,
        description=app.description,
        routes=app.routes,
        tags=TAGS,
    )
    components = document.setdefault("components", {})
    schemas = components.setdefault("schemas", {})
    for name in ("HTTPValidationError", "ValidationError"):
        schemas.pop(name, None)
    schemas.setdefault("ErrorEnvelope", ErrorEnvelope.model_json_schema())
    components["headers"] = RATE_LIMIT_HEADERS
    components["securitySchemes"] = {
        BEARER_SCHEME: {
            "type": "http",
            "scheme": "bearer",
            "description": "An API key (`svc_…`) or an OIDC identity token",
        }
    }
    for item in api_routes(app):
        if not item.route.include_in_schema:
            continue
        method = item.method.lower()
        operation = document["paths"][item.path][method]
        _describe(operation, item.route)
        if item.route.name == "paddle_webhook":
            _document_webhook(operation)
        _common_errors(operation)
        _conditional(operation)
        _created(operation)
        if item.path.startswith(API_PREFIX + "/"):
            _secure(operation, item.route)
            _rate_limited(operation)
    return document


def openapi_document(app: FastAPI) -> dict[str, Any]:
    """The app's document, built once."""
    if app.openapi_schema is None:
        app.openapi_schema = build_document(app)
    return app.openapi_schema


def render(document: dict[str, Any]) -> str:
    """The committed form of the document (docs/openapi.json): stable key order."""
    return json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
