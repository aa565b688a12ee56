"""schemathesis against a real server process: the document and the server agree.

Positive cases for every operation, with the fuzzer's own admin key; 0 failures of the
four conformance checks expected. The HAR report proves every operation was exercised.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import httpx
import pytest

from tests.contract.server import served

SCHEMATHESIS = str(Path(sys.executable).parent / "schemathesis")
MAX_EXAMPLES = "8"
# Every tenant-scoped call names the seeded tenant (any other is a 403 by design). Without
# a payment provider the billing operations answer 503 BILLING_NOT_CONFIGURED on purpose.
CONFIG = """
[parameters]
"path.tenant" = "{tenant}"

[checks]
enabled = false
not_a_server_error.enabled = true
status_code_conformance.enabled = true
response_schema_conformance.enabled = true
content_type_conformance.enabled = true

[[operations]]
include-operation-id-regex = "^(receivePaddleWebhook|createPortalSession)$"
checks.not_a_server_error.enabled = false

# schemathesis learns resources from answers (a 201's Location names apikeys/{{id}}) and then
# fills {{id}} with ids a list showed, its own key's among them. Revocations name a key that
# does not exist instead (404, documented), so the key it authenticates with survives.
[[operations]]
include-operation-id-regex = "^revokeApiKey$"
parameters = {{ "path.id" = "ak-00000000000000000000" }}
"""


def path_regex(template: str) -> re.Pattern[str]:
    return re.compile("^" + re.sub(r"\\\{[^}]+\\\}", "[^/]+", re.escape(template)) + "$")


@pytest.mark.slow
def test_schemathesis_finds_no_contradiction(tmp_path: Path) -> None:
    with served(tmp_path) as server:
        document = httpx.get(f"{server.base_url}/openapi.json").json()
        har = tmp_path / "run.har"
        config = tmp_path / "schemathesis.toml"
        config.write_text(CONFIG.format(tenant=server.tenant))
        result = subprocess.run(
            [
                SCHEMATHESIS,
                "--config-file",
                str(config),
                "run",
                f"{server.base_url}/openapi.json",
                "--url",
                server.base_url,
                "-H",
                f"Authorization: Bearer {server.admin_key}",
                "--phases",
                "examples,coverage,fuzzing",
                "--mode",
                "positive",
                "--max-examples",
                MAX_EXAMPLES,
                "--seed",
                "1",
                "--report",
                "har",
                "--report-har-path",
                str(har),
            ],
            capture_output=True,
            text=True,
            # Its cache of crashes goes to the working directory: keep it out of the checkout.
            cwd=tmp_path,
            timeout=300,
            check=False,
        )
        output = result.stdout[-6000:] + result.stderr[-2000:]
        assert result.returncode == 0, output
        # revokeApiKey is exercised too, on a key that does not exist (CONFIG): the key the
        # fuzzer authenticates with is still valid after the run.
        keys = httpx.get(
            f"{server.base_url}/api/v1/tenants/{server.tenant}/apikeys/{server.admin_key_id}",
            headers={"Authorization": f"Bearer {server.admin_key}"},
        )
        assert keys.status_code == 200, keys.text

    entries = json.loads(har.read_text())["log"]["entries"]
    statuses = Counter(f"{entry['response']['status'] // 100}xx" for entry in entries)
    print(f"schemathesis: {len(entries)} requests answered {dict(sorted(statuses.items()))}")
    answered: set[tuple[str, str]] = set()
    for entry in entries:
        if entry["response"]["status"] == 401:
            continue
        url = httpx.URL(entry["request"]["url"])
        for template in document["paths"]:
            if path_regex(template).match(url.path):
                answered.add((entry["request"]["method"].lower(), template))
    expected = {
        (method, template)
        for template, item in document["paths"].items()
        for method, op in item.items()
    }
    assert sorted(expected - answered) == [], "operations never answered other than 401"
