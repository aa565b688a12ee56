"""One shared Prometheus Alertmanager for every tenant.

Each tenant's tree is rendered under a root route that matches tenant="<name>", so a
tenant's routes only ever see that tenant's alerts. Receiver and time-interval names are
prefixed with "<tenant>/" and template files with "<tenant>__"; template definitions share
one namespace in Alertmanager, so a tenant's `define`/`block` names must start with
"<tenant>.". The file is written atomically, then `POST /-/reload`; a failed reload puts
the previous files back (and reloads them) before the write is refused.
"""

from __future__ import annotations

import asyncio
import fcntl
import re
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from pathlib import Path

import httpx
import structlog

from tenantplane.files import private_directory, private_lock_file, write_private
from tenantplane.providers.alerting.base import (
    AlertingBackend,
    BackendNamingError,
    BackendRejected,
    BackendUnavailable,
    Document,
    Target,
)
from tenantplane.providers.alerting.render import dump_yaml, shared_config, shared_template_files
from tenantplane.providers.http_pool import PooledClient

log = structlog.get_logger(__name__)
TEMPLATE_DIR = "templates"
_DEFINITION = re.compile(r"\{\{-?\s*(?:define|block)\s+(\"(?:[^\"\\]|\\.)*\"|`[^`]*`)")

Snapshot = dict[Path, str | None]


def _atomic_write(path: Path, contents: str) -> None:
    # Owner-only: the configuration holds the receivers' credentials of every tenant.
    write_private(path, contents)


class SharedAlertmanagerBackend(AlertingBackend):
    name = "alertmanager"
    renders_all_tenants = True

    def __init__(self, url: str, config_file: Path, timeout: float = 10.0) -> None:
        self.url = url.rstrip("/")
        self.config_file = config_file
        self.template_dir = config_file.parent / TEMPLATE_DIR
        self.http = PooledClient(timeout=timeout)
        self._render = asyncio.Lock()

    @asynccontextmanager
    async def render_lock(self) -> AsyncIterator[None]:
        # One render at a time in this process, and across the processes sharing the file
        # (an exclusive flock beside it), so that the last render holds every change.
        async with self._render:
            # Owner-only, as the files beside it (tenantplane.files).
            lock_path = self.config_file.with_name(f".{self.config_file.name}.lock")
            with private_lock_file(lock_path) as handle:
                await asyncio.to_thread(fcntl.flock, handle, fcntl.LOCK_EX)
                try:
                    yield
                finally:
                    fcntl.flock(handle, fcntl.LOCK_UN)

    def check(self, tenant: str, document: Document) -> None:
        prefix = f"{tenant}."
        for filename, contents in document["templates"].items():
            for match in _DEFINITION.finditer(contents):
                name = match.group(1)[1:-1]
                if not name.startswith(prefix):
                    raise BackendNamingError(
                        f'template {filename} defines "{name}": on this deployment template '
                        f'names must start with "{prefix}" (one Alertmanager serves all tenants)',
                        f"templates.{filename}",
                        "TEMPLATE_NAME_NOT_NAMESPACED",
                    )

    async def apply(self, target: Target, document: Document) -> None:
        await self.write_all(target.all_documents)

    async def remove(self, target: Target) -> None:
        await self.write_all(target.all_documents)

    async def write_all(self, documents: Mapping[str, Document]) -> None:
        config = dump_yaml(shared_config(documents, TEMPLATE_DIR))
        templates = shared_template_files(documents)
        snapshot = self._snapshot()
        self._write(config, templates)
        try:
            await self.reload()
        except (BackendRejected, BackendUnavailable):
            self._restore(snapshot)
            try:
                await self.reload()
            except (BackendRejected, BackendUnavailable) as exc:
                log.error(
                    "alertmanager reload of the previous configuration failed", error=str(exc)
                )
            raise

    def _snapshot(self) -> Snapshot:
        snapshot: Snapshot = {self.config_file: None}
        if self.config_file.exists():
            snapshot[self.config_file] = self.config_file.read_text(encoding="utf-8")
        if self.template_dir.is_dir():
            for path in self.template_dir.iterdir():
                if path.is_file() and not path.name.startswith("."):
                    snapshot[path] = path.read_text(encoding="utf-8")
        return snapshot

    def _write(self, config: str, templates: dict[str, str]) -> None:
        private_directory(self.template_dir)
        for name, contents in templates.items():
            _atomic_write(self.template_dir / name, contents)
        for path in self.template_dir.iterdir():
            if path.is_file() and not path.name.startswith(".") and path.name not in templates:
                path.unlink()
        _atomic_write(self.config_file, config)

    def _restore(self, snapshot: Snapshot) -> None:
        for path in self.template_dir.iterdir():
            if path.is_file() and path not in snapshot:
                path.unlink()
        for path, contents in snapshot.items():
            if contents is None:
                path.unlink(missing_ok=True)
            else:
                _atomic_write(path, contents)

    async def reload(self) -> None:
        try:
            response = await self.http.client.post(self.url + "/-/reload")
        except httpx.HTTPError as exc:
            raise BackendUnavailable(f"Alertmanager is unreachable: {type(exc).__name__}") from exc
        if response.status_code == 200:
            return
        text = response.text.strip()
        if response.status_code == 500 and "reload" in text:
            raise BackendRejected(f"Alertmanager rejected the configuration: {text}")
        raise BackendUnavailable(f"Alertmanager answered {response.status_code} to a reload")

    async def aclose(self) -> None:
        await self.http.aclose()
