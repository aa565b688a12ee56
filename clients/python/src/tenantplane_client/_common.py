"""What the clients share, asynchronous or not (written by hand, not generated)."""

from __future__ import annotations

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

Body = BaseModel | Mapping[str, Any] | None
Progress = Callable[[m.ClusterRead], None]


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
