"""The OpenAPI document is complete, consistent, and the one committed in docs/."""

from __future__ import annotations

from pathlib import Path

from tenantplane.http.openapi import CAMEL_CASE, render
from tests.contract.document import COMMITTED, operations, served_document

PUBLIC_API_OPERATIONS = {("POST", "/api/v1/webhooks/paddle")}


def test_committed_document_is_the_served_one(tmp_path: Path) -> None:
    served = render(served_document(tmp_path))
    committed = COMMITTED.read_text(encoding="utf-8") if COMMITTED.exists() else ""
    assert committed == served, (
        "docs/openapi.json differs from the served document: run `make openapi` and commit it"
    )


def test_every_operation_has_a_unique_camel_case_id(tmp_path: Path) -> None:
    ids = [op.get("operationId", "") for _, _, op in operations(served_document(tmp_path))]
    assert [i for i in ids if not CAMEL_CASE.match(i)] == []
    assert sorted(i for i in set(ids) if ids.count(i) > 1) == []


def test_named_operations_have_their_stable_ids(tmp_path: Path) -> None:
    by_id = {
        op["operationId"]: (method, path)
        for method, path, op in operations(served_document(tmp_path))
    }
    clusters = "/api/v1/tenants/{tenant}/clusters"
    assert by_id["listClusters"] == ("GET", clusters)
    assert by_id["createCluster"] == ("POST", clusters)
    assert by_id["getCluster"] == ("GET", clusters + "/{name}")
    assert by_id["updateCluster"] == ("PATCH", clusters + "/{name}")
    assert by_id["deleteCluster"] == ("DELETE", clusters + "/{name}")
    assert by_id["getConnectionDetails"] == ("GET", clusters + "/{name}/connection-details")
    assert by_id["listVersions"] == ("GET", "/api/v1/versions")
    assert by_id["revokeApiKey"] == ("DELETE", "/api/v1/tenants/{tenant}/apikeys/{id}")
    assert by_id["getAlertingConfig"] == ("GET", "/api/v1/tenants/{tenant}/alerting/config")
    assert by_id["putReceiver"] == ("PUT", "/api/v1/tenants/{tenant}/alerting/receivers/{name}")


def test_every_operation_has_summary_description_and_a_described_tag(tmp_path: Path) -> None:
    document = served_document(tmp_path)
    described_tags = {tag["name"] for tag in document["tags"] if tag.get("description")}
    incomplete = [
        f"{method} {path}"
        for method, path, op in operations(document)
        if not (op.get("summary") and op.get("description") and op.get("tags"))
        or not set(op["tags"]) <= described_tags
    ]
    assert incomplete == []


def test_api_operations_take_the_bearer_scheme_and_the_webhook_its_signature(
    tmp_path: Path,
) -> None:
    document = served_document(tmp_path)
    scheme = document["components"]["securitySchemes"]["bearer"]
    assert (scheme["type"], scheme["scheme"]) == ("http", "bearer")
    for method, path, op in operations(document):
        if not path.startswith("/api/v1/"):
            assert "security" not in op, f"{method} {path}"
        elif (method, path) in PUBLIC_API_OPERATIONS:
            assert op["security"] == [], f"{method} {path}"
        else:
            assert op["security"] == [{"bearer": []}], f"{method} {path}"
    webhook = document["paths"]["/api/v1/webhooks/paddle"]["post"]
    headers = {p["name"] for p in webhook["parameters"] if p["in"] == "header"}
    assert "Paddle-Signature" in headers


def test_error_statuses_are_documented_in_the_envelope(tmp_path: Path) -> None:
    document = served_document(tmp_path)
    envelope = "#/components/schemas/ErrorEnvelope"
    for method, path, op in operations(document):
        responses = op["responses"]
        # 422 only for a reused Idempotency-Key, on the operations that take one.
        takes_key = any(p["name"] == "Idempotency-Key" for p in op.get("parameters", []))
        assert ("422" in responses) == takes_key, f"{method} {path}"
        assert "405" in responses, f"{method} {path}"
        if "requestBody" in op:
            assert "413" in responses, f"{method} {path}"
        for status, response in responses.items():
            if status.startswith(("4", "5")):
                schema = response["content"]["application/json"]["schema"]
                assert schema == {"$ref": envelope}, f"{method} {path} {status}"
    keys = "/api/v1/tenants/{tenant}/apikeys/{id}"
    assert "404" in document["paths"][keys]["get"]["responses"]
    assert "404" in document["paths"][keys]["delete"]["responses"]
    assert "204" in document["paths"][keys]["delete"]["responses"]
    clusters = "/api/v1/tenants/{tenant}/clusters/{name}"
    assert "202" in document["paths"][clusters]["delete"]["responses"]
    assert "503" in document["paths"]["/readyz"]["get"]["responses"]


def test_fields_the_server_may_omit_are_not_required(tmp_path: Path) -> None:
    schemas = served_document(tmp_path)["components"]["schemas"]
    assert "haEnabledAt" in schemas["ClusterStatusRead"]["properties"]
    assert "haEnabledAt" not in schemas["ClusterStatusRead"]["required"]
    for name in ("ApiKeyRead", "ApiKeyCreated"):
        assert {"expiresAt", "lastUsedAt"} & set(schemas[name]["required"]) == set()
    assert "updatePaymentMethodURL" not in schemas["PortalSessionRead"]["required"]


def test_operations_endpoints_have_their_real_shapes(tmp_path: Path) -> None:
    paths = served_document(tmp_path)["paths"]
    metrics = paths["/metrics"]["get"]["responses"]["200"]["content"]
    assert list(metrics) == ["text/plain"]
    for path in ("/healthz", "/readyz"):
        schema = paths[path]["get"]["responses"]["200"]["content"]["application/json"]["schema"]
        assert schema["$ref"].startswith("#/components/schemas/")


def test_names_and_types_carry_their_constraints(tmp_path: Path) -> None:
    document = served_document(tmp_path)
    schemas = document["components"]["schemas"]
    cluster_name = schemas["ClusterCreate"]["properties"]["name"]
    # Shorter than the spec's 63: the Kubernetes objects of a cluster embed its name (docs/api.md).
    assert (cluster_name["minLength"], cluster_name["maxLength"]) == (2, 47)
    assert cluster_name["pattern"] == schemas["SecretCreate"]["properties"]["name"]["pattern"]
    assert schemas["ClusterCreate"]["properties"]["type"]["enum"] == ["shared"]
    get_key = document["paths"]["/api/v1/tenants/{tenant}/apikeys/{id}"]["get"]
    params = {p["name"]: p["schema"] for p in get_key["parameters"]}
    assert params["id"]["pattern"].startswith("^ak-")
    assert params["tenant"]["maxLength"] == 63
