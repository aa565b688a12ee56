"""Grafana Mimir's multi-tenant Alertmanager configuration API.

GET/POST/DELETE {MIMIR_URL}/api/v1/alerts with the tenant in X-Scope-OrgID. The body is
YAML: ``alertmanager_config`` (the configuration file as a string) and ``template_files``
(file name -> contents). POST answers 201, DELETE 200, GET 404 when the tenant has none;
an invalid configuration is a 400 whose text says why.
"""

from __future__ import annotations

from typing import Any

import httpx
import structlog
import yaml

from tenantplane.providers.alerting.base import (
    AlertingBackend,
    BackendRejected,
    BackendUnavailable,
    Credentials,
    Document,
    Target,
)
from tenantplane.providers.alerting.render import document_from_alertmanager, tenant_yaml
from tenantplane.providers.http_pool import PooledClient

log = structlog.get_logger(__name__)
CONFIG_PATH = "/api/v1/alerts"


def _auth_headers(credentials: Credentials) -> dict[str, str]:
    headers = {"X-Scope-OrgID": credentials.org_id}
    if credentials.auth == "bearer" and credentials.secret:
        headers["Authorization"] = f"Bearer {credentials.secret}"
    return headers


def _basic_auth(credentials: Credentials) -> httpx.BasicAuth | None:
    if credentials.auth == "basic":
        return httpx.BasicAuth(credentials.username or "", credentials.secret or "")
    return None


def user_config_yaml(document: Document) -> str:
    body = {
        "template_files": dict(sorted(document["templates"].items())),
        "alertmanager_config": tenant_yaml(document),
    }
    return yaml.safe_dump(body, sort_keys=False, allow_unicode=True)


class MimirClient:
    def __init__(self, base_url: str, timeout: float) -> None:
        self.base_url = base_url.rstrip("/")
        self.http = PooledClient(timeout=timeout)

    async def _request(
        self, method: str, credentials: Credentials, content: str | None = None
    ) -> httpx.Response:
        headers = _auth_headers(credentials)
        if content is not None:
            headers["Content-Type"] = "application/yaml"
        try:
            return await self.http.client.request(
                method,
                self.base_url + CONFIG_PATH,
                headers=headers,
                auth=_basic_auth(credentials),
                content=content,
            )
        except httpx.HTTPError as exc:
            log.warning("mimir unreachable", error=str(exc), method=method)
            raise BackendUnavailable(f"Mimir is unreachable: {type(exc).__name__}") from exc

    @staticmethod
    def _fail(response: httpx.Response, action: str) -> None:
        text = response.text.strip()
        if response.status_code == 400:
            raise BackendRejected(f"Mimir rejected the configuration: {text}")
        log.warning("mimir error", action=action, status=response.status_code, body=text[:500])
        raise BackendUnavailable(f"Mimir answered {response.status_code} to {action}")

    async def get(self, credentials: Credentials) -> dict[str, Any] | None:
        response = await self._request("GET", credentials)
        if response.status_code == 404:
            return None
        if response.status_code != 200:
            self._fail(response, "reading the configuration")
        loaded = yaml.safe_load(response.text)
        return loaded if isinstance(loaded, dict) else None

    async def set(self, credentials: Credentials, body: str) -> None:
        response = await self._request("POST", credentials, body)
        if response.status_code not in (200, 201):
            self._fail(response, "storing the configuration")

    async def delete(self, credentials: Credentials) -> None:
        response = await self._request("DELETE", credentials)
        if response.status_code not in (200, 204, 404):
            self._fail(response, "deleting the configuration")


class MimirBackend(AlertingBackend):
    name = "mimir"
    needs_credentials = True

    def __init__(self, base_url: str, timeout: float = 10.0) -> None:
        self.client = MimirClient(base_url, timeout)

    async def fetch(self, target: Target) -> Document | None:
        """A tenant's existing configuration in Mimir, adopted on its first use here."""
        assert target.credentials is not None
        stored = await self.client.get(target.credentials)
        if stored is None:
            return None
        try:
            config = yaml.safe_load(stored.get("alertmanager_config") or "")
        except yaml.YAMLError:
            return None
        templates = stored.get("template_files") or {}
        if not isinstance(config, dict) or not isinstance(templates, dict):
            return None
        return document_from_alertmanager(config, templates)

    async def apply(self, target: Target, document: Document) -> None:
        assert target.credentials is not None
        await self.client.set(target.credentials, user_config_yaml(document))

    async def remove(self, target: Target) -> None:
        assert target.credentials is not None
        await self.client.delete(target.credentials)

    async def aclose(self) -> None:
        await self.client.http.aclose()
