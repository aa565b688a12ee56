"""docs/access.md lists every operation of the app with the level its route declares."""

from __future__ import annotations

import re
from pathlib import Path

from tests.access import introspection_app, operations

ACCESS_DOC = Path(__file__).resolve().parent.parent / "docs" / "access.md"
ROW = re.compile(r"^\| (GET|POST|PUT|PATCH|DELETE) \| `([^`]+)` \| (\w+) \|$")


def documented() -> list[tuple[str, str, str]]:
    rows = []
    for line in ACCESS_DOC.read_text(encoding="utf-8").splitlines():
        match = ROW.match(line.strip())
        if match:
            rows.append((match.group(1), match.group(2), match.group(3)))
    return rows


def row(method: str, path: str, level: str) -> str:
    return f"| {method} | `{path}` | {level} |"


def test_docs_list_every_operation_with_its_declared_level() -> None:
    in_docs = documented()
    assert len(in_docs) == len(set(in_docs)), "docs/access.md lists an operation twice"
    in_app = {
        (op.method, op.path, op.level.value if op.level else "UNDECLARED")
        for op in operations(introspection_app())
    }
    missing = sorted(in_app - set(in_docs))
    stale = sorted(set(in_docs) - in_app)
    message = "docs/access.md and the app's routes disagree.\n"
    message += "Add to docs/access.md:\n" + "\n".join(row(*entry) for entry in missing)
    message += "\nRemove from docs/access.md:\n" + "\n".join(row(*entry) for entry in stale)
    assert (missing, stale) == ([], []), message
