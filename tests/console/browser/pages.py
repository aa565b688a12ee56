"""The console's pages that the page tests (test_pages.py) visit, each in both themes and at
both sizes: axe, screenshots, content, no horizontal overflow at 390 px, the skip link.

A section's page is added by one line: its name (the tests' ids and the screenshots' file
names) and its path, in which ``{tenant}``, ``{cluster}`` (a Running cluster), ``{secret}``
(a secret synced into it) and ``{invoice}`` (a paid invoice) are filled in (``page_values``
in conftest.py; add a value there when a page needs another). Every page is visited signed
in as the tenant's admin, who sees every control there is.
"""

from __future__ import annotations

PAGES: list[tuple[str, str]] = [
    ("sign-in", "/console/sign-in"),
    ("clusters", "/console/t/{tenant}/clusters"),
    ("cluster-create", "/console/t/{tenant}/clusters/-/new"),
    ("cluster-detail", "/console/t/{tenant}/clusters/{cluster}"),
    ("secrets", "/console/t/{tenant}/secrets"),
    ("secret-create", "/console/t/{tenant}/secrets/-/new"),
    ("secret-detail", "/console/t/{tenant}/secrets/{secret}"),
    ("alerting", "/console/t/{tenant}/alerting"),
    ("receivers", "/console/t/{tenant}/alerting/receivers"),
    ("routes", "/console/t/{tenant}/alerting/routes"),
    ("route-create", "/console/t/{tenant}/alerting/routes/-/new"),
    ("members", "/console/t/{tenant}/members"),
    ("apikeys", "/console/t/{tenant}/apikeys"),
    ("apikey-create", "/console/t/{tenant}/apikeys/new"),
    ("invoices", "/console/t/{tenant}/invoices"),
    ("invoice-detail", "/console/t/{tenant}/invoices/{invoice}"),
    ("events", "/console/t/{tenant}/events"),
]

# (width, height): a laptop and a phone (the narrowest the console supports).
SIZES: list[tuple[int, int]] = [(1280, 800), (390, 844)]
THEMES: list[str] = ["light", "dark"]
