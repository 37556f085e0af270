"""`make cluster` and `scripts/submit-workload` before any cluster runs: a cluster name is checked first (under
any kustomization file name kustomize reads), and a missing or unreachable cluster is one line, exit 2."""
from __future__ import annotations

import subprocess
import sys

import pytest

import harness.cluster.__main__ as cluster_main
from harness.core import REPO_ROOT, timeouts

pytestmark = pytest.mark.static


def test_a_name_that_is_no_cluster_is_refused_before_anything_starts(monkeypatch, capsys):
    def never(*_a, **_k):
        raise AssertionError("the cluster was started (tools built, plane started) for a name that is no cluster")
    monkeypatch.setattr(cluster_main, "LocalCluster", never)
    assert cluster_main.main(["--cluster", "nope", "--workdir", "/nonexistent/run"]) == 2
    captured = capsys.readouterr()
    out = captured.out + captured.err
    assert "no cluster 'nope' in clusters/ (have: dev-westus3, prod-eastus2)" in out, out


@pytest.mark.parametrize("name", ["kustomization.yml", "Kustomization"])
def test_a_cluster_under_any_kustomization_file_name_is_a_cluster(repo_copy, name):
    from harness.report import quotas

    for directory in ("clusters/prod-eastus2", "clusters/prod-eastus2/queues"):
        (repo_copy / directory / "kustomization.yaml").rename(repo_copy / directory / name)
    cluster_main.check_name("prod-eastus2", repo_copy)  # no ClusterError
    prod = quotas.load_tree(repo_copy, "head").clusters["prod-eastus2"]
    assert (prod.overlays, prod.components) == (["overlays/team-queues"], ["components/gpu-sku/standard-nd96amsr-a100-v4"])


def _submit(*args: str, **env: str) -> subprocess.CompletedProcess:
    code = "import sys; from harness.gate.workloads import main; sys.exit(main(sys.argv[1:]))"
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=timeouts.SCRIPT,
                          cwd=REPO_ROOT, env={"PATH": "/usr/bin:/bin", "HOME": env.pop("HOME", "/nonexistent"), **env})


REFUSED = """\
apiVersion: v1
kind: Config
clusters: [{name: stopped, cluster: {server: "https://127.0.0.1:9"}}]
users: [{name: admin, user: {token: x}}]
contexts: [{name: stopped, context: {cluster: stopped, user: admin}}]
current-context: stopped
"""


@pytest.mark.parametrize("case", ["unset", "missing file", "stopped cluster"])
def test_submit_without_a_reachable_cluster_is_one_line(tmp_path, case):
    env = {}
    if case == "missing file":
        env["KUBECONFIG"] = str(tmp_path / "admin.kubeconfig")
    elif case == "stopped cluster":
        (tmp_path / "admin.kubeconfig").write_text(REFUSED)
        env["KUBECONFIG"] = str(tmp_path / "admin.kubeconfig")
    proc = _submit("llm-training", "--queue", "default", **env)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert proc.stderr.startswith("submit-workload: ") and "KUBECONFIG" in proc.stderr and "`make cluster` prints" in proc.stderr, proc.stderr
    if case == "stopped cluster":
        assert "cannot reach the cluster" in proc.stderr and "Connection refused" in proc.stderr, proc.stderr


def test_set_without_an_equals_sign_says_how():
    proc = _submit("llm-training", "--queue", "default", "--set", "NUM_WORKERS", "--dry-run")
    assert proc.returncode == 2
    assert proc.stderr == "submit-workload: --set NUM_WORKERS: give VAR=value (e.g. --set NUM_WORKERS=2)\n", proc.stderr
