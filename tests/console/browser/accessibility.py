"""axe-core in the page under test: the engine scripts/console-test-deps installs (the
version tests/console/browser/package-lock.json pins) is evaluated through DevTools, which
the page's Content-Security-Policy does not govern, so no context needs its CSP bypassed."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page

LOCK = Path(__file__).with_name("package-lock.json")
# Violations of these impacts fail a test (minor and moderate ones do not).
BLOCKING_IMPACTS = frozenset({"serious", "critical"})

_RUN = """axe.run(document, {resultTypes: ["violations"]}).then((results) =>
  results.violations.map((violation) => ({
    id: violation.id,
    impact: violation.impact,
    help: violation.help,
    nodes: violation.nodes.map((node) => ({
      target: node.target.join(" "),
      summary: node.failureSummary || "",
    })),
  })))"""


def cache_dir() -> Path:
    """Where scripts/console-test-deps installs axe-core (the same rule as the script's)."""
    cache_home = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache_home) / "tenantplane" / "console-test"


def locked_version() -> str:
    lock = json.loads(LOCK.read_text())
    version: str = lock["packages"]["node_modules/axe-core"]["version"]
    return version


def axe_source() -> str:
    script = cache_dir() / "node_modules" / "axe-core" / "axe.min.js"
    if not script.is_file():
        pytest.fail(f"{script} is missing: run scripts/console-test-deps (make test-console does)")
    return script.read_text()


def blocking_violations(page: Page, source: str) -> list[str]:
    """axe's serious and critical violations on ``page`` as it is now, one line per element."""
    page.evaluate(f"{source}\n;undefined")
    version = page.evaluate("axe.version")
    assert version == locked_version(), f"axe-core {version} ran, {locked_version()} is locked"
    violations: list[dict[str, Any]] = page.evaluate(_RUN)
    return [
        f"{violation['impact']} {violation['id']} ({violation['help']}) at {node['target']}: "
        f"{node['summary']}"
        for violation in violations
        if violation["impact"] in BLOCKING_IMPACTS
        for node in violation["nodes"]
    ]
