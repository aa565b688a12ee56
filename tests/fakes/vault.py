"""A loopback fake of Vault's KV version 2 HTTP API, written from Vault's documentation.

What it implements (https://developer.hashicorp.com/vault/api-docs/secret/kv/kv-v2):
- token auth: ``X-Vault-Token`` (or ``Authorization: Bearer``); a missing or wrong token is
  403 ``{"errors":["permission denied"]}``;
- ``GET|POST|PUT|DELETE /v1/<mount>/data/<path>``: read, write a new version, soft-delete the
  current version; a read of a missing path, or of a deleted version, is 404;
- ``GET|DELETE /v1/<mount>/metadata/<path>``: versions and timestamps, no data; 404
  ``{"errors":[]}`` when the path does not exist;
- ``LIST /v1/<mount>/metadata/<folder>`` (also ``GET …?list=true``): the keys directly under
  the folder, sub-folders with a trailing ``/``: ``{"data":{"keys":[...]}}``; 404 when empty;
- ``GET /v1/sys/mounts``: the KV v2 mounts;
- an unknown mount is 404 ``no handler for route``, as Vault answers with a privileged token;
- what a per-cluster Kubernetes auth mount needs
  (https://developer.hashicorp.com/vault/api-docs/system/auth,
  .../system/policies, .../auth/kubernetes): ``GET /v1/sys/auth``, ``POST|DELETE
  /v1/sys/auth/<path>``, ``GET|POST /v1/auth/<path>/config`` and ``/role/<name>``,
  ``GET|PUT|DELETE /v1/sys/policies/acl/<name>``, kept as written (nothing is enforced).

It records every request (method and path) so that tests can prove which endpoints were used,
and the client port of each, so that they can count the connections a client opened.
Served by uvicorn with the h11 parser in a thread: the default httptools parser refuses the
non-standard LIST method.
"""

from __future__ import annotations

import asyncio
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.background import BackgroundTask
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from tests.fakes.server import Hold, Holds, serving_asgi

PERMISSION_DENIED = {"errors": ["permission denied"]}


def _now() -> str:
    return datetime.now(UTC).isoformat().replace("+00:00", "Z")


@dataclass
class Version:
    data: dict[str, Any]
    created_time: str = field(default_factory=_now)
    deletion_time: str = ""
    destroyed: bool = False

    def metadata(self, number: int) -> dict[str, Any]:
        return {
            "created_time": self.created_time,
            "custom_metadata": None,
            "deletion_time": self.deletion_time,
            "destroyed": self.destroyed,
            "version": number,
        }


@dataclass
class Entry:
    versions: list[Version] = field(default_factory=list)
    created_time: str = field(default_factory=_now)
    updated_time: str = field(default_factory=_now)

    @property
    def current_version(self) -> int:
        return len(self.versions)

    def metadata(self) -> dict[str, Any]:
        return {
            "cas_required": False,
            "created_time": self.created_time,
            "current_version": self.current_version,
            "custom_metadata": None,
            "delete_version_after": "0s",
            "max_versions": 0,
            "oldest_version": 0,
            "updated_time": self.updated_time,
            "versions": {
                str(number): {
                    key: value
                    for key, value in version.metadata(number).items()
                    if key in {"created_time", "deletion_time", "destroyed"}
                }
                for number, version in enumerate(self.versions, start=1)
            },
        }


class FakeVault:
    def __init__(self, token: str | None = None) -> None:
        self.token = token or f"hvs.{uuid.uuid4().hex}"
        self.mounts: dict[str, dict[str, Entry]] = {}
        # Auth mounts: path -> {"type", "description", "config", "roles": {name: body}}.
        self.auth_mounts: dict[str, dict[str, Any]] = {}
        self.policies: dict[str, str] = {}
        self.requests: list[tuple[str, str]] = []
        self.client_ports: set[int] = set()
        self.server: uvicorn.Server | None = None
        self._lock = threading.Lock()
        self.holds = Holds()
        self.app = Starlette(
            routes=[
                Route(
                    "/v1/{route:path}",
                    self._dispatch,
                    methods=["GET", "LIST", "POST", "PUT", "DELETE"],
                )
            ]
        )

    @property
    def connections(self) -> int:
        """Connections clients opened so far."""
        with self._lock:
            return len(self.client_ports)

    @property
    def open_connections(self) -> int:
        """Connections still open (uvicorn forgets one when its client closes it)."""
        assert self.server is not None, "the fake is not running"
        return len(self.server.server_state.connections)

    # -- setting up state directly (what an operator's `vault` CLI would do) --------------

    def enable_kv2(self, mount: str) -> None:
        with self._lock:
            self.mounts.setdefault(mount, {})

    def put(self, mount: str, path: str, data: dict[str, Any]) -> int:
        with self._lock:
            entry = self.mounts[mount].setdefault(path, Entry())
            entry.versions.append(Version(dict(data)))
            entry.updated_time = _now()
            return entry.current_version

    def delete_current(self, mount: str, path: str) -> None:
        with self._lock:
            self.mounts[mount][path].versions[-1].deletion_time = _now()

    def delete_metadata(self, mount: str, path: str) -> None:
        with self._lock:
            self.mounts[mount].pop(path, None)

    def values(self) -> list[str]:
        """Every value stored, for checking that none ever leaves the vault."""
        with self._lock:
            return [
                str(value)
                for entries in self.mounts.values()
                for entry in entries.values()
                for version in entry.versions
                for value in version.data.values()
            ]

    def hold_next(self, method: str, prefix: str, *, timeout: float = 300.0) -> Hold:
        """Hold the next ``method`` call whose route (below ``/v1/``) starts with ``prefix``
        until released (or ``timeout``), then answer it."""
        return self.holds.add(method, prefix, timeout)

    # -- the HTTP API ----------------------------------------------------------------------

    async def _dispatch(self, request: Request) -> Response:
        route = request.path_params["route"]
        self.requests.append((request.method, route))
        hold = self.holds.take(request.method, route)
        if hold is None:
            return await self._answer(request, route)
        await asyncio.to_thread(hold.wait)
        response = await self._answer(request, route)
        # Background tasks run once the whole answer is sent.
        response.background = BackgroundTask(hold.answered.set)
        return response

    async def _answer(self, request: Request, route: str) -> Response:
        if request.client is not None:
            with self._lock:
                self.client_ports.add(request.client.port)
        if not self._authorized(request):
            return JSONResponse(PERMISSION_DENIED, status_code=403)
        if route in {"sys/mounts", "sys/mounts/"} and request.method == "GET":
            return self._mounts()
        if route.startswith(("sys/auth", "auth/", "sys/policies/acl/")):
            return await self._auth(request, route)
        mount, _, rest = route.partition("/")
        kind, _, path = rest.partition("/")
        entries = self.mounts.get(mount)
        if entries is None or kind not in {"data", "metadata"}:
            return _no_handler(request.method, route)
        listing = request.method == "LIST" or (
            request.method == "GET" and request.query_params.get("list") == "true"
        )
        if kind == "metadata":
            if listing:
                return self._list(entries, path)
            return await self._metadata(request, entries, mount, path)
        return await self._data(request, mount, path)

    def _authorized(self, request: Request) -> bool:
        token = request.headers.get("x-vault-token")
        if token is None:
            scheme, _, value = request.headers.get("authorization", "").partition(" ")
            token = value if scheme.lower() == "bearer" else None
        return token == self.token

    def _mounts(self) -> JSONResponse:
        mounts = {
            f"{mount}/": {
                "type": "kv",
                "description": "",
                "options": {"version": "2"},
                "config": {"default_lease_ttl": 0, "max_lease_ttl": 0},
            }
            for mount in self.mounts
        }
        return JSONResponse({**mounts, "data": mounts})

    async def _auth(self, request: Request, route: str) -> Response:
        method = request.method
        body = await request.json() if method in {"POST", "PUT"} else {}
        if route.rstrip("/") == "sys/auth" and method == "GET":
            listed = {
                f"{path}/": {"type": mount["type"], "description": mount["description"]}
                for path, mount in self.auth_mounts.items()
            }
            return JSONResponse({**listed, "data": listed})
        if route.startswith("sys/auth/"):
            path = route.removeprefix("sys/auth/").strip("/")
            if method == "DELETE":
                self.auth_mounts.pop(path, None)
                return Response(status_code=204)
            if path in self.auth_mounts:
                return JSONResponse({"errors": ["path is already in use"]}, status_code=400)
            self.auth_mounts[path] = {
                "type": body["type"],
                "description": body.get("description", ""),
                "config": None,
                "roles": {},
            }
            return Response(status_code=204)
        if route.startswith("sys/policies/acl/"):
            name = route.removeprefix("sys/policies/acl/")
            if method == "DELETE":
                self.policies.pop(name, None)
                return Response(status_code=204)
            if method == "PUT" or method == "POST":
                self.policies[name] = body["policy"]
                return Response(status_code=204)
            if name not in self.policies:
                return JSONResponse({"errors": []}, status_code=404)
            return _ok({"name": name, "policy": self.policies[name]})
        path, _, rest = route.removeprefix("auth/").partition("/")
        mount = self.auth_mounts.get(path)
        if mount is None:
            return _no_handler(method, route)
        if rest == "config":
            if method == "POST":
                mount["config"] = body
                return Response(status_code=204)
            if mount["config"] is None:
                return JSONResponse({"errors": []}, status_code=404)
            return _ok(dict(mount["config"]))
        name = rest.removeprefix("role/")
        if method == "POST":
            policies = body.get("token_policies") or body.get("policies") or []
            mount["roles"][name] = {**body, "token_policies": policies, "policies": policies}
            return Response(status_code=204)
        if name not in mount["roles"]:
            return JSONResponse({"errors": []}, status_code=404)
        return _ok(dict(mount["roles"][name]))

    def _list(self, entries: dict[str, Entry], folder: str) -> JSONResponse:
        prefix = folder if not folder or folder.endswith("/") else f"{folder}/"
        keys: set[str] = set()
        for path in entries:
            if path.startswith(prefix):
                head, slash, _ = path[len(prefix) :].partition("/")
                keys.add(head + slash)
        if not keys:
            return JSONResponse({"errors": []}, status_code=404)
        return _ok({"keys": sorted(keys)})

    async def _metadata(
        self, request: Request, entries: dict[str, Entry], mount: str, path: str
    ) -> Response:
        if request.method == "DELETE":
            self.delete_metadata(mount, path)
            return Response(status_code=204)
        if request.method != "GET":
            return JSONResponse({"errors": ["unsupported operation"]}, status_code=405)
        entry = entries.get(path)
        if entry is None:
            return JSONResponse({"errors": []}, status_code=404)
        return _ok(entry.metadata())

    async def _data(self, request: Request, mount: str, path: str) -> Response:
        entries = self.mounts[mount]
        if request.method in {"POST", "PUT"}:
            body = await request.json()
            data = body.get("data") if isinstance(body, dict) else None
            if not isinstance(data, dict):
                return JSONResponse({"errors": ["no data provided"]}, status_code=400)
            number = self.put(mount, path, data)
            return _ok(entries[path].versions[number - 1].metadata(number))
        entry = entries.get(path)
        if entry is None or not entry.versions:
            return JSONResponse({"errors": []}, status_code=404)
        if request.method == "DELETE":
            self.delete_current(mount, path)
            return Response(status_code=204)
        if request.method != "GET":
            return JSONResponse({"errors": ["unsupported operation"]}, status_code=405)
        number = int(request.query_params.get("version") or entry.current_version)
        if not 1 <= number <= entry.current_version:
            return JSONResponse({"errors": []}, status_code=404)
        version = entry.versions[number - 1]
        if version.deletion_time or version.destroyed:
            # Vault answers 404 with the version's metadata and no data.
            return _ok({"data": None, "metadata": version.metadata(number)}, status=404)
        return _ok({"data": dict(version.data), "metadata": version.metadata(number)})


def _ok(data: dict[str, Any], status: int = 200) -> JSONResponse:
    return JSONResponse(
        {
            "request_id": str(uuid.uuid4()),
            "lease_id": "",
            "renewable": False,
            "lease_duration": 0,
            "data": data,
            "wrap_info": None,
            "warnings": None,
            "auth": None,
        },
        status_code=status,
    )


def _no_handler(method: str, route: str) -> JSONResponse:
    return JSONResponse(
        {"errors": [f'1 error occurred:\n\t* unsupported path: no handler for route "{route}"']},
        status_code=404,
    )


@contextmanager
def serve(vault: FakeVault) -> Iterator[str]:
    """Serve ``vault`` on a loopback port in a thread; yields its address."""
    with serving_asgi(
        vault.app,
        "vault",
        # Idle connections stay open until the client closes them (uvicorn's default closes
        # them after 5 s, which would hide a client that never does).
        timeout_keep_alive=3600,
    ) as (address, server):
        vault.server = server
        yield address
