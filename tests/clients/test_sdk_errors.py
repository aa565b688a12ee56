"""The SDK's errors name what went wrong by the status (``kind``) beside the spec's code,
which 401 and 403 answers do not carry."""

from __future__ import annotations

import pytest

from tenantplane_client import NO_RETRIES, ApiError, AsyncTenantplane, ErrorKind, Tenantplane
from tests.clients.conftest import Tenant
from tests.clients.proxy import Fault, Proxy

SMALL = {"cpu": "1", "memory": "1Gi", "storage": "1Gi"}


def refused(call: object) -> ApiError:
    assert callable(call)
    with pytest.raises(ApiError) as raised:
        call()
    return raised.value


def test_the_servers_refusals_carry_their_kind(tenant: Tenant) -> None:
    with Tenantplane(tenant.url, tenant.name, tenant.key, retry=NO_RETRIES) as api:
        readonly = api.apikeys.create({"displayName": "ro", "role": "readonly"}).key
        api.clusters.create({"name": "web", "resources": SMALL})
        api.members.add("dev@example.com", "readonly")
        seen = {
            "not_found": refused(lambda: api.clusters.get("nope")),
            "invalid": refused(lambda: api.members.add("not-an-email", "readonly")),
            "conflict": refused(lambda: api.members.add("dev@example.com", "readonly")),
            "precondition_failed": refused(
                lambda: api.clusters.patch("web", {"version": "1.33"}, if_match='"stale"')
            ),
        }
    bad_key = "svc_" + "x" * 43
    with Tenantplane(tenant.url, tenant.name, bad_key, retry=NO_RETRIES) as stranger:
        seen["unauthenticated"] = refused(stranger.get_tenant)
    with Tenantplane(tenant.url, tenant.name, readonly, retry=NO_RETRIES) as reader:
        seen["forbidden"] = refused(lambda: reader.members.add("x@example.com", "admin"))
    for kind, error in seen.items():
        assert error.kind is ErrorKind(kind), (kind, error.status, error.code)
        assert error.kind == kind
        assert f"{error.status} {kind}" in str(error)
    # 401 and 403 carry no code (the spec omits it): the kind is what tells them apart.
    assert (seen["unauthenticated"].status, seen["unauthenticated"].code) == (401, None)
    assert (seen["forbidden"].status, seen["forbidden"].code) == (403, None)


@pytest.mark.parametrize(
    ("status", "kind"),
    [
        (413, ErrorKind.invalid),
        (415, ErrorKind.invalid),
        (422, ErrorKind.invalid),
        (429, ErrorKind.rate_limited),
        (500, ErrorKind.server_error),
        (502, ErrorKind.unavailable),
        (503, ErrorKind.unavailable),
        (504, ErrorKind.unavailable),
        (405, ErrorKind.other),
    ],
)
def test_every_status_has_a_kind(
    tenant: Tenant, proxy: tuple[Proxy, str], status: int, kind: ErrorKind
) -> None:
    fake, url = proxy
    fake.inject(Fault(status, code="INJECTED"))
    with Tenantplane(url, tenant.name, tenant.key, retry=NO_RETRIES) as api:
        error = refused(api.clusters.list)
    assert (error.status, error.code, error.kind) == (status, "INJECTED", kind)
    assert str(error) == f"{status} {kind} INJECTED: injected"


@pytest.mark.parametrize("client_class", [Tenantplane, AsyncTenantplane])
@pytest.mark.parametrize("token", ["svc_abc…", "svc_abc def", "svc_abc\n", "", "svc_ümlaut"])
def test_a_token_no_key_has_is_refused_when_the_client_is_made(
    client_class: type[Tenantplane] | type[AsyncTenantplane], token: str
) -> None:
    """Not a UnicodeEncodeError (or a header refused) from inside the HTTP library later."""
    with pytest.raises(ValueError, match="never has"):
        client_class("http://127.0.0.1:9", "acme", token)
