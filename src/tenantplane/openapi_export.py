"""`make openapi`: print the OpenAPI document the app serves (no database is touched)."""

from __future__ import annotations

import sys

from pydantic import SecretStr

from tenantplane.app import create_app
from tenantplane.config import Settings
from tenantplane.http.openapi import render


def main() -> None:
    # Neither value reaches the document; both keep this from reading the environment.
    settings = Settings(
        _env_file=None, database_url="sqlite+aiosqlite:///:memory:", secret_key=SecretStr("unused")
    )
    sys.stdout.write(render(create_app(settings).openapi()))


if __name__ == "__main__":
    main()
