"""Scans a database for raw API keys (only their keyed hashes may ever be stored)."""

from __future__ import annotations

import re
from pathlib import Path

import psycopg
from sqlalchemy.engine import make_url

RAW_KEY = re.compile(rb"svc_[0-9A-Za-z]{43}")


def raw_keys_in_sqlite(database_file: Path) -> list[bytes]:
    found: list[bytes] = []
    for path in (database_file, Path(f"{database_file}-wal")):
        if path.exists():
            found += RAW_KEY.findall(path.read_bytes())
    return found


def raw_keys_in_postgres(url: str) -> list[bytes]:
    dsn = make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)
    found: list[bytes] = []
    with psycopg.connect(dsn) as connection:
        tables = connection.execute(
            "SELECT quote_ident(table_name) FROM information_schema.tables "
            "WHERE table_schema = 'public'"
        ).fetchall()
        for (table,) in tables:
            for (row,) in connection.execute(f"SELECT t::text FROM {table} t"):  # noqa: S608
                found += RAW_KEY.findall(row.encode())
    return found
