"""The served OpenAPI document types every alerting operation, and what the API answers
conforms to those types (for every configuration Alertmanager accepts in the corpus)."""

from __future__ import annotations

from typing import Any

import httpx
from fastapi import FastAPI
from pydantic import BaseModel

from tenantplane.alerting.openapi import (
    AlertingConfig,
    AlertingGlobalConfig,
    AlertingReceiver,
    AlertingReceiverList,
    AlertingRoute,
    AlertingRouteList,
)
from tenantplane.alerting.schemas import TemplateList, TemplateRead, TimeIntervalList
from tests.alerting.corpus import VALID
from tests.alerting.test_config_api import get, put
from tests.factories import Factory


def _alerting_operations(app: FastAPI) -> list[tuple[str, str, dict[str, Any]]]:
    return [
        (method, path, operation)
        for path, operations in app.openapi()["paths"].items()
        if "/alerting/" in path
        for method, operation in operations.items()
    ]


def _is_typed(schema: dict[str, Any]) -> bool:
    """A component reference, not an untyped object."""
    return "$ref" in schema and "additionalProperties" not in schema


async def test_every_alerting_operation_has_typed_bodies_summaries_and_statuses(
    app: FastAPI,
) -> None:
    operations = _alerting_operations(app)
    assert len(operations) == 23
    for method, path, operation in operations:
        where = f"{method} {path}"
        assert operation.get("summary"), where
        assert operation.get("description"), where
        assert operation["tags"] == ["alerting"], where
        responses = operation["responses"]
        for status in ("400", "401", "403", "503"):
            assert status in responses, (where, status)
        if method == "delete" and not path.endswith("/config"):
            assert {"204", "404", "412"} <= set(responses), where
            continue
        success = responses["200"]["content"]["application/json"]["schema"]
        assert _is_typed(success), (where, success)
        if method == "put":
            assert "412" in responses, where
            body = operation["requestBody"]["content"]["application/json"]["schema"]
            assert _is_typed(body), (where, body)
            creates = path.split("/")[-1].startswith("{")
            assert ("201" in responses) == creates, where
        if "{" in path.split("/")[-1] and method == "get":
            assert "404" in responses, where


def _conforms(model: type[BaseModel], value: Any) -> None:
    # The models forbid unknown fields, so anything the schema does not describe fails.
    model.model_validate(value, by_alias=True)


async def test_answers_conform_to_the_declared_schemas(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    tenant = await factory.tenant()
    for name, config in VALID:
        written = await put(client, tenant, "config", config)
        assert written.status_code == 200, (name, written.text)
        _conforms(AlertingConfig, written.json())
        _conforms(AlertingConfig, (await get(client, tenant, "config")).json())
        _conforms(AlertingReceiverList, (await get(client, tenant, "receivers")).json())
        for receiver in config.get("receivers", []):
            one = await get(client, tenant, f"receivers/{receiver['name']}")
            _conforms(AlertingReceiver, one.json())
        _conforms(AlertingRoute, (await get(client, tenant, "route")).json())
        _conforms(AlertingRouteList, (await get(client, tenant, "routes")).json())
        _conforms(AlertingGlobalConfig, (await get(client, tenant, "global")).json())
        _conforms(TemplateList, (await get(client, tenant, "templates")).json())
        for filename in config.get("templates", {}):
            _conforms(TemplateRead, (await get(client, tenant, f"templates/{filename}")).json())
        _conforms(TimeIntervalList, (await get(client, tenant, "time-intervals")).json())
