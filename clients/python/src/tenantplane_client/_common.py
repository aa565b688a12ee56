"""What the clients share, asynchronous or not (written by hand, not generated)."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import quote

import httpx
from pydantic import BaseModel

from tenantplane_client import models as m

API_PREFIX = "/api/v1"
# How many times update() re-reads and reapplies a change refused with 412.
UPDATE_RETRIES = 3
DEFAULT_TIMEOUT = 30.0
# Items asked per page when a list is walked (the server allows 1 to 1000).
DEFAULT_PAGE_SIZE = 500
MAX_PAGE_SIZE = 1000

Body = BaseModel | Mapping[str, Any] | None
Progress = Callable[[m.ClusterRead], None]


# What an API key or token is made of: visible ASCII (it travels in a header).
CREDENTIAL = re.compile(r"[\x21-\x7e]+")


def authorization(token: str) -> str:
    """The Authorization header for ``token``; ValueError for a value no key or token has
    (spaces, line breaks, non-ASCII: a key cut short with an ellipsis, or pasted with more
    text), which the HTTP library would otherwise refuse deep inside a request."""
    if not CREDENTIAL.fullmatch(token):
        raise ValueError(
            "the API key or token holds characters an API key or token never has "
            "(spaces, line breaks, non-ASCII): was it cut or pasted with extra text?"
        )
    return f"Bearer {token}"


def _segment(value: str) -> str:
    return quote(value, safe="")


def _body(body: Body) -> Any:
    if body is None:
        return None
    if isinstance(body, BaseModel):
        return body.model_dump(mode="json", by_alias=True, exclude_unset=True)
    return dict(body)


def _etag(response: httpx.Response) -> str | None:
    etag: str | None = response.headers.get("ETag")
    return etag
