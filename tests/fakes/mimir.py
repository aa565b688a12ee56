"""A loopback fake of Grafana Mimir's Alertmanager configuration API.

Follows Mimir's documented behaviour (HTTP API reference, "Alertmanager" section, and
pkg/alertmanager/api.go): GET/POST/DELETE /api/v1/alerts for the tenant named by
X-Scope-OrgID (401 "no org id" without it); GET answers 200 with YAML `template_files` and
`alertmanager_config`, or 404 when the tenant has none; POST takes that YAML, validates it
(as Mimir does, with Alertmanager's own loader: here the real `amtool check-config`) and
answers 201, or 400 "error validating Alertmanager config: …"; DELETE answers 200 whether
or not a configuration existed. Credentials are checked the way a gateway in front of
Mimir does it (basic auth or a bearer token per tenant).
"""

from __future__ import annotations

import base64
import subprocess
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from tests.fakes.server import LoopbackServer, QuietHandler, serving

CONFIG_PATH = "/api/v1/alerts"


@dataclass
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]
    body: str


@dataclass
class FakeMimir:
    amtool: str | None
    # org id -> "Basic …" / "Bearer …" header value the gateway expects (absent: no auth).
    authorization: dict[str, str] = field(default_factory=dict)
    configs: dict[str, dict[str, Any]] = field(default_factory=dict)
    requests: list[RecordedRequest] = field(default_factory=list)
    max_config_size: int = 0
    storage_failing: bool = False
    server: LoopbackServer | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def url(self) -> str:
        assert self.server is not None, "the fake is not running"
        return self.server.url

    def expect_basic(self, org_id: str, username: str, password: str) -> None:
        token = base64.b64encode(f"{username}:{password}".encode()).decode()
        self.authorization[org_id] = f"Basic {token}"

    def expect_bearer(self, org_id: str, token: str) -> None:
        self.authorization[org_id] = f"Bearer {token}"

    def validate(self, user_config: dict[str, Any]) -> str | None:
        raw = user_config.get("alertmanager_config") or ""
        if raw == "":
            return (
                "configuration provided is empty, if you'd like to remove your configuration "
                "please use the delete configuration endpoint"
            )
        templates = user_config.get("template_files") or {}
        for name in templates:
            if "/" in name or name in (".", ".."):
                return f'invalid template name "{name}": the template name cannot contain any path'
        if self.amtool is None:
            return None
        with tempfile.TemporaryDirectory(prefix="fake-mimir-") as directory:
            for name, body in templates.items():
                (Path(directory) / name).write_text(body, encoding="utf-8")
            path = Path(directory) / "alertmanager.yml"
            path.write_text(raw, encoding="utf-8")
            checked = subprocess.run(
                [self.amtool, "check-config", str(path)],
                capture_output=True,
                text=True,
                timeout=30,
                check=False,
            )
        if checked.returncode != 0 or "FAILED" in checked.stdout:
            failed = [line for line in checked.stdout.splitlines() if "FAILED" in line]
            return failed[0].split("FAILED: ", 1)[-1] if failed else checked.stderr.strip()
        return None


def _handler(fake: FakeMimir) -> type[QuietHandler]:
    class Handler(QuietHandler):
        def _reply(self, status: int, text: str = "", content_type: str = "text/plain") -> None:
            body = text.encode()
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def _record(self) -> tuple[str | None, str]:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length).decode() if length else ""
            with fake.lock:
                fake.requests.append(
                    RecordedRequest(self.command, self.path, dict(self.headers.items()), body)
                )
            return self.headers.get("X-Scope-OrgID"), body

        def _authorised(self, org_id: str) -> bool:
            expected = fake.authorization.get(org_id)
            return expected is None or self.headers.get("Authorization") == expected

        def _tenant(self) -> tuple[str | None, str]:
            org_id, body = self._record()
            if self.path != CONFIG_PATH:
                self._reply(404, "404 page not found\n")
                return None, body
            if not org_id:
                self._reply(401, "no org id\n")
                return None, body
            if not self._authorised(org_id):
                self._reply(401, "authentication required\n")
                return None, body
            return org_id, body

        def do_GET(self) -> None:
            org_id, _ = self._tenant()
            if org_id is None:
                return
            config = fake.configs.get(org_id)
            if config is None:
                self._reply(404, "alertmanager storage object not found\n")
                return
            self._reply(200, yaml.safe_dump(config), "application/yaml")

        def do_POST(self) -> None:
            org_id, body = self._tenant()
            if org_id is None:
                return
            if fake.max_config_size and len(body.encode()) > fake.max_config_size:
                self._reply(
                    400,
                    f"Alertmanager configuration is too big, limit: {fake.max_config_size} bytes\n",
                )
                return
            try:
                loaded = yaml.safe_load(body) or {}
                if not isinstance(loaded, dict):
                    raise yaml.YAMLError("not a mapping")
            except yaml.YAMLError as exc:
                self._reply(400, f"error marshalling YAML Alertmanager config: {exc}\n")
                return
            problem = fake.validate(loaded)
            if problem is not None:
                self._reply(400, f"error validating Alertmanager config: {problem}\n")
                return
            if fake.storage_failing:
                self._reply(500, "unable to store the Alertmanager config: bucket unavailable\n")
                return
            fake.configs[org_id] = {
                "template_files": loaded.get("template_files") or {},
                "alertmanager_config": loaded["alertmanager_config"],
            }
            self.send_response(201)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def do_DELETE(self) -> None:
            org_id, _ = self._tenant()
            if org_id is None:
                return
            fake.configs.pop(org_id, None)
            self._reply(200)

    return Handler


@contextmanager
def running_fake_mimir(amtool: str | None) -> Iterator[FakeMimir]:
    fake = FakeMimir(amtool=amtool)
    with serving(_handler(fake)) as fake.server:
        yield fake
