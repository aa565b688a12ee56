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


def entity_tags(header: str) -> list[str] | None:
    """The opaque tags an If-Match or If-None-Match value names, without ``W/`` and quotes;
    None for ``*``. A quoted tag may contain commas; a malformed part names nothing."""
    tags: list[str] = []
    position, length = 0, len(header)
    while position < length:
        char = header[position]
        if char in " \t,":
            position += 1
        elif char == "*":
            return None
        elif header.startswith('W/"', position) or char == '"':
            start = header.index('"', position) + 1
            end = header.find('"', start)
            if end < 0:
                break  # an unterminated tag: what follows is not a tag either
            tags.append(header[start:end])
            position = end + 1
        else:
            end = header.find(",", position)
            end = length if end < 0 else end
            bare = header[position:end].strip()
            if bare and '"' not in bare:
                tags.append(bare)
            position = end
    return tags


def check_if_match(if_match: str | None, current_version: int | str | None) -> None:
    """Raise 412 unless If-Match is absent, ``*`` (on an existing resource) or current."""
    if if_match is None:
        return
    tags = entity_tags(if_match)
    if current_version is not None and (tags is None or str(current_version) in tags):
        return
    raise PreconditionFailed()
