"""The provider (clients/terraform) built into the test bed's cache and run by OpenTofu, built
from its Go module (scripts/testbed build opentofu), against a real `tenantplane serve`; a
fresh tenant per test."""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from tenantplane.db.engine import Database
from tests.conftest import TEST_SECRET
from tests.contract.server import Served, served, server_env
from tests.factories import Factory

ROOT = Path(__file__).resolve().parents[2]
PROVIDER_MODULE = ROOT / "clients" / "terraform"
# Built outside the tree, Go's caches with it: the test bed's (scripts/testbed).
CACHE = Path(os.environ.get("TENANTPLANE_TESTBED_CACHE", "/var/cache/tenantplane-testbed"))
PROVIDER_DIR = CACHE / "terraform-provider"
# dev_overrides runs the binary of the provider's conventional name in the directory it names.
PROVIDER_BINARY = PROVIDER_DIR / "terraform-provider-tenantplane"

SMALL = {"cpu": "1", "memory": "1Gi", "storage": "1Gi"}
# The simulator's steps are 50 ms (tests.contract.server); the sync controller retries a
# target whose cluster was not ready after a few seconds.
SETTLE_DEADLINE_SECONDS = 60.0


def tofu_binary() -> Path:
    """The tofu that `scripts/testbed build opentofu` built, of the version its module pins."""
    go_mod = (ROOT / "tools" / "testbed" / "opentofu" / "go.mod").read_text()
    pinned = re.search(r"github\.com/opentofu/opentofu (v\S+)", go_mod)
    assert pinned, "tools/testbed/opentofu/go.mod pins no OpenTofu"
    tofu = CACHE / f"opentofu-{pinned.group(1)}" / "bin" / "tofu"
    assert tofu.is_file(), f"{tofu} is not built: run scripts/testbed build opentofu"
    return tofu


def go_environment(**extra: str) -> dict[str, str]:
    """Go with the test bed's caches, and go.mod as committed (never updated by a build),
    unless ``extra`` says otherwise."""
    return {
        **os.environ,
        "GOMODCACHE": str(CACHE / "go" / "mod"),
        "GOCACHE": str(CACHE / "go" / "build"),
        "GOFLAGS": "-mod=readonly",
        **extra,
    }


def build_provider() -> Path:
    """The provider's binary, built from the tree as it is (Go rebuilds only what changed);
    the directory dev_overrides names."""
    built = subprocess.run(
        ["nice", "-n", "10", "go", "build", "-trimpath", "-o", str(PROVIDER_BINARY), "."],
        cwd=PROVIDER_MODULE,
        env=go_environment(),
        capture_output=True,
        text=True,
        check=False,
    )
    assert built.returncode == 0, built.stdout + built.stderr
    return PROVIDER_DIR


@pytest.fixture(scope="session")
def provider_dir() -> Path:
    return build_provider()


@pytest.fixture(scope="session")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    with served(tmp_path_factory.mktemp("server"), tenant="terraform") as running:
        yield running


@dataclass(frozen=True)
class Tenant:
    url: str
    name: str
    key: str

    @property
    def path(self) -> str:
        """The tenant's path under /api/v1."""
        return f"/tenants/{self.name}"

    def api(self) -> httpx.Client:
        """The API (/api/v1) as the tenant's admin: what tests check Terraform's work with."""
        return httpx.Client(
            base_url=f"{self.url}/api/v1",
            headers={"Authorization": f"Bearer {self.key}"},
        )

    def read(self, path: str) -> dict[str, Any] | None:
        """The object at ``path`` under the tenant's path; None when the API answers 404."""
        with self.api() as api:
            answer = api.get(f"{self.path}{path}")
        if answer.status_code == 404:
            return None
        answer.raise_for_status()
        found: dict[str, Any] = answer.json()
        return found


async def new_tenant(server: Served) -> Tenant:
    """A fresh tenant on the session's server, made in its database as the operator's command
    makes one (so that tests do not see each other's resources)."""
    env = server_env(Path(server.log).parent)
    database = Database.connect(env["TENANTPLANE_DATABASE_URL"])
    try:
        made = await Factory(database, TEST_SECRET.encode()).tenant(f"tf-{uuid.uuid4().hex[:10]}")
    finally:
        await database.dispose()
    return Tenant(server.base_url, made.name, made.admin_key)


@pytest.fixture
async def tenant(server: Served) -> Tenant:
    return await new_tenant(server)


@pytest.fixture
async def other_tenant(server: Served) -> Tenant:
    """Another tenant, whose key the first one's API refuses (403: not a member)."""
    return await new_tenant(server)


REQUIRED_PROVIDERS = """terraform {
  required_providers {
    tenantplane = { source = "tenantplane/tenantplane" }
  }
}
"""


class Tofu:
    """tofu in a working directory of its own, the provider taken from ``provider_dir`` by a
    dev_overrides CLI configuration, the tenant's settings in the environment (TENANTPLANE_*),
    as a user would give them. No `tofu init`: OpenTofu says to skip it with development
    overrides ("It is not necessary and may error unexpectedly"), and here it fails, looking
    up the provider in a registry this machine cannot reach."""

    def __init__(self, workdir: Path, provider_dir: Path, tenant: Tenant) -> None:
        self.workdir = workdir
        self.tofu = tofu_binary()
        cli_config = workdir.parent / f"{workdir.name}.tofurc"
        cli_config.write_text(
            "provider_installation {\n"
            f'  dev_overrides {{ "tenantplane/tenantplane" = {json.dumps(str(provider_dir))} }}\n'
            "  direct {}\n"
            "}\n"
        )
        self.env = {
            "PATH": os.environ["PATH"],
            "HOME": str(workdir),
            # The machine's own TF_CLI_CONFIG_FILE is replaced, never merged with.
            "TF_CLI_CONFIG_FILE": str(cli_config),
            "TF_IN_AUTOMATION": "1",
            "CHECKPOINT_DISABLE": "1",
            "TENANTPLANE_URL": tenant.url,
            "TENANTPLANE_TENANT": tenant.name,
            "TENANTPLANE_API_KEY": tenant.key,
        }

    def configure(self, hcl: str) -> None:
        """main.tf: ``hcl`` after the provider's requirement (without it the type name
        tenantplane means hashicorp/tenantplane)."""
        (self.workdir / "main.tf").write_text(REQUIRED_PROVIDERS + hcl)

    def run(
        self, *args: str, env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(self.tofu), *args, "-no-color"],
            cwd=self.workdir,
            env={**self.env, **(env or {})},
            capture_output=True,
            text=True,
            check=False,
        )

    def ok(self, *args: str) -> str:
        ran = self.run(*args)
        assert ran.returncode == 0, f"tofu {' '.join(args)}:\n{ran.stdout}\n{ran.stderr}"
        return ran.stdout

    def plan_exit_code(self) -> int:
        """`tofu plan -detailed-exitcode`: 0 no changes, 2 changes (1 is an error: fails)."""
        ran = self.run("plan", "-detailed-exitcode", "-input=false")
        assert ran.returncode in (0, 2), f"tofu plan:\n{ran.stdout}\n{ran.stderr}"
        return ran.returncode

    def outputs(self) -> dict[str, Any]:
        values: dict[str, Any] = {
            name: output["value"] for name, output in json.loads(self.ok("output", "-json")).items()
        }
        return values

    def state_list(self) -> list[str]:
        ran = self.run("state", "list")
        assert ran.returncode == 0, ran.stderr
        return ran.stdout.split()


@pytest.fixture
def tofu(tmp_path: Path, provider_dir: Path, tenant: Tenant) -> Tofu:
    workdir = tmp_path / "config"
    workdir.mkdir()
    return Tofu(workdir, provider_dir, tenant)


def wait_for(
    read: Callable[[], dict[str, Any]], done: Callable[[dict[str, Any]], bool]
) -> dict[str, Any]:
    """``read()`` once ``done`` says so of it, within the deadline."""
    give_up = time.monotonic() + SETTLE_DEADLINE_SECONDS
    while not done(current := read()):
        assert time.monotonic() < give_up, (
            f"not reached within {SETTLE_DEADLINE_SECONDS:.0f}s: {current}"
        )
        time.sleep(0.1)  # polling a condition with a deadline
    return current


def running_cluster(tenant: Tenant, name: str) -> str:
    """A small cluster of the tenant, once Running."""
    with tenant.api() as api:
        created = api.post(f"{tenant.path}/clusters", json={"name": name, "resources": SMALL})
        created.raise_for_status()
        wait_for(
            lambda: api.get(f"{tenant.path}/clusters/{name}").raise_for_status().json(),
            lambda cluster: cluster["status"]["phase"] == "Running",
        )
    return name


def secret_of(tenant: Tenant, name: str) -> dict[str, Any] | None:
    return tenant.read(f"/secrets/{name}")


def synced(tenant: Tenant, name: str) -> dict[str, Any]:
    """The secret once the sync controller has synced it: its status, and so its version, no
    longer changes by itself."""

    def read() -> dict[str, Any]:
        secret = secret_of(tenant, name)
        assert secret is not None, f"secret {name} is gone"
        return secret

    return wait_for(read, lambda secret: secret["status"]["phase"] == "Synced")
