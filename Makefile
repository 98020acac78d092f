VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: test check soak soak-ci demo bench install clean journey

$(PY):
	python3 -m venv $(VENV)

$(STAMP): $(PY) pyproject.toml
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev,mcp]'
	$(PY) -m compileall -q vault_tools
	touch $(STAMP)

install: $(STAMP)

# The suite starts Python hundreds of times: compiled modules (and pytest's rewritten test modules) are kept
# in __pycache__ even where the environment says not to write them, so each start does not compile again.
NO_RECOMPILE := env -u PYTHONDONTWRITEBYTECODE
# The tests fsync thousands of times and need a real file system, not a durable one: where the machine has
# /dev/shm (Linux), their temp folders live there, in memory (pytest numbers them, so runs never share one).
TEST_TMP := TMPDIR=$(shell [ -d /dev/shm ] && [ -w /dev/shm ] && echo /dev/shm || echo "$${TMPDIR:-/tmp}")

test: $(STAMP)
	$(TEST_TMP) $(NO_RECOMPILE) $(PY) -m pytest

# The code's own checks: ruff (style and bugs), mypy (strict on the core) and the layers contract (each module
# imports only its layer and those below; no import cycle; see docs/architecture.md). CI runs them.
check: $(STAMP)
	$(VENV)/bin/ruff check vault_tools tests scripts benchmarks
	$(VENV)/bin/mypy vault_tools
	$(PY) scripts/check_layers.py

# Soak tests: randomized fault injection, repeated. `make soak` is a long local run;
# `make soak-ci` a bounded one that CI runs after `make test`. VAULT_TOOLS_SOAK_RUNS sets the count of kill -9
# runs and stateful sequences, VAULT_TOOLS_FUZZ_EXAMPLES the fuzz examples per input, VAULT_TOOLS_SOAK_SECONDS
# the multi-clone test's time (its seed is printed in every summary it writes; VAULT_TOOLS_SOAK_SEED replays it).
# `make soak` draws new seeds each run, to explore; `make soak-ci` replays fixed ones (multi-clone, the three
# synced devices and hypothesis), so a red CI replays exactly (a seed `make soak` finds failing becomes a
# deterministic test).
SOAK_RUNS ?= 1000
SOAK_CI_RUNS ?= 240

soak: $(STAMP)
	VAULT_TOOLS_SOAK_RUNS=$(SOAK_RUNS) VAULT_TOOLS_FUZZ_EXAMPLES=200 VAULT_TOOLS_SOAK_SECONDS=600 $(NO_RECOMPILE) $(PY) -m pytest -m soak

SOAK_CI_SEED ?= 1888

soak-ci: $(STAMP)
	VAULT_TOOLS_SOAK_RUNS=$(SOAK_CI_RUNS) VAULT_TOOLS_SOAK_SEED=$(SOAK_CI_SEED) $(NO_RECOMPILE) $(PY) -m pytest -m soak --hypothesis-seed=$(SOAK_CI_SEED)

demo: $(STAMP)
	$(PY) scripts/demo.py

clean:
	rm -rf $(VENV) build dist *.egg-info

# What a user installs, not the checkout: the sdist and the wheel built (the wheel from the sdist), the wheel
# installed with the mcp extra into a new virtual environment outside the checkout, and a user's journey run
# with it from another folder (scripts/installed_journey.py); then the README's own install line, as written,
# with pipx, in a fresh clone under another name. CI runs it.
JOURNEY := $(shell mktemp -u -d /tmp/vault-tools-journey.XXXXXX)

journey: $(STAMP)
	rm -rf dist
	$(PY) -m build --outdir dist . > /dev/null
	python3 -m venv $(JOURNEY)/venv
	$(JOURNEY)/venv/bin/python -m pip install --quiet "$$(ls dist/*.whl)[mcp]"
	cd $(JOURNEY) && $(JOURNEY)/venv/bin/python $(CURDIR)/scripts/installed_journey.py
	git clone --quiet $(CURDIR) $(JOURNEY)/any-name
	$(JOURNEY)/venv/bin/python -m pip install --quiet pipx
	cd $(JOURNEY)/any-name && PIPX_HOME=$(JOURNEY)/pipx PIPX_BIN_DIR=$(JOURNEY)/bin \
		$(JOURNEY)/venv/bin/pipx install '.[mcp]' && $(JOURNEY)/bin/vault-tools --version
	rm -rf $(JOURNEY)

# Timed as a user installs it: the wheel built and installed into a virtual environment of its own (the
# checkout's editable install adds an import hook to every process of its environment).
BENCH_ENV := $(shell mktemp -u -d /tmp/vault-tools-bench.XXXXXX)

bench: $(STAMP)
	$(PY) -m build --wheel --outdir $(BENCH_ENV)/dist . > /dev/null
	python3 -m venv $(BENCH_ENV)/venv
	$(BENCH_ENV)/venv/bin/python -m pip install --quiet "$$(ls $(BENCH_ENV)/dist/*.whl)"
	$(PY) benchmarks/run.py --installed $(BENCH_ENV)/venv $(BENCH_ARGS); status=$$?; rm -rf $(BENCH_ENV); exit $$status
