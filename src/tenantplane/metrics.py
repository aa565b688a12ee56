"""What /metrics shows: this process's metrics, or those of every process of a `serve
--workers N`.

With several processes, a scrape reaches one of them; each would show only its own
requests. So `serve` gives its processes one directory (``PROMETHEUS_MULTIPROC_DIR``, named
in the environment they start with: prometheus_client reads it when first imported), where
each writes its metrics' values, and the process that answers a scrape reads them all:
counters and histograms summed over the processes, each gauge as its ``multiprocess_mode``
says. The runtime collectors read /proc and the interpreter, not that directory: process_*
is shown for every process of the serve, labelled with its ``pid`` (sum them for the
serve's memory or CPU), python_* for the process that answered.
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import shutil
from collections.abc import Iterable, Iterator
from pathlib import Path

from prometheus_client import CollectorRegistry, gc_collector, platform_collector
from prometheus_client.metrics_core import Metric
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.process_collector import ProcessCollector
from prometheus_client.registry import Collector

MULTIPROCESS_DIRECTORY = "PROMETHEUS_MULTIPROC_DIR"
# The directories of serves, under the data directory: metrics-<pid of the serve>.
_DIRECTORY_PREFIX = "metrics-"
# prometheus_client's files: <kind>_<pid>.db (counter_12.db, gauge_mostrecent_12.db, ...).
_FILE_PID = re.compile(r"_(\d+)\.db$")


def exposition_registry(registry: CollectorRegistry) -> CollectorRegistry:
    """The registry /metrics renders: ``registry`` itself in a process of its own; in a
    process of `serve --workers N`, one that reads every process's values (module doc)."""
    directory = os.environ.get(MULTIPROCESS_DIRECTORY)
    if not directory:
        return registry
    merged = CollectorRegistry()
    MultiProcessCollector(merged, path=directory)  # type: ignore[no-untyped-call]  # untyped upstream
    merged.register(ServeProcesses(Path(directory)))
    platform_collector.PlatformCollector(registry=merged)
    gc_collector.GCCollector(registry=merged)
    return merged


class ServeProcesses(Collector):
    """process_* of every live process of the serve, labelled ``pid``: those that wrote
    metrics in ``directory``, and the supervisor (the answering process's parent)."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def collect(self) -> Iterable[Metric]:
        pids = {os.getppid()}
        for name in os.listdir(self.directory):
            found = _FILE_PID.search(name)
            if found is not None:
                pids.add(int(found.group(1)))
        families: dict[str, Metric] = {}
        for pid in sorted(pids):
            # A process that has ended has no /proc entry: the collector yields nothing.
            collector = ProcessCollector(pid=functools.partial(int, pid), registry=None)
            for family in collector.collect():
                merged = families.setdefault(
                    family.name, Metric(family.name, family.documentation, family.type)
                )
                for sample in family.samples:
                    labels = {**sample.labels, "pid": str(pid)}
                    merged.add_sample(sample.name, labels, sample.value)
        return families.values()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@contextlib.contextmanager
def shared_metrics_directory(parent: Path) -> Iterator[Path]:
    """A directory under ``parent`` (the data directory: writable where the root file system
    is not) for the metrics of the processes started from here while the block runs, named
    in their environment; removed at the end, and at the next start if a serve that was
    killed left one."""
    parent.mkdir(parents=True, exist_ok=True)
    for stale in parent.glob(f"{_DIRECTORY_PREFIX}*"):
        owner = stale.name.removeprefix(_DIRECTORY_PREFIX)
        if owner.isdigit() and not _alive(int(owner)):
            shutil.rmtree(stale, ignore_errors=True)
    directory = parent / f"{_DIRECTORY_PREFIX}{os.getpid()}"
    shutil.rmtree(directory, ignore_errors=True)
    directory.mkdir(mode=0o700)
    previous = os.environ.get(MULTIPROCESS_DIRECTORY)
    os.environ[MULTIPROCESS_DIRECTORY] = str(directory)
    try:
        yield directory
    finally:
        if previous is None:
            os.environ.pop(MULTIPROCESS_DIRECTORY, None)
        else:
            os.environ[MULTIPROCESS_DIRECTORY] = previous
        shutil.rmtree(directory, ignore_errors=True)


__all__ = ["MULTIPROCESS_DIRECTORY", "exposition_registry", "shared_metrics_directory"]
