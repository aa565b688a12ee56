"""Every route and dependency of the app is a coroutine: the framework runs a plain
function in a worker thread, a handoff that cost a list more CPU than its own query
(bench/history.md, round 19: the paging parameters' dependency)."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator
from typing import Any

from fastapi import FastAPI
from fastapi.dependencies.models import Dependant

from tenantplane.http.route_index import api_routes


def _runs_on_the_loop(call: Callable[..., Any]) -> bool:
    method = getattr(call, "__call__", None)  # noqa: B004 (a dependency may be an object)
    return any(
        inspect.iscoroutinefunction(candidate) or inspect.isasyncgenfunction(candidate)
        for candidate in (call, method)
    )


def _calls(dependant: Dependant) -> Iterator[Callable[..., Any]]:
    if dependant.call is not None:
        yield dependant.call
    for dependency in dependant.dependencies:
        yield from _calls(dependency)


def _name(call: Callable[..., Any]) -> str:
    return f"{getattr(call, '__module__', '?')}.{getattr(call, '__qualname__', repr(call))}"


async def test_no_route_or_dependency_runs_in_a_worker_thread(app: FastAPI) -> None:
    routes = list(api_routes(app))
    assert len(routes) > 100  # the console's pages and the API's routes alike
    threaded = {
        f"{item.method} {item.path}: {_name(call)}"
        for item in routes
        for call in _calls(item.route.dependant)
        if not _runs_on_the_loop(call)
    }
    assert threaded == set()


def test_the_check_sees_a_plain_function() -> None:
    def plain() -> None:
        return None

    async def coroutine() -> None:
        return None

    class Callable_:
        async def __call__(self) -> None:
            return None

    assert not _runs_on_the_loop(plain)
    assert _runs_on_the_loop(coroutine)
    assert _runs_on_the_loop(Callable_())
