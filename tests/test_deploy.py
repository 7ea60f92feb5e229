"""The cluster examples in deploy/ keep the key rule of docs/cluster.md: keys reach each node's Ray
from that node's own environment (a sourced file, a Kubernetes Secret), never as a literal value
and never through Ray's runtime environment; and every node runs the same image."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

DEPLOY = Path(__file__).resolve().parents[1] / "deploy"
KEY = re.compile(r"(API_KEY|TOKEN|SECRET)", re.IGNORECASE)


def test_ray_up_starts_ray_only_after_sourcing_the_key_file_copied_to_every_node():
    cfg = yaml.safe_load((DEPLOY / "ray-cluster.yaml").read_text())
    assert "~/.vabench-keys" in cfg["file_mounts"]
    for kind in ("head_start_ray_commands", "worker_start_ray_commands"):
        starts = [c for c in cfg[kind] if "ray start" in c]
        assert starts and all(c.index("source ~/.vabench-keys") < c.index("ray start") for c in starts), kind
    assert "runtime_env" not in (DEPLOY / "ray-cluster.yaml").read_text()
    assert set(cfg["available_node_types"]) == {cfg["head_node_type"], "cpu_worker"}


def test_kuberay_gives_head_and_workers_the_same_keys_from_a_secret_and_the_same_image():
    cluster, claim = yaml.safe_load_all((DEPLOY / "kuberay-cluster.yaml").read_text())
    groups = [cluster["spec"]["headGroupSpec"], *cluster["spec"]["workerGroupSpecs"]]
    containers = [c for g in groups for c in g["template"]["spec"]["containers"]]
    assert len({c["image"] for c in containers}) == 1
    envs = [c["env"] for c in containers]
    assert all(env == envs[0] for env in envs)
    keys = [e for e in envs[0] if KEY.search(e["name"])]
    assert keys and all("value" not in e and "secretKeyRef" in e["valueFrom"] for e in keys)
    head_volumes = cluster["spec"]["headGroupSpec"]["template"]["spec"]["volumes"]
    assert head_volumes[0]["persistentVolumeClaim"]["claimName"] == claim["metadata"]["name"]


def test_the_image_is_built_by_the_project_setup_and_holds_no_key():
    text = (DEPLOY / "Dockerfile").read_text()
    assert "./scripts/setup.sh" in text and not KEY.search(re.sub(r"^#.*$", "", text, flags=re.M))
