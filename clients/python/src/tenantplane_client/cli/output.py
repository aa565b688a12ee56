"""Rendering results: a table for people at a terminal, JSON (or YAML) for programs."""

from __future__ import annotations

import enum
import json
import sys
from collections.abc import Sequence
from typing import Any

import yaml
from pydantic import BaseModel
from rich.console import Console
from rich.table import Table

stdout = Console(soft_wrap=True)
stderr = Console(stderr=True)


class Output(enum.StrEnum):
    table = "table"
    json = "json"
    yaml = "yaml"


def default_output() -> Output:
    return Output.table if sys.stdout.isatty() else Output.json


def plain(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", by_alias=True, exclude_none=True)
    if isinstance(value, list | tuple):
        return [plain(item) for item in value]
    return value


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict | list):
        return json.dumps(value, separators=(",", ":"))
    return str(value)


def _pick(row: dict[str, Any], column: str) -> Any:
    value: Any = row
    for part in column.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return value


def render(value: Any, output: Output | None, columns: Sequence[str] | None = None) -> None:
    """Print ``value`` (a model or a list of models) in the chosen format."""
    data = plain(value)
    output = output or default_output()
    if output is Output.json:
        print(json.dumps(data, indent=2))
        return
    if output is Output.yaml:
        print(yaml.safe_dump(data, sort_keys=False), end="")
        return
    rows = data if isinstance(data, list) else [data]
    if not rows:
        stderr.print("No resources.")
        return
    if columns is None:
        columns = [key for key, item in rows[0].items() if not isinstance(item, dict | list)]
    table = Table(*[column.split(".")[-1].upper() for column in columns], box=None)
    for row in rows:
        table.add_row(*[_cell(_pick(row, column)) for column in columns])
    stdout.print(table)
