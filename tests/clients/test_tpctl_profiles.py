"""A profile tpctl cannot use is a configuration error (exit 3) that says what is wrong, at
once: not a traceback, and not 'Unreachable' after the retries."""

from __future__ import annotations

import pytest

from tests.clients.conftest import Run, Tenant, ok


@pytest.mark.parametrize(
    ("url", "said"),
    [
        ("localhost:8080", "http:// or https://"),
        ("ftp://127.0.0.1:21", "http:// or https://"),
        ("http://", "no host"),
        ("not a url", "http:// or https://"),
    ],
)
def test_a_url_that_is_no_http_origin_is_refused(tpctl: Run, url: str, said: str) -> None:
    refused = tpctl("tenant", "get", env={"TPCTL_URL": url})
    assert refused.returncode == 3, refused.stderr
    assert refused.stderr.startswith(f"Configuration: TPCTL_URL or the profile's url {url!r}")
    assert said in refused.stderr
    assert "Traceback" not in refused.stderr


@pytest.mark.parametrize(
    "credential",
    ["svc_abc…", "svc_abc def", "svc_abc\nInjected: 1", "svc_ключ"],
    ids=["ellipsis", "space", "newline", "cyrillic"],
)
def test_a_credential_a_header_cannot_carry_is_refused(tpctl: Run, credential: str) -> None:
    refused = tpctl("tenant", "get", env={"TPCTL_API_KEY": credential})
    assert refused.returncode == 3, refused.stderr
    assert refused.stderr == (
        "Configuration: the API key or token holds characters an API key or token never has "
        "(spaces, line breaks, non-ASCII): was it cut or pasted with extra text?\n"
    )
    # Nor is it printed back: it may be most of a real key.
    assert credential not in refused.stderr


def test_a_usable_profile_still_works(tpctl: Run, tenant: Tenant) -> None:
    assert ok(tpctl("tenant", "get", env={"TPCTL_URL": tenant.url + "/"}))["name"] == tenant.name


def test_token_refuses_a_credential_a_header_cannot_carry(tpctl: Run) -> None:
    """kubectl would send what `tpctl token` prints: a cut key is refused there too."""
    refused = tpctl("token", "--cluster", "web", env={"TPCTL_API_KEY": "svc_abc…"})
    assert refused.returncode == 3, refused.stdout
    assert refused.stdout == ""
    assert refused.stderr.startswith("Configuration: the API key or token holds characters")
