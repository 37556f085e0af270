# Entry points for people and CI. Every target installs what it needs (scripts/bootstrap,
# tool builds cached under ${XDG_CACHE_HOME:-~/.cache}/aks-ray-kueue).
PY := .venv/bin/python
PYTEST := $(PY) -m pytest
BACKEND ?= local
REPORTS := build/reports

.PHONY: setup tools validate test test-static test-integration test-flux test-faults ci cluster report rehearse bench-validate bench-cluster bench-flux bench-scale bench-rehearse lock clean

setup:
	@scripts/bootstrap

# kind and kubectl only for BACKEND=kind: the default path never builds them.
tools: setup
	@scripts/build-tools $(if $(filter kind,$(BACKEND)),--group default --group kind)

# VALIDATE_FORMATS adds reports, e.g. "--format github" (annotations, as the pull-request workflow does).
# VALIDATE_BASE=REF also validates the changes from that git ref as updates (update-refused; the pull-request workflow
# passes the base branch).
VALIDATE_FORMATS ?=
VALIDATE_BASE ?=
validate: setup
	@scripts/validate . --json $(REPORTS)/validate.json --junit $(REPORTS)/validate.junit.xml \
		--format sarif=$(REPORTS)/validate.sarif $(VALIDATE_FORMATS) $(if $(VALIDATE_BASE),--base $(VALIDATE_BASE))

test-static: setup
	$(PYTEST) -m static --junitxml=$(REPORTS)/static.junit.xml

test-integration: tools
	$(PYTEST) -m integration --backend=$(BACKEND) --junitxml=$(REPORTS)/integration.junit.xml

test-flux: tools
	$(PYTEST) -m flux --junitxml=$(REPORTS)/flux.junit.xml

test-faults: tools
	$(PYTEST) -m "faults or harness" --junitxml=$(REPORTS)/faults.junit.xml

# Every test: the static gate tests and behaviour on the embedded control plane. The tools are
# built first (about 25 minutes on a fresh machine, with progress), outside pytest's timeouts.
test: tools
	$(PYTEST) --backend=$(BACKEND) --junitxml=$(REPORTS)/tests.junit.xml

# The main job (what the pull-request workflow runs): validate the repository, then all tests.
ci: validate test

# WORKDIR=DIR: where the run's certificates, data, kubeconfig and logs go (default a new build/cluster/run-*; e.g. for a
# read-only checkout).
cluster: setup
	@scripts/cluster $(if $(CLUSTER),--cluster $(CLUSTER)) $(if $(WORKDIR),--workdir $(WORKDIR))

# What a change does to who gets GPUs: quotas and scenario outcomes of the working tree vs BASE.
BASE ?= main
OUT ?= build/report
COMMENT_NOTE ?=
report: tools
	@scripts/report --base $(BASE) --out $(OUT) --comment-note "$(COMMENT_NOTE)"

# Upgrade rehearsal (README "Upgrading Kueue and KubeRay"): the gate and the suites on candidate
# Kueue/KubeRay versions (versions.yaml `candidates:`; default the newest) and on the pins, then
# build/rehearsal/report.md. SUITES=integration,flux,faults adds the Flux and fault suites.
# A side already run for the same checkout, versions and suites is reused (FRESH=1 reruns it).
# Never part of `make test`: only this target builds candidate versions.
KUEUE ?=
KUBERAY ?=
# Both sides run at once, each on clusters of its own; JOBS=1 runs them one after the other.
# SUITES= (empty) runs no suite; OUT=DIR writes the rehearsal elsewhere (a read-only checkout).
SUITES ?= integration
JOBS ?= 2
rehearse: tools
	@$(PY) -m harness.report.rehearsal $(if $(KUEUE),--kueue $(KUEUE)) $(if $(KUBERAY),--kuberay $(KUBERAY)) --suites "$(SUITES)" --out $(if $(filter command line environment,$(origin OUT)),$(OUT),build/rehearsal) $(if $(FRESH),--fresh) --jobs $(JOBS)

bench-validate: setup
	@$(PY) -m harness.bench validate

bench-cluster: setup
	@$(PY) -m harness.bench cluster

bench-flux: tools
	@$(PY) -m harness.bench flux

bench-scale: tools
	@$(PY) -m harness.bench scale

bench-rehearse: tools
	@$(PY) -m harness.bench rehearse

# Rewrites locks/ from pyproject.toml after a dependency change (versions already pinned stay;
# `make lock UPGRADE=1` moves every pin to the newest allowed). Not part of set-up: the
# committed locks are what scripts/bootstrap installs.
PIP_TOOLS := pip-tools==7.7.0
LOCK_VENV := build/lock-venv
COMPILE = CUSTOM_COMPILE_COMMAND="make lock" $(LOCK_VENV)/bin/pip-compile --quiet --generate-hashes --allow-unsafe \
	--strip-extras --no-emit-index-url --no-emit-find-links $(if $(UPGRADE),--upgrade)
lock:
	@test -x $(LOCK_VENV)/bin/pip-compile || { python3 -m venv $(LOCK_VENV) && $(LOCK_VENV)/bin/pip install --quiet "$(PIP_TOOLS)"; }
	$(COMPILE) --output-file locks/harness.txt pyproject.toml
	$(COMPILE) --extra test --extra report --output-file locks/dev.txt pyproject.toml locks/installers.in

clean:
	rm -rf build .pytest_cache
