"""The served OpenAPI document, built in-process (no database is touched)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import SecretStr

from tenantplane.app import create_app
from tenantplane.config import Settings
from tests.conftest import TEST_SECRET

COMMITTED = Path(__file__).resolve().parents[2] / "docs" / "openapi.json"
HTTP_METHODS = frozenset({"get", "put", "post", "delete", "patch"})


def served_document(tmp_path: Path) -> dict[str, Any]:
    settings = Settings(
        _env_file=None,
        database_url=f"sqlite+aiosqlite:///{tmp_path / 'unused.db'}",
        secret_key=SecretStr(TEST_SECRET),
    )
    return create_app(settings).openapi()


def operations(document: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    return [
        (method.upper(), path, operation)
        for path, item in document["paths"].items()
        for method, operation in item.items()
        if method in HTTP_METHODS
    ]
