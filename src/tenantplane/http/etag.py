"""ETag (the quoted resourceVersion) and If-Match, used by every single-resource route."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Header, Response

from tenantplane.http.errors import PreconditionFailed

IfMatch = Annotated[
    str | None,
    Header(
        alias="If-Match",
        description='The resource\'s ETag ("17"), its bare version (17) or *.',
    ),
]

# Declared by every read that sends an ETag (it is then conditional, http/conditional.py);
# http/openapi.py documents If-None-Match and the ETag header on the operations that have it.
NOT_MODIFIED: dict[int | str, dict[str, Any]] = {
    304: {"description": "Not Modified: If-None-Match names the current ETag; no body"}
}


def etag_of(version: int | str) -> str:
    return f'"{version}"'


def set_etag(response: Response, version: int | str) -> None:
    response.headers["ETag"] = etag_of(version)


def _candidates(if_match: str) -> list[str]:
    values = []
    for part in if_match.split(","):
        value = part.strip().removeprefix("W/")
        if len(value) >= 2 and value.startswith('"') and value.endswith('"'):
            value = value[1:-1]
        if value:
            values.append(value)
    return values


def check_if_match(if_match: str | None, current_version: int | str | None) -> None:
    """Raise 412 unless If-Match is absent, ``*`` (on an existing resource) or current."""
    if if_match is None:
        return
    candidates = _candidates(if_match)
    if current_version is not None and ("*" in candidates or str(current_version) in candidates):
        return
    raise PreconditionFailed()
