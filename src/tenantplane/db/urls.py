"""Database URLs: the one PostgreSQL driver (psycopg 3) and printing a URL without its password."""

from __future__ import annotations

from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError

# psycopg 3 serves the pool, LISTEN/NOTIFY and the tests' admin connections: one driver.
POSTGRES_DRIVER = "postgresql+psycopg"
_POSTGRES_SCHEMES = {"postgres", "postgresql", "postgresql+psycopg", "postgresql+asyncpg"}
_SQLITE_SCHEMES = {"sqlite", "sqlite+aiosqlite"}


def normalise_database_url(url: str) -> str:
    """The URL with the driver this build uses; ValueError naming the accepted forms."""
    try:
        parsed = make_url(url)
    except ArgumentError as exc:
        raise ValueError(
            "is not a database URL; use sqlite:///PATH or postgresql://USER@HOST/DB"
        ) from exc
    if parsed.drivername in _POSTGRES_SCHEMES:
        return parsed.set(drivername=POSTGRES_DRIVER).render_as_string(hide_password=False)
    if parsed.drivername in _SQLITE_SCHEMES:
        return parsed.set(drivername="sqlite+aiosqlite").render_as_string(hide_password=False)
    raise ValueError(
        f"database {parsed.drivername!r} is not supported; "
        "use sqlite:///PATH or postgresql://USER@HOST/DB"
    )


def libpq_dsn(url: str) -> str:
    """The URL as libpq takes it (psycopg's own connections: plain reads, LISTEN)."""
    return make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


def display_url(url: str) -> str:
    """For logs and the console: the password is masked."""
    return make_url(url).render_as_string(hide_password=True)
