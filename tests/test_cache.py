"""The response cache (model.cache): a run killed with kill -9 mid-episode and resumed sends the
provider none of the requests it had answered (the server's log says so), and ends with the
row of an uninterrupted run of the same deterministic fake model; ``only`` never calls a
provider; no key enters the cache. Both runs then verify from their records."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from tests.openai_server import ScriptedServer
from tests.test_launch import composed
from vabench.agents.chat.model import ModelConfig, ModelError
from vabench.agents.models.kinds import make_model
from vabench.results.layout import CACHE
from vabench.results.outcomes import read_rows
from vabench.results.recordfile import read_events
from vabench.run.config.run import from_config
from vabench.run.driver import Driver
from vabench.verify import verify

KEY_VAR, KEY = "VABENCH_CACHE_TEST_KEY", "sk-cache-test-secret-0123456789"
MOVE = {"action": "gripper.move_world", "axis": "z", "sign": "+", "distance_mm": 10, "reason": "up"}
SAME = ["success", "end_reason", "steps", "robot_actions", "checkpoints_done", "status"]


class Deterministic:
    """A fake model whose reply is a function of the request alone (its assistant turns so far):
    four moves, then stop. ``kill``: (call number, process) to kill -9 when that call arrives."""

    def __init__(self):
        self.calls, self.kill, self.lock = 0, None, threading.Lock()

    def __call__(self, body: dict) -> str:
        with self.lock:
            self.calls += 1
            if self.kill is not None and self.calls == self.kill[0]:
                os.kill(self.kill[1].pid, signal.SIGKILL)  # the driver dies before this call is answered
        said = sum(m.get("role") == "assistant" for m in body["messages"])
        return json.dumps(MOVE if said < 4 else {"stop": True, "reason": "done"})


def overrides(server: ScriptedServer, results: Path, run_id: str) -> list[str]:
    return [
        "model=openai",
        "model.id=openai/fake",
        f"model.api_base={server.url}",
        f"model.api_key_env={KEY_VAR}",
        "model.max_retries=0",
        "model.cache=on",
        "probe=false",  # the endpoint probe is a request of its own; this test counts the episode's
        "tasks=[grasp_single_cube]",
        "seeds=1",
        "render=small",
        "recording.enabled=false",
        "ray.address=none",
        f"results_dir={results}",
        f"run_id={run_id}",
    ]


def command(server: ScriptedServer, results: Path, run_id: str) -> list[str]:
    """The run as a process of its own (the one this test kills -9)."""
    return [sys.executable, "-m", "vabench.launch", *overrides(server, results, run_id)]


def run_here(server: ScriptedServer, results: Path, run_id: str) -> None:
    """The run in this process (the same driver, without a second interpreter's start-up)."""
    cfg = composed(*overrides(server, results, run_id))
    Driver(from_config(cfg, results / run_id), log=lambda *_: None, progress=False).execute()


def messages(server: ScriptedServer, first: int, last: int | None = None) -> list[str]:
    return [json.dumps(r["messages"], sort_keys=True) for r in server.requests[first:last]]


def test_a_killed_run_resumes_from_the_cache_without_resending_its_answered_prefix(tmp_path, monkeypatch):
    monkeypatch.setenv(KEY_VAR, KEY)
    env = {**os.environ, KEY_VAR: KEY}
    model = Deterministic()
    with ScriptedServer(default=model) as server:
        run_here(server, tmp_path, "whole")
        whole = len(server.requests)
        assert whole == 5  # four moves and a stop
        model.kill = (server_calls := whole + 4, subprocess.Popen(command(server, tmp_path, "cut"), env=env))
        assert model.kill[1].wait(timeout=600) == -signal.SIGKILL
        answered = messages(server, whole, server_calls - 1)  # three answered before the kill
        run_here(server, tmp_path, "cut")  # resumed: the killed process's lock is stale, its cache kept
        again = messages(server, server_calls)
    assert len(answered) == 3 and not set(again) & set(answered)  # not one answered request sent again
    assert len(again) == whole - 3  # the unanswered call and what followed it
    rows = {r: read_rows(tmp_path / r / "outcomes").iloc[0] for r in ("whole", "cut")}
    assert [rows["cut"][c] for c in SAME] == [rows["whole"][c] for c in SAME]
    assert (rows["whole"]["cache_hits"], rows["cut"]["cache_hits"]) == (0, 3)
    events = {r: read_events(tmp_path / r / rows[r]["record"]) for r in rows}
    replies = {r: [e["text"] for e in events[r] if e["type"] == "reply"] for r in rows}
    assert replies["cut"] == replies["whole"]
    cache = tmp_path / "cut" / CACHE
    assert len(list(cache.rglob("*.json"))) == whole
    assert not any(KEY in p.read_text() for p in cache.rglob("*.json"))  # no key ever in the cache
    for run in ("whole", "cut"):  # a provider's episodes, resumed from the cache or not, verify
        report = verify(tmp_path / run)
        assert report.ok and report.reproduced == 1, report.lines


def test_only_never_calls_a_provider(tmp_path):
    with ScriptedServer(default="never") as server:
        cfg = ModelConfig(id="openai/fake", api_base=server.url, api_key_env=KEY_VAR, cache="only")
        model = make_model(cfg)
        model.bind(tmp_path / CACHE / "episode")
        with pytest.raises(ModelError, match="model.cache=only") as e:
            model.complete([{"role": "user", "content": "hello"}])
        assert e.value.permanent and server.requests == []


def test_an_unknown_cache_mode_names_the_key():
    with pytest.raises(ValueError, match="'model.cache' must be one of off, on, only"):
        ModelConfig(id="openai/fake", cache="sometimes")
