"""The garbage collector and a long-lived server process."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def heap_settled() -> Iterator[None]:
    """While a process serves: what its startup built (modules, the framework's routes,
    the ORM's mappers and compiled statements, the catalogues) is kept out of the garbage
    collector's full collections. Each of those scanned it all again, with the event loop
    stopped: 80-140 ms every few seconds under load, the slowest answers of a busy server
    (bench/history.md, round 10). Those objects live as long as the process; what requests
    and reconciler looks create is collected as before. Entered by what owns the process
    (the server of `tenantplane serve`, the app factory of each of its processes with
    `--workers`, `tenantplane worker`), not by the app, which tests start by the hundred in
    one process; given back to the collector on the way out."""
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()
