"""Scans a database for raw API keys (only their keyed hashes may ever be stored)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import psycopg
from sqlalchemy.engine import make_url

RAW_KEY = re.compile(rb"svc_[0-9A-Za-z]{43}")


def raw_keys_in_sqlite(database_file: Path) -> list[bytes]:
    found: list[bytes] = []
    for path in (database_file, Path(f"{database_file}-wal")):
        if path.exists():
            found += RAW_KEY.findall(_read_from_another_process(path))
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


def needles_in_database(url: str, needles: list[bytes]) -> list[bytes]:
    """Which of ``needles`` occur anywhere in the database (every table, every row)."""
    if make_url(url).get_backend_name() == "sqlite":
        database_file = Path(make_url(url).database or "")
        blobs = [
            _read_from_another_process(path)
            for path in (database_file, Path(f"{database_file}-wal"))
            if path.exists()
        ]
    else:
        dsn = make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)
        blobs = []
        with psycopg.connect(dsn) as connection:
            tables = connection.execute(
                "SELECT quote_ident(table_name) FROM information_schema.tables "
                "WHERE table_schema = 'public'"
            ).fetchall()
            for (table,) in tables:
                for (row,) in connection.execute(f"SELECT t::text FROM {table} t"):  # noqa: S608
                    blobs.append(row.encode())
    return [needle for needle in needles if any(needle in blob for blob in blobs)]


def _read_from_another_process(path: Path) -> bytes:
    # Closing any descriptor of a file drops every POSIX lock this process holds on it, the
    # SQLite connections' included (another process may then delete the WAL under them):
    # a database still in use by this process is read by a child process instead.
    return subprocess.run(["cat", str(path)], capture_output=True, check=True).stdout
