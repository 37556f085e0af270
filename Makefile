# Entry points for people and CI. Every target installs what it needs (scripts/bootstrap,
# tool builds cached under ${XDG_CACHE_HOME:-~/.cache}/aks-ray-kueue).
PY := .venv/bin/python
PYTEST := $(PY) -m pytest
BACKEND ?= local
REPORTS := build/reports

.PHONY: setup tools validate test test-static test-integration ci cluster bench-validate bench-cluster clean

setup:
	@scripts/bootstrap

tools: setup
	@scripts/build-tools

validate: setup
	@scripts/validate . --json $(REPORTS)/validate.json --junit $(REPORTS)/validate.junit.xml

test-static: setup
	$(PYTEST) -m static --junitxml=$(REPORTS)/static.junit.xml

test-integration: tools
	$(PYTEST) -m integration --backend=$(BACKEND) --junitxml=$(REPORTS)/integration.junit.xml

# Every test: static gate tests, then behaviour on the embedded control plane. The tools are
# built first (about 25 minutes on a fresh machine, with progress), outside pytest's timeouts.
test: tools
	$(PYTEST) --backend=$(BACKEND) --junitxml=$(REPORTS)/tests.junit.xml

# The main job (what the pull-request workflow runs): validate the repository, then all tests.
ci: validate test

cluster: setup
	@scripts/cluster

bench-validate: setup
	@$(PY) -m harness.bench validate

bench-cluster: setup
	@$(PY) -m harness.bench cluster

clean:
	rm -rf build .pytest_cache
