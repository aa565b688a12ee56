# tenantplane: `make serve` runs the service with the embedded defaults; `make test` runs the suite.
UV ?= uv
HOST ?= 127.0.0.1
PORT ?= 8080

.PHONY: install serve worker test lint format bench openapi

install:
	@command -v $(UV) >/dev/null 2>&1 || python3 -m pip install --quiet uv
	$(UV) sync --frozen

serve: install
	$(UV) run tenantplane serve --host $(HOST) --port $(PORT)

test: install
	$(UV) run pytest -n 2 $(PYTEST_ARGS)

lint: install
	$(UV) run ruff check .
	$(UV) run ruff format --check .
	$(UV) run mypy

format: install
	$(UV) run ruff format .
	$(UV) run ruff check --fix .

bench: install
	$(UV) run python -m bench

# The OpenAPI document the app serves, committed as docs/openapi.json (a test compares them).
openapi: install
	$(UV) run python -m tenantplane.http.openapi > docs/openapi.json
