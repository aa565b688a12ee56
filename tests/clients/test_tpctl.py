"""tpctl, the installed console script, against a real server process."""

from __future__ import annotations

import json
import stat
import subprocess
from pathlib import Path
from typing import Any

import yaml

from tests.clients.conftest import Run, Tenant, ok
from tests.clients.proxy import Fault, Proxy

KUBECTL = "/usr/bin/kubectl"


def said(result: subprocess.CompletedProcess[str], message: str) -> None:
    """A command that prints nothing on standard output said what it did on standard error."""
    assert result.returncode == 0, result.stderr
    assert result.stdout == ""
    assert result.stderr.strip() == message


def test_version_and_completion(tpctl: Run) -> None:
    assert tpctl("--version").stdout.startswith("tpctl ")
    completion = tpctl(
        "--show-completion", "bash", env={"_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION": "1"}
    )
    assert completion.returncode == 0
    assert "tpctl" in completion.stdout


def test_profiles_and_environment_overrides(tpctl: Run, tenant: Tenant, home: Path) -> None:
    no_env = {"TPCTL_URL": "", "TPCTL_TENANT": "", "TPCTL_API_KEY": ""}
    missing = tpctl("tenant", "get", env=no_env)
    assert missing.returncode == 3
    assert "TPCTL_URL" in missing.stderr
    ok(
        tpctl(
            "config",
            "set-profile",
            "work",
            "--url",
            tenant.url,
            "--tenant",
            tenant.name,
            "--api-key",
            tenant.key,
            env=no_env,
        )
    )
    ok(
        tpctl(
            "config",
            "set-profile",
            "other",
            "--url",
            "http://127.0.0.1:9",
            "--tenant",
            "x",
            "--api-key",
            "svc_nothing",
            env=no_env,
        )
    )
    path = home / ".config" / "tpctl" / "config.yaml"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert ok(tpctl("tenant", "get", env=no_env))["name"] == tenant.name
    ok(tpctl("config", "use", "other", env=no_env))
    view = yaml.safe_load(tpctl("config", "view", env=no_env).stdout)
    assert view["current"] == "other"
    assert view["profiles"]["work"]["api_key"] == "****"
    assert tenant.key not in tpctl("config", "view", env=no_env).stdout
    # The environment overrides the profile field by field.
    assert tpctl("tenant", "get", env=no_env).returncode == 8  # "other": nothing listens
    # The environment overrides the current profile's url, tenant and key.
    assert ok(tpctl("tenant", "get"))["name"] == tenant.name
    assert ok(tpctl("--profile", "work", "tenant", "get", env=no_env))["name"] == tenant.name
    assert tpctl("config", "use", "nope", env=no_env).returncode == 3


def test_clusters_create_wait_upgrade_kubeconfig(tpctl: Run, tenant: Tenant, home: Path) -> None:
    versions = ok(tpctl("versions", "list"))
    ordered = sorted(
        (item["version"] for item in versions),
        key=lambda version: tuple(int(part) for part in version.split(".")),
    )
    created = tpctl(
        "clusters",
        "create",
        "web",
        "--version",
        ordered[0],
        "--ha",
        "--cpu",
        "1",
        "--memory",
        "1Gi",
        "--storage",
        "1Gi",
        "--wait",
        "--interval",
        "0.05",
        "--timeout",
        "60",
    )
    cluster = ok(created)
    assert cluster["status"]["phase"] == "Running"
    assert cluster["status"]["haConfigured"] is True
    assert "phase Running" in created.stderr
    assert "control plane 3/3" in created.stderr
    listed = ok(tpctl("clusters", "list"))
    assert [item["name"] for item in listed] == ["web"]
    table = tpctl("clusters", "list", "-o", "table")
    assert "web" in table.stdout
    assert "PHASE" in table.stdout
    as_yaml = yaml.safe_load(tpctl("clusters", "get", "web", "-o", "yaml").stdout)
    assert as_yaml["name"] == "web"
    upgraded = ok(
        tpctl(
            "clusters",
            "upgrade",
            "web",
            "--version",
            ordered[1],
            "--wait",
            "--interval",
            "0.05",
            "--timeout",
            "60",
        )
    )
    assert upgraded["version"] == ordered[1]
    assert upgraded["status"]["phase"] == "Running"
    details = ok(tpctl("clusters", "connection-details", "web"))

    # Merged into an existing kubeconfig: the other entries and the file's mode survive.
    kube = home / ".kube" / "config"
    kube.parent.mkdir()
    existing = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "prod", "cluster": {"server": "https://prod.example:6443"}}],
        "users": [{"name": "prod", "user": {"token": "keep-me"}}],
        "contexts": [{"name": "prod", "context": {"cluster": "prod", "user": "prod"}}],
        "current-context": "prod",
    }
    kube.write_text(yaml.safe_dump(existing))
    # Its settings come from the environment: the profile kubectl's `tpctl token` names is
    # saved, once.
    first = tpctl("kubeconfig", "web")
    assert first.returncode == 0, first.stderr
    assert "Profile default saved in" in first.stderr
    saved = yaml.safe_load((home / ".config" / "tpctl" / "config.yaml").read_text())
    assert saved["profiles"]["default"]["tenant"] == tenant.name
    again = tpctl("kubeconfig", "web")  # again: the same entries, nothing doubled
    assert "Profile" not in again.stderr
    assert stat.S_IMODE(kube.stat().st_mode) == 0o600
    viewed = subprocess.run(
        [KUBECTL, "config", "view", "--kubeconfig", str(kube), "--raw", "-o", "json"],
        capture_output=True,
        text=True,
        check=True,
    )
    config = json.loads(viewed.stdout)
    context = f"{tenant.name}-web"
    assert config["current-context"] == context
    assert sorted(item["name"] for item in config["contexts"]) == sorted(["prod", context])
    clusters = {item["name"]: item["cluster"] for item in config["clusters"]}
    assert clusters["prod"]["server"] == "https://prod.example:6443"
    assert clusters[context]["server"] == details["endpoint"]
    assert clusters[context]["certificate-authority-data"] == details["certificateAuthority"]
    users = {item["name"]: item["user"] for item in config["users"]}
    assert users["prod"] == {"token": "keep-me"}
    plugin = users[context]["exec"]
    assert plugin["apiVersion"] == "client.authentication.k8s.io/v1"
    assert plugin["args"] == ["token", "--tenant", tenant.name, "--cluster", "web"]
    assert tenant.key not in kube.read_text()
    # The plugin's answer, as kubectl would run it: a cluster token, not the API key, with
    # its expiry; kept for the next call, asked anew once it is about to expire.
    credential = ok(tpctl(*plugin["args"]))
    assert credential["kind"] == "ExecCredential"
    assert credential["apiVersion"] == "client.authentication.k8s.io/v1"
    token = credential["status"]["token"]
    assert token.startswith("tpc_")
    assert credential["status"]["expirationTimestamp"].endswith("Z")
    assert ok(tpctl(*plugin["args"]))["status"]["token"] == token
    [cached] = (home / ".cache" / "tpctl" / "cluster-tokens").iterdir()
    assert stat.S_IMODE(cached.stat().st_mode) == 0o600
    kept = json.loads(cached.read_text())
    cached.write_text(json.dumps({**kept, "expiresAt": "2020-01-01T00:00:00+00:00"}))
    renewed = ok(tpctl(*plugin["args"]))["status"]["token"]
    assert renewed not in (token, tenant.key)
    assert json.loads(cached.read_text())["token"] == renewed
    # A different entry of the same name is never overwritten.
    clash = tpctl("kubeconfig", "web", "--file", str(kube), "--context", "prod")
    assert clash.returncode == 5
    assert (
        users["prod"]
        == {item["name"]: item["user"] for item in yaml.safe_load(kube.read_text())["users"]}[
            "prod"
        ]
    )
    # --file writes a new file of its own.
    separate = home / "web.kubeconfig"
    ok(tpctl("kubeconfig", "web", "--file", str(separate)))
    assert stat.S_IMODE(separate.stat().st_mode) == 0o600

    deleted = ok(tpctl("clusters", "delete", "web"))
    assert deleted["status"]["phase"] == "Terminating"


def test_errors_carry_kind_code_field_and_exit_code(tpctl: Run) -> None:
    missing = tpctl("clusters", "get", "nope")
    assert missing.returncode == 4
    assert "Error: 404 not_found NOT_FOUND: " in missing.stderr
    invalid = tpctl("members", "create", "not-an-email", "--role", "readonly")
    assert invalid.returncode == 7
    assert "Error: 400 invalid " in invalid.stderr
    assert "field: email" in invalid.stderr
    # 401 and 403 answers carry no code: the kind says which it was.
    denied = tpctl("tenant", "get", env={"TPCTL_API_KEY": "svc_" + "x" * 43})
    assert denied.returncode == 6
    assert denied.stderr.startswith("Error: 401 unauthenticated: "), denied.stderr
    reader = ok(tpctl("apikeys", "create", "--name", "ro", "--role", "readonly"))["key"]
    forbidden = tpctl(
        "members", "create", "x@example.com", "--role", "admin", env={"TPCTL_API_KEY": reader}
    )
    assert forbidden.returncode == 6
    assert forbidden.stderr.startswith("Error: 403 forbidden: "), forbidden.stderr
    unreachable = tpctl("tenant", "get", env={"TPCTL_URL": "http://127.0.0.1:9"})
    assert unreachable.returncode == 8
    assert tpctl("clusters", "frobnicate").returncode == 2


def test_members_apikeys_secrets_billing_catalogues(tpctl: Run, tenant: Tenant) -> None:
    added = ok(tpctl("members", "create", "dev@example.com", "--role", "readonly"))
    assert added == {"email": "dev@example.com", "role": "readonly"}
    assert ok(tpctl("members", "update", "dev@example.com", "--role", "admin"))["role"] == "admin"
    assert ok(tpctl("members", "get", "dev@example.com"))["role"] == "admin"
    ok(tpctl("members", "create", "ops@example.com", "--role", "readonly"))
    said(tpctl("members", "delete", "ops@example.com"), "Member ops@example.com removed")
    emails = [item["email"] for item in ok(tpctl("members", "list"))]
    assert "dev@example.com" in emails
    assert "ops@example.com" not in emails

    key = ok(tpctl("apikeys", "create", "--name", "ci", "--role", "readonly"))
    assert key["key"].startswith("svc_")
    assert ok(tpctl("apikeys", "get", key["id"]))["displayName"] == "ci"
    assert key["id"] in [item["id"] for item in ok(tpctl("apikeys", "list"))]
    said(tpctl("apikeys", "delete", key["id"]), f"API key {key['id']} revoked")
    assert tpctl("apikeys", "get", key["id"]).returncode == 4

    secret = ok(tpctl("secrets", "create", "db", "--path", "apps/db"))
    assert (secret["name"], secret["secretPath"], secret["sync"]) == ("db", "apps/db", [])
    assert ok(tpctl("secrets", "get", "db"))["secretPath"] == "apps/db"
    assert [item["name"] for item in ok(tpctl("secrets", "list"))] == ["db"]
    assert ok(tpctl("secrets", "update", "db"))["sync"] == []
    bad_target = tpctl("secrets", "update", "db", "--sync", "only-a-cluster")
    assert bad_target.returncode == 2
    said(tpctl("secrets", "delete", "db"), "Secret db deleted")
    assert tpctl("secrets", "get", "db").returncode == 4
    assert ok(tpctl("invoices", "list")) == []
    assert tpctl("invoices", "get", f"{tenant.name}-20300101").returncode == 4
    assert tpctl("invoices", "receipt", f"{tenant.name}-20300101").returncode == 4
    # No payment provider in this deployment: 503, retried, then exit 8 with the code.
    portal = tpctl("invoices", "portal")
    assert portal.returncode == 8
    assert "BILLING_NOT_CONFIGURED" in portal.stderr
    assert ok(tpctl("tenant", "get"))["name"] == tenant.name
    plans = ok(tpctl("plans", "list"))
    assert {plan["name"] for plan in plans} >= {"starter", "pro"}


def test_alerting_sections(tpctl: Run, tmp_path: Path) -> None:
    def document(name: str, value: Any) -> str:
        path = tmp_path / name
        path.write_text(yaml.safe_dump(value))
        return str(path)

    wrapper = ok(tpctl("alerting", "config", "-o", "json"))
    assert "route" in wrapper
    ok(tpctl("alerting", "receivers", "put", "team", "-f", document("r.yaml", {}), "-o", "json"))
    assert "team" in [item["name"] for item in ok(tpctl("alerting", "receivers", "list"))]
    assert ok(tpctl("alerting", "receivers", "get", "team", "-o", "json"))["name"] == "team"
    route = {"receiver": "team", "matchers": ['severity="critical"']}
    ok(
        tpctl(
            "alerting", "routes", "put", "0", "-f", "-", "-o", "json", stdin=yaml.safe_dump(route)
        )
    )
    assert ok(tpctl("alerting", "routes", "get", "0", "-o", "json"))["receiver"] == "team"
    assert len(ok(tpctl("alerting", "routes", "list"))) == 1
    said(tpctl("alerting", "routes", "delete", "0"), "Route 0 deleted")
    template = tmp_path / "a.tmpl"
    template.write_text('{{ define "team.title" }}alert{{ end }}')
    ok(tpctl("alerting", "templates", "put", "a.tmpl", "-f", str(template), "-o", "json"))
    assert ok(tpctl("alerting", "templates", "get", "a.tmpl", "-o", "json"))["filename"] == "a.tmpl"
    assert [item["filename"] for item in ok(tpctl("alerting", "templates", "list"))] == ["a.tmpl"]
    said(tpctl("alerting", "templates", "delete", "a.tmpl"), "Template a.tmpl deleted")
    quiet = {"time_intervals": [{"weekdays": ["saturday", "sunday"]}]}
    ok(tpctl("alerting", "time-intervals", "put", "quiet", "-f", document("t.yaml", quiet)))
    assert ok(tpctl("alerting", "time-intervals", "get", "quiet", "-o", "json"))["name"] == "quiet"
    assert [item["name"] for item in ok(tpctl("alerting", "time-intervals", "list"))] == ["quiet"]
    said(tpctl("alerting", "time-intervals", "delete", "quiet"), "Time interval quiet deleted")
    ok(tpctl("alerting", "global", "put", "-f", document("g.yaml", {"resolve_timeout": "7m"})))
    assert ok(tpctl("alerting", "global", "get", "-o", "json"))["resolve_timeout"] == "7m"
    said(tpctl("alerting", "receivers", "delete", "team"), "Receiver team deleted")
    applied = ok(tpctl("alerting", "apply", "-f", document("c.yaml", wrapper), "-o", "json"))
    assert applied["route"] == wrapper["route"]
    ok(tpctl("alerting", "reset"))
    bad = tpctl("alerting", "routes", "put", "0", "-f", document("bad.yaml", {"receiver": "nope"}))
    assert bad.returncode == 7
    assert "UNDEFINED_RECEIVER" in bad.stderr


def test_tpctl_retries_429_then_503(tpctl: Run, proxy: tuple[Proxy, str]) -> None:
    fake, url = proxy
    fake.inject(Fault(429, {"Retry-After": "0"}, "RATE_LIMITED"), Fault(503, code="INJECTED"))
    assert ok(tpctl("clusters", "list", env={"TPCTL_URL": url})) == []
    assert [seen.status for seen in fake.seen] == [429, 503, 200]
    fake.inject(*[Fault(503, code="INJECTED")] * 5)
    exhausted = tpctl("clusters", "list", env={"TPCTL_URL": url})
    assert exhausted.returncode == 8
    assert "Error: 503 unavailable INJECTED: injected" in exhausted.stderr


def test_token_says_in_one_line_what_it_lacks(tpctl: Run) -> None:
    """kubectl shows the plugin's standard error: each refusal is one whole line."""
    no_credential = tpctl("token", "--cluster", "web", env={"TPCTL_API_KEY": ""})
    assert no_credential.returncode == 3
    assert no_credential.stdout == ""
    assert no_credential.stderr.strip().splitlines() == [
        "Configuration: no API key or token: set TPCTL_API_KEY or TPCTL_TOKEN, or save one in "
        "profile 'default' (`tpctl config set-profile default --api-key-stdin`)"
    ]
    # An entry written before tokens were bound to a cluster.
    no_cluster = tpctl("token")
    assert no_cluster.returncode == 3
    assert "write the kubeconfig entry again with `tpctl kubeconfig CLUSTER`" in no_cluster.stderr
    missing = tpctl("token", "--cluster", "nope")
    assert missing.returncode == 4
    assert missing.stdout == ""
