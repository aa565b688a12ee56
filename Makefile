# tenantplane: `make serve` runs the service with the embedded defaults; `make test` runs the suite.
UV ?= uv
HOST ?= 127.0.0.1
PORT ?= 8080

.PHONY: uv install install-runtime test-deps serve worker test test-system test-kubernetes test-lowest lint \
	format bench openapi sdk go-client test-terraform test-console

uv:
	@command -v $(UV) >/dev/null 2>&1 || python3 -m pip install --quiet uv

# Bytecode of the application and of an environment's packages, compiled ahead by the
# interpreter $(1) (incrementally: only what changed): where the environment sets
# PYTHONDONTWRITEBYTECODE, every process the tests start (servers, workers, the CLI)
# compiled them anew, about 2 s of a core each.
define compile_bytecode
	$(1) -m compileall -q -j 0 src "$$($(1) -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
endef

install: uv
	$(UV) sync --frozen
	$(call compile_bytecode,$(UV) run --no-sync python)

# Serving needs only the runtime dependencies; --no-sync keeps `uv run` from adding dev ones back.
install-runtime: uv
	$(UV) sync --frozen --no-dev

serve: install-runtime
	$(UV) run --no-sync tenantplane serve --host $(HOST) --port $(PORT)

# Installs amtool/Alertmanager/chromium where it can (root on Debian), else fails naming the command.
test-deps:
	scripts/test-deps $(TEST_DEPS_ARGS)

# The 25 slowest tests are listed at the end: the suite's time budget is watched from there.
test: install test-deps
	$(UV) run pytest -n 2 --durations=25 $(PYTEST_ARGS)

# Real deployments (tests/system, deselected by `make test`): API replicas, workers and
# billing runs as processes on PostgreSQL, Redis and SQLite, killed and frozen on purpose.
# Serial (the tests start several processes each); -s prints each test's figures as it ends.
test-system: install test-deps
	$(UV) run pytest tests/system -m system -s -p no:randomly --durations=0 $(PYTEST_ARGS)

# The console in a real browser (tests/console/browser, deselected by `make test`): Debian's
# Chromium driven by Playwright against a `tenantplane serve` process and a loopback OIDC
# provider; axe-core (npm, pinned by tests/console/browser/package-lock.json) is installed
# into a cache outside the tree. Screenshots: TENANTPLANE_CONSOLE_ARTIFACTS, by default
# var/console-artifacts/ (git-ignored).
test-console: install test-deps
	scripts/console-test-deps
	$(UV) run pytest tests/console/browser -m console -p no:randomly $(PYTEST_ARGS)

# Real Kubernetes (tests/kubernetes, deselected by `make test`): etcd, kube-apiserver, the
# controller manager, the scheduler and kwok (nodes without containers), Flux's controllers
# with the vCluster chart, External Secrets and OpenBao, built once from their Go modules into
# a cache outside the tree (scripts/testbed); one bed serves the whole run. OpenTofu too: the
# provider (clients/terraform) manages a cluster on the bed.
test-kubernetes: install test-deps
	scripts/testbed build --all
	scripts/testbed build opentofu
	$(UV) run pytest tests/kubernetes -m kubernetes -p no:randomly $(PYTEST_ARGS)

# The Go client against a real server and the OpenTofu provider's tests (deselected by
# `make test`: they need Go); oapi-codegen and OpenTofu are built into the test bed's cache.
test-terraform: install test-deps
	scripts/testbed build oapi-codegen opentofu
	$(UV) run pytest tests/clients/test_go_client.py tests/terraform -m terraform -p no:randomly $(PYTEST_ARGS)

lint: install
	$(UV) run ruff check .
	$(UV) run ruff format --check .
	$(UV) run mypy
	# The layout's arrows (pyproject's [tool.importlinter], docs/design.md).
	$(UV) run lint-imports
	# An undeclared, unused or misplaced (dev-only) dependency of the application fails the build.
	$(UV) run deptry src

format: install
	$(UV) run ruff format .
	$(UV) run ruff check --fix .

# Load benchmarks with wrk against a real server (bench/README.md); installs wrk where it can.
bench: install
	@command -v wrk >/dev/null 2>&1 || { [ "$$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1 \
		&& DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk >/dev/null; } \
		|| { echo "bench: wrk is missing; install it (apt-get install wrk)" >&2; exit 1; }
	$(UV) run python -m bench $(BENCH_ARGS)

# The lowest versions pyproject.toml allows, in their own environment (uv.lock is not touched):
# a part of the suite proves the floors are high enough for the features the code uses.
LOWEST_ENV ?= .venv-lowest
LOWEST_TESTS ?= tests/http tests/test_server.py tests/apikey tests/test_cli.py tests/cluster/test_create.py \
	tests/providers/orchestrator/test_kubernetes.py tests/clients/test_sdk.py tests/test_server_workers.py
test-lowest: uv test-deps
	$(UV) pip compile --quiet pyproject.toml --group dev --resolution lowest-direct -o $(LOWEST_ENV).txt
	$(UV) venv --quiet --allow-existing $(LOWEST_ENV)
	$(UV) pip install --quiet -p $(LOWEST_ENV) -r $(LOWEST_ENV).txt
	$(UV) pip install --quiet -p $(LOWEST_ENV) --no-deps -e .
	$(call compile_bytecode,$(LOWEST_ENV)/bin/python)
	$(LOWEST_ENV)/bin/python -m pytest -q -p no:cacheprovider -n 2 $(LOWEST_TESTS)

# The OpenAPI document the app serves, committed as docs/openapi.json (a test compares them).
openapi: install
	$(UV) run python -m tenantplane.openapi_export > docs/openapi.json

# The SDK's models (from docs/openapi.json) and its synchronous client (from the asynchronous
# one), regenerated; tests/clients fails while the committed files differ from these.
sdk: install
	$(UV) run python clients/python/codegen.py

# The Go client's generated code (clients/go/api.gen.go) from docs/openapi.json, by the
# oapi-codegen that tools/testbed/oapi-codegen pins (built into the test bed's cache, with Go's
# caches there too); GO_CLIENT_OUTPUT elsewhere is how a test compares without writing the tree.
TESTBED_CACHE ?= $(or $(TENANTPLANE_TESTBED_CACHE),/var/cache/tenantplane-testbed)
OAPI_CODEGEN_VERSION = $(shell awk '$$1 == "github.com/oapi-codegen/oapi-codegen/v2" { print $$2 }' \
	tools/testbed/oapi-codegen/go.mod)
GO_CLIENT_OUTPUT ?= $(CURDIR)/clients/go/api.gen.go
go-client:
	scripts/testbed build oapi-codegen
	cd clients/go && GOMODCACHE=$(TESTBED_CACHE)/go/mod GOCACHE=$(TESTBED_CACHE)/go/build GOFLAGS=-mod=readonly \
		$(TESTBED_CACHE)/oapi-codegen-$(OAPI_CODEGEN_VERSION)/bin/oapi-codegen \
		-config oapi-codegen.yaml -o $(abspath $(GO_CLIENT_OUTPUT)) ../../docs/openapi.json
	# The generated option that sets the client's Doer takes the name of the package's own
	# WithHTTPClient(*http.Client) (client.go), and the generator has no setting to rename it.
	sed -i 's/\bWithHTTPClient\b/WithRequestDoer/g' $(GO_CLIENT_OUTPUT)
