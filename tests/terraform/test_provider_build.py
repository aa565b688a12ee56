"""The provider's Go module: gofmt-formatted, vetted, its go.mod tidy (what the provider does
is tested through OpenTofu, by the other tests here)."""

from __future__ import annotations

import subprocess

import pytest

from tests.terraform.conftest import PROVIDER_MODULE, go_environment

pytestmark = pytest.mark.terraform


def go(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["nice", "-n", "10", "go", *args],
        cwd=PROVIDER_MODULE,
        env=go_environment(),
        capture_output=True,
        text=True,
        check=False,
    )


def test_the_provider_is_formatted_and_vetted() -> None:
    unformatted = subprocess.run(
        ["gofmt", "-l", "."], cwd=PROVIDER_MODULE, capture_output=True, text=True, check=True
    )
    assert unformatted.stdout == "", f"not gofmt-formatted: {unformatted.stdout}"
    vetted = go("vet", "./...")
    assert vetted.returncode == 0, vetted.stdout + vetted.stderr


def test_go_mod_is_tidy() -> None:
    """go.mod and go.sum say exactly what the provider uses (go mod tidy -diff changes nothing)."""
    tidy = go("mod", "tidy", "-diff")
    assert tidy.returncode == 0, tidy.stdout + tidy.stderr
