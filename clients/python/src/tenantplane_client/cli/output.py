"""Rendering results: a table for people at a terminal, JSON (or YAML) for programs.

Everything printed is text: both consoles read no Rich markup, emoji codes or highlighting,
so a string from the server (a key named ``[/]``, a ``[link=…]``) or from the command line
prints as it is. Styles are applied only through ``Text`` objects (``labelled``)."""

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
from rich.text import Text

stdout = Console(soft_wrap=True, markup=False, emoji=False, highlight=False)
stderr = Console(stderr=True, markup=False, emoji=False, highlight=False)


def labelled(label: str, style: str, message: object) -> Text:
    """``label`` in ``style``, then ``message`` as plain text (never markup)."""
    return Text.assemble((label, style), " ", str(message))


def say(message: object) -> None:
    """A message for the person at the terminal, on standard error, as plain text."""
    stderr.print(Text(str(message)))


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


def _cell(value: Any) -> Text:
    if value is None:
        return Text("")
    if isinstance(value, bool):
        return Text("true" if value else "false")
    if isinstance(value, dict | list):
        return Text(json.dumps(value, separators=(",", ":")))
    return Text(str(value))


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
        say("No resources.")
        return
    if columns is None:
        columns = [key for key, item in rows[0].items() if not isinstance(item, dict | list)]
    table = Table(*[column.split(".")[-1].upper() for column in columns], box=None)
    for row in rows:
        table.add_row(*[_cell(_pick(row, column)) for column in columns])
    stdout.print(table)
