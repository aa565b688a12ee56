"""The console in a real browser: Chromium driven by Playwright (make test-console; marked
`console`, deselected by `make test`). tests/console/session.py is the same without a
browser (HTTP through the app)."""
