"""The progress bar tells the truth about money: its last line's model calls, tokens and spend are
the sums of the rows the run wrote, on Ray (the default) and in this process, with and without a
cost limit, against a priced OpenAI-compatible provider over real HTTP (issue 41: a run ended
with ``calls=0`` and no spend on its bar while its rows recorded 9 calls and $0.0032)."""

from __future__ import annotations

import json
import os
import re
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.openai_server import ScriptedServer
from tests.test_launch import composed
from vabench.agents.models.llm import prices
from vabench.run import driver as driver_mod
from vabench.run.config.run import from_config
from vabench.run.driver import Driver
from vabench.run.progress import ProgressBar, money

KEY_VAR = "VABENCH_BAR_TEST_KEY"
USAGE = {"prompt_tokens": 700, "completion_tokens": 45}  # gpt-4o: about $0.0022 a call
MOVE = {"action": "gripper.move_world", "axis": "z", "sign": "+", "distance_mm": 10}
RAY = pytest.mark.xdist_group("ray")


def two_moves(body: dict) -> dict:
    said = sum(m.get("role") == "assistant" for m in body["messages"])
    return {"content": json.dumps(MOVE if said < 2 else {"stop": True}), "usage": USAGE}


class Gate:
    """Two moves, then each episode's last call waits until the test opens the gate: meanwhile both
    episodes are in flight with two answered calls each and no row."""

    def __init__(self):
        self.open, self.held = threading.Event(), threading.Semaphore(0)

    def __call__(self, body: dict) -> dict:
        if sum(m.get("role") == "assistant" for m in body["messages"]) == 2:
            self.held.release()
            self.open.wait(timeout=300)
        return two_moves(body)


@pytest.fixture(scope="module")
def ray_two_cpus():
    os.environ["RAY_AUTH_MODE"] = "disabled"
    os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
    os.environ[KEY_VAR] = "sk-fake-bar-test"  # before Ray starts: its workers inherit this environment
    import ray

    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield ray
    ray.shutdown()


def priced_run(server, tmp_path, run_id: str, *extra: str):
    overrides = [
        "model=openai", "model.id=openai/gpt-4o", f"model.api_base={server.url}", f"model.api_key_env={KEY_VAR}",
        "tasks=[grasp_single_cube]", "seeds=2", "render=small", "ray.env_actors=1", "ray.episodes_per_actor=2",
        f"results_dir={tmp_path}", f"run_id={run_id}", *extra,
    ]  # fmt: skip
    return from_config(composed(*overrides), tmp_path / run_id)


def last_figures(err: str) -> dict[str, str]:
    """The postfix of the last line the bar drew: ``{"calls": "6", "tokens": ..., "spent": ...}``."""
    lines = [line for line in err.replace("\r", "\n").splitlines() if "2/2" in line]
    assert lines, err[-2000:]
    return dict(re.findall(r"(\w+)=([^,\]\s]+)", lines[-1].rsplit("[", 1)[-1]))


def cost_cap(cap: float | None) -> list[str]:
    return [f"model.max_cost_usd={cap}"] if cap else []


def cap_shown(cap: float | None) -> str:
    return f"/{cap:g}" if cap else ""


class Watched(ProgressBar):
    """The driver's bar, which sets ``seen`` once a redraw's figures are ``want``."""

    want: dict = {}
    seen = threading.Event()

    def show(self, backend, force: bool = False, draw: bool = True) -> None:
        super().show(backend, force, draw)
        if self.figures() == self.want:
            self.seen.set()


def check_bar_against_rows(rows, server, capfd, cap: float | None = None):
    shown = last_figures(capfd.readouterr().err)
    assert len(rows) == 2 and rows["status"].eq("ok").all()
    calls, cost = int(rows["model_calls"].sum()), float(rows["cost_usd"].sum())
    tokens = int(rows["prompt_tokens"].sum() + rows["completion_tokens"].sum())
    assert calls == 6 and len(server.requests) == 6 and cost > 0
    assert shown.get("calls") == str(calls), shown
    assert shown.get("tokens") == str(tokens), shown
    assert shown.get("spent") == money(cost) + cap_shown(cap), shown


@RAY
@pytest.mark.parametrize("cap", [None, 5.0], ids=["no-cap", "cap"])
def test_on_ray_the_bar_shows_what_episodes_in_flight_spent_and_ends_on_the_rows(
    ray_two_cpus, tmp_path, capfd, monkeypatch, cap
):
    monkeypatch.setenv(KEY_VAR, "sk-fake-bar-test")
    monkeypatch.setattr(driver_mod, "ProgressBar", Watched)
    Watched.seen = threading.Event()
    gate = Gate()
    with ScriptedServer(default=gate) as server, ThreadPoolExecutor(1) as pool:
        driver = Driver(priced_run(server, tmp_path, "ray", *cost_cap(cap)), log=lambda *_: None, progress=True)
        done = pool.submit(driver.execute)
        for _ in range(2):  # both episodes wait for their last reply: four calls answered, no row yet
            assert gate.held.acquire(timeout=300)
        per_call = float(prices("openai/gpt-4o").input * USAGE["prompt_tokens"])
        per_call += prices("openai/gpt-4o").output * USAGE["completion_tokens"]
        Watched.want = {"calls": 4, "tokens": 4 * sum(USAGE.values()), "spent": money(4 * per_call) + cap_shown(cap)}
        try:
            assert Watched.seen.wait(timeout=300), driver.bar.figures()  # the workers' reports reached the bar
            assert driver.bar.rows.model_calls == 0 and len(driver.bar.inflight) == 2  # from episodes in flight
        finally:
            gate.open.set()
        rows = done.result(timeout=600)
    check_bar_against_rows(rows, server, capfd, cap)


def test_in_process_the_bar_ends_on_the_rows_calls_tokens_and_spend(tmp_path, capfd, monkeypatch):
    monkeypatch.setenv(KEY_VAR, "sk-fake-bar-test")
    with ScriptedServer(default=two_moves) as server:
        run = priced_run(server, tmp_path, "here", "ray.address=none", *cost_cap(0.5))
        rows = Driver(run, log=lambda *_: None, progress=True).execute()
        check_bar_against_rows(rows, server, capfd, 0.5)


def test_money_is_shown_to_the_cent_above_a_dollar_and_to_four_places_below():
    assert [money(x) for x in (0.0032, 0.00246, 0.0, 1.234, 1234.5)] == [
        "$0.0032",
        "$0.0025",
        "$0.0000",
        "$1.23",
        "$1234.50",
    ]
