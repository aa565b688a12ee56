"""tpctl, the command-line client (typer + rich)."""

from tenantplane_client.cli.app import app, main

__all__ = ["app", "main"]
