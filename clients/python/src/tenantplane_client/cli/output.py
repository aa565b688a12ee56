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

# soft_wrap: lines are left to the terminal to wrap, so a path, a name or an ID in a message
# is never broken by a newline of Rich's (a copied path would not work).
stdout = Console(soft_wrap=True, markup=False, emoji=False, highlight=False)
stderr = Console(stderr=True, soft_wrap=True, markup=False, emoji=False, highlight=False)


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
    cells = [[_cell(_pick(row, column)) for column in columns] for row in rows]
    table = Table(box=None)
    needed = 0
    for index, column in enumerate(columns):
        header = column.split(".")[-1]
        natural = max(len(header), *(row[index].cell_len for row in cells))
        if header in WHOLE:
            # Rich would otherwise shorten it with an ellipsis, or fold it across lines.
            table.add_column(header.upper(), no_wrap=True, min_width=natural)
            least = natural
        else:
            least = min(natural, NARROWEST)
            table.add_column(header.upper(), overflow="fold", min_width=least)
        needed += least + 2  # a space of padding either side
    for row in cells:
        table.add_row(*row)
    _wide_enough(needed).print(table)


# Columns another command takes as they are (an ID to get or delete, a name, an email, the
# raw key or signing secret printed once, a link to open, an event's action or actor to
# filter on): never cut. The others fold to make room for them.
WHOLE = frozenset(
    {"id", "index", "name", "email", "key", "filename", "receiver", "url", "secret"}
    | {"action", "actor"}
    | {"overviewURL", "updatePaymentMethodURL"}
)
NARROWEST = 6


def _wide_enough(width: int) -> Console:
    """``stdout``, or one as wide as the table's uncut columns need when the terminal is
    narrower (Rich would cut even those): the terminal wraps the long lines instead."""
    if width <= stdout.width:
        return stdout
    return Console(
        file=sys.stdout,
        width=width,
        soft_wrap=True,
        markup=False,
        emoji=False,
        highlight=False,
        # The same names; Rich types the property as str and the argument as a Literal.
        color_system=stdout.color_system,  # type: ignore[arg-type]
        force_terminal=stdout.is_terminal,
    )
