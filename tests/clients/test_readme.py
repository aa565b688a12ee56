"""The Python in the SDK's README and docs/clients.md runs as written, against a real server,
so a snippet cannot name something undefined or a method's old shape again."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.clients.conftest import Tenant

ROOT = Path(__file__).resolve().parents[2]
DOCUMENTS = (ROOT / "clients" / "python" / "README.md", ROOT / "docs" / "clients.md")
FENCED = re.compile(r"^```python\n(.*?)^```$", re.MULTILINE | re.DOTALL)


def snippets() -> list[tuple[str, int, str]]:
    found = []
    for document in DOCUMENTS:
        for number, code in enumerate(FENCED.findall(document.read_text()), 1):
            found.append((str(document.relative_to(ROOT)), number, code))
    return found


def test_the_documents_have_python_to_run() -> None:
    assert {document for document, _, _ in snippets()} == {
        str(document.relative_to(ROOT)) for document in DOCUMENTS
    }


@pytest.mark.parametrize(
    ("document", "number", "code"), snippets(), ids=[f"{d}#{n}" for d, n, _ in snippets()]
)
def test_each_python_snippet_runs(tenant: Tenant, document: str, number: int, code: str) -> None:
    result = subprocess.run(
        [sys.executable, "-c", code],
        env={
            "PATH": os.environ["PATH"],
            "TPCTL_URL": tenant.url,
            "TPCTL_TENANT": tenant.name,
            "TPCTL_API_KEY": tenant.key,
        },
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, f"{document} snippet {number}:\n{result.stderr}"
