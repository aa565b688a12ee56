"""System tests: fixtures for real deployments, the figures each test reports, and the
logs of every process printed when a test fails.

These tests are marked ``system`` and left out of ``make test`` (pyproject's addopts
deselect them); ``make test-system`` runs them serially with ``-s``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Generator, Iterator
from pathlib import Path
from typing import Any

import pytest

from tenantplane.db.engine import Database
from tests.backends import postgres_database
from tests.conftest import TEST_SECRET
from tests.factories import Factory
from tests.system.harness import Fleet

_REPORTS = pytest.StashKey[dict[str, pytest.TestReport]]()
_FIGURES: list[tuple[str, dict[str, object]]] = []


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    # Kept on the item so that fixtures know, at teardown, whether the test failed.
    report = yield
    item.stash.setdefault(_REPORTS, {})[report.when] = report
    return report


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if not _FIGURES:
        return
    terminalreporter.section("system test figures")
    for test, figures in _FIGURES:
        terminalreporter.write_line(test)
        for name, value in figures.items():
            terminalreporter.write_line(f"    {name}: {value}")


def _failed(request: pytest.FixtureRequest) -> bool:
    reports = request.node.stash.get(_REPORTS, {})
    return any(report.failed for report in reports.values())


class Figures(dict[str, object]):
    """What a test measured (requests, kills, writes, takeover times): printed when the
    test ends and listed again in the run's summary."""


@pytest.fixture
def figures(request: pytest.FixtureRequest) -> Iterator[Figures]:
    collected = Figures()
    yield collected
    if collected:
        lines = "\n".join(f"    {name}: {value}" for name, value in collected.items())
        print(f"\n[figures] {request.node.nodeid}\n{lines}")
        _FIGURES.append((request.node.nodeid, dict(collected)))


@pytest.fixture
def postgres_url() -> Iterator[str]:
    """A fresh, empty PostgreSQL database for this test (dropped after it)."""
    with postgres_database(prefix="tenantplane_system") as url:
        yield url


@pytest.fixture
def fleet(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Fleet]:
    """The test's processes: stopped at the end; their logs printed if the test failed."""
    processes = Fleet(tmp_path)
    yield processes
    processes.stop_all()
    if _failed(request):
        print(f"\nlogs of the processes ({tmp_path}):\n{processes.logs()}")


class Connections:
    """The test's own connections to deployment databases (migrated by the deployment)."""

    def __init__(self) -> None:
        self.databases: list[Database] = []

    def open(self, url: str) -> tuple[Database, Factory]:
        database = Database.connect(url)
        self.databases.append(database)
        return database, Factory(database, TEST_SECRET.encode())


@pytest.fixture
async def connections() -> AsyncIterator[Connections]:
    opened = Connections()
    yield opened
    for database in opened.databases:
        await database.dispose()
