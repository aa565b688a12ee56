"""The rate-limit budget an answer reports, so that a caller can slow down before a 429."""

from __future__ import annotations

from dataclasses import dataclass

import httpx


@dataclass(frozen=True)
class RateLimit:
    """RateLimit-Limit, RateLimit-Remaining and RateLimit-Reset of one answer: the budget of
    the caller's address, what is left of it after that request, and the seconds until the
    server's moving window frees a request."""

    limit: int
    remaining: int
    reset: int

    @classmethod
    def of(cls, response: httpx.Response) -> RateLimit | None:
        """None for an answer without the headers (a path that is not limited, or a server
        whose rate-limit store is unreachable)."""
        headers = response.headers
        try:
            return cls(
                int(headers["RateLimit-Limit"]),
                int(headers["RateLimit-Remaining"]),
                int(headers["RateLimit-Reset"]),
            )
        except (KeyError, ValueError):
            return None
