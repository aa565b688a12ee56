"""tpctl kubeconfig says what it did: written, already there and made current, or unchanged
(and then the file is not written at all)."""

from __future__ import annotations

import os
from pathlib import Path

import yaml

from tests.clients.conftest import Run, Tenant, ok


def identity(path: Path) -> tuple[int, int, bytes]:
    """What a rewrite changes: the atomic replace gives a new inode and modification time."""
    status = os.stat(path)
    return status.st_ino, status.st_mtime_ns, path.read_bytes()


def test_a_second_kubeconfig_says_what_happened(tpctl: Run, tenant: Tenant, home: Path) -> None:
    ok(tpctl("clusters", "create", "web", "--wait", "--interval", "0.05", "--timeout", "60"))
    context = f"{tenant.name}-web"
    kube = home / "web.kubeconfig"

    first = tpctl("kubeconfig", "web", "--file", str(kube))
    assert first.returncode == 0, first.stderr
    # The settings come from the environment: the profile the entry names is saved, once.
    written, saved = first.stderr.strip().splitlines()
    assert written == f"Context {context} written to {kube}"
    assert saved.startswith("Profile default saved in ")
    before = identity(kube)

    again = tpctl("kubeconfig", "web", "--file", str(kube))
    assert again.returncode == 0, again.stderr
    assert again.stderr.strip() == f"Context {context} already in {kube}; unchanged"
    assert identity(kube) == before

    # Another context became the current one: running it again makes this one current.
    document = yaml.safe_load(kube.read_text())
    document["current-context"] = "elsewhere"
    kube.write_text(yaml.safe_dump(document, sort_keys=False))
    kept = tpctl("kubeconfig", "web", "--file", str(kube), "--no-set-current")
    assert kept.returncode == 0, kept.stderr
    assert kept.stderr.strip() == f"Context {context} already in {kube}; unchanged"
    assert yaml.safe_load(kube.read_text())["current-context"] == "elsewhere"
    current = tpctl("kubeconfig", "web", "--file", str(kube))
    assert current.returncode == 0, current.stderr
    assert current.stderr.strip() == (
        f"Context {context} already in {kube}; made the current context"
    )
    assert yaml.safe_load(kube.read_text())["current-context"] == context

    # One of its entries removed: put back, and said to be written.
    document = yaml.safe_load(kube.read_text())
    document["users"] = []
    kube.write_text(yaml.safe_dump(document, sort_keys=False))
    restored = tpctl("kubeconfig", "web", "--file", str(kube))
    assert restored.stderr.strip() == f"Context {context} written to {kube}"
    assert [user["name"] for user in yaml.safe_load(kube.read_text())["users"]] == [context]
