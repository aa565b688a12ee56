"""Running the real `amtool check-config` (Debian's prometheus-alertmanager) on rendered files."""

from __future__ import annotations

import re
import resource
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tenantplane.providers.alerting.render import tenant_yaml
from tests.backends import INSTALL_TOOLS

_RESULT = re.compile(r"^Checking '(?P<path>[^']+)'\s+(?P<verdict>SUCCESS|FAILED: (?P<why>.*))$")


def amtool_path() -> str:
    found = shutil.which("amtool") or (
        "/usr/bin/amtool" if Path("/usr/bin/amtool").exists() else None
    )
    if found is None:
        pytest.fail(
            "amtool (Debian package prometheus-alertmanager) is not installed; "
            f"run: {INSTALL_TOOLS}",
            pytrace=False,
        )
    return found


@dataclass(frozen=True)
class Verdict:
    ok: bool
    reason: str


def write_config(document: dict[str, Any], directory: Path) -> Path:
    """alertmanager.yml and its template files, as a tenant's own Alertmanager would load them."""
    directory.mkdir(parents=True, exist_ok=True)
    for filename, contents in document.get("templates", {}).items():
        (directory / filename).write_text(contents, encoding="utf-8")
    path = directory / "alertmanager.yml"
    path.write_text(tenant_yaml(_complete(document)), encoding="utf-8")
    return path


def _complete(document: dict[str, Any]) -> dict[str, Any]:
    return {
        "global": {},
        "receivers": [],
        "templates": {},
        "time_intervals": [],
        **document,
    }


def check(paths: list[Path]) -> list[Verdict]:
    """One amtool run over many files; a verdict per file, in order."""
    completed = subprocess.run(
        [amtool_path(), "check-config", *map(str, paths)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    # Each file's block starts with "Checking '<path>'  SUCCESS|FAILED: why"; the config may
    # load and its templates still fail, on a later "  FAILED: why" line of the same block.
    failures: dict[str, list[str]] = {}
    current: str | None = None
    for line in (completed.stdout + completed.stderr).splitlines():
        match = _RESULT.match(line.strip())
        if match:
            current = match.group("path")
            failures[current] = [match.group("why")] if match.group("why") else []
        elif current is not None and line.strip().startswith("FAILED: "):
            failures[current].append(line.strip().removeprefix("FAILED: "))
    return [Verdict(not failures[str(p)], "; ".join(failures[str(p)])) for p in paths]


def check_documents(documents: list[dict[str, Any]], directory: Path) -> list[Verdict]:
    paths = [
        write_config(document, directory / f"c{index}") for index, document in enumerate(documents)
    ]
    return check(paths)


@dataclass(frozen=True)
class Rendering:
    ok: bool
    output: bytes
    error: str


# Alertmanager's Go runtime reserves address space up front (its threads fail to start
# under 1 GiB at times); 3 GiB leaves it room while
# a template that ran away would still be stopped long before it hurt the machine.
RENDER_MEMORY_BYTES = 3 << 30
RENDER_SECONDS = 30


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (RENDER_MEMORY_BYTES, RENDER_MEMORY_BYTES))


def render(text: str, data: Path, templates: Path, *, html: bool = False) -> Rendering:
    """`amtool template render` of ``text`` with the notification in ``data`` and the
    template files ``templates``/*.tmpl, as text or (``html``) as html/template executes
    an email's `html` field, under a memory and a time limit."""
    completed = subprocess.run(
        [
            amtool_path(),
            "template",
            "render",
            f"--template.glob={templates}/*.tmpl",
            f"--template.text={text}",
            f"--template.data={data}",
            f"--template.type={'html' if html else 'text'}",
        ],
        capture_output=True,
        timeout=RENDER_SECONDS,
        check=False,
        preexec_fn=_limit_memory,
    )
    return Rendering(
        completed.returncode == 0, completed.stdout, completed.stderr.decode(errors="replace")
    )
