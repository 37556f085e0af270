# Entry points for people and CI. Every target installs what it needs (scripts/bootstrap,
# tool builds cached under ${XDG_CACHE_HOME:-~/.cache}/aks-ray-kueue).
PY := .venv/bin/python
PYTEST := $(PY) -m pytest
BACKEND ?= local
REPORTS := build/reports

.PHONY: setup tools validate test test-static test-integration test-flux test-faults ci cluster report bench-validate bench-cluster bench-flux bench-scale clean

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

test-flux: tools
	$(PYTEST) -m flux --junitxml=$(REPORTS)/flux.junit.xml

test-faults: tools
	$(PYTEST) -m "faults or harness" --junitxml=$(REPORTS)/faults.junit.xml

# Every test: static gate tests, then behaviour on the embedded control plane. The tools are
# built first (about 25 minutes on a fresh machine, with progress), outside pytest's timeouts.
test: tools
	$(PYTEST) --backend=$(BACKEND) --junitxml=$(REPORTS)/tests.junit.xml

# The main job (what the pull-request workflow runs): validate the repository, then all tests.
ci: validate test

cluster: setup
	@scripts/cluster

# What a change does to who gets GPUs: quotas and scenario outcomes of the working tree vs BASE.
BASE ?= main
OUT ?= build/report
COMMENT_NOTE ?=
report: tools
	@scripts/report --base $(BASE) --out $(OUT) --comment-note "$(COMMENT_NOTE)"

bench-validate: setup
	@$(PY) -m harness.bench validate

bench-cluster: setup
	@$(PY) -m harness.bench cluster

bench-flux: tools
	@$(PY) -m harness.bench flux

bench-scale: tools
	@$(PY) -m harness.bench scale

clean:
	rm -rf build .pytest_cache
