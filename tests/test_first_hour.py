"""What a new user meets first (issue 29): a dead endpoint, a results folder that cannot be written
and a config mistake each cost one line and leave nothing behind; a corrupt outcome file is set
aside and its episode runs again; runs that end with unjudged episodes say so, by cause, and in
the exit status; lookups (help, tasks, misspelt keys, short condition names)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from tests.openai_server import ScriptedServer
from tests.test_launch import composed, validate
from vabench.agents.chat.model import ModelConfig
from vabench.analysis.load import load_runs
from vabench.analysis.paired import condition_named
from vabench.launch import Exit
from vabench.launch.cli import help_text
from vabench.launch.words import misspelt
from vabench.results.outcomes import OutcomeRow, read_rows, write_row
from vabench.run.config.run import ConfigError, from_config
from vabench.run.config.specs import expand
from vabench.run.folder.state import todo, unjudged_summary
from vabench.run.probe import EndpointError, _connect, _probed, probe

ROOT = Path(__file__).resolve().parents[1]
KEY = "VABENCH_TEST_KEY"
ENV = {**os.environ, "RAY_AUTH_MODE": "disabled", "LITELLM_LOCAL_MODEL_COST_MAP": "True", KEY: "sk-test-0000"}


def launch(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "vabench.launch", *args]
    return subprocess.run(cmd, cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=timeout)


def dead_port() -> int:
    with socket.socket() as s:  # bound, never listening, then closed: nothing answers there
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize(
    "refused",
    [
        ["seeds=-1"],
        ["tasks=[no_such_task]"],
        ["perturbation=fog:1"],
        ["model=vllm", "model.id=hosted_vllm/x", "model.api_base=http://127.0.0.1:9/v1"],
        ["-m", "seeds=1,-1", "tasks=[grasp_single_cube]", "ray.address=none", "summary=expert"],
    ],
)
def test_a_refused_launch_with_the_default_results_dir_writes_nothing(tmp_path, refused):
    """Launched from a fresh folder with the default results_dir (relative) and run_id (a
    timestamp): a refusal leaves no results/ folder behind (it once left results/<timestamp>/)."""
    env = {**ENV, "PYTHONPATH": str(ROOT)}
    cmd = [sys.executable, "-m", "vabench.launch", *refused]
    done = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == Exit.REFUSED, done.stderr[-2000:]
    assert list(tmp_path.iterdir()) == []


# -- the endpoint probe -----------------------------------------------------------------------------
def test_a_dead_endpoint_is_one_line_in_seconds_and_no_run_folder(tmp_path):
    base = f"http://127.0.0.1:{dead_port()}/v1"
    done = launch("model=vllm", "model.id=hosted_vllm/x", f"model.api_base={base}", f"results_dir={tmp_path}/r",
                  "run_id=dead", "tasks=[grasp_single_cube]", "seeds=1")  # fmt: skip
    lines = (done.stdout + done.stderr).strip().splitlines()
    refused = (
        f"model.api_base={base}: connection refused (nothing listens there); start the server or fix model.api_base"
    )
    assert done.returncode == Exit.REFUSED, done.stderr[-2000:]
    assert lines == [f"endpoint: {refused}"]  # no retry, no warning, no traceback
    assert not (tmp_path / "r").exists()
    # in seconds: one TCP connection decides it, before LiteLLM is imported or a request is made
    assert _connect(ModelConfig(id="hosted_vllm/x", api_base=base)) == refused


def cfg(base: str, **more) -> ModelConfig:
    return ModelConfig(id="openai/probe-test", api_base=base, api_key_env=KEY, **more)


def test_the_probe_names_a_rejected_key_an_unknown_model_and_an_unknown_host(monkeypatch):
    monkeypatch.setenv(KEY, "sk-test-0000")
    _probed.clear()
    with ScriptedServer() as server:
        server.script({"status": 401, "body": "bad key"})
        with pytest.raises(EndpointError, match=rf"the key was rejected \(HTTP 401\); check \${KEY}"):
            probe(cfg(server.url))
        assert len(server.requests) == 1 and server.requests[0]["max_tokens"] == 1
        with pytest.raises(EndpointError, match="HTTP 401"):
            probe(cfg(server.url, name="other"))  # same endpoint: probed once, the verdict kept
        assert len(server.requests) == 1
        _probed.clear()
        server.script({"status": 404, "body": "no such model"})
        with pytest.raises(EndpointError, match="model 'openai/probe-test' not found there"):
            probe(cfg(server.url))
    with pytest.raises(EndpointError, match="unknown host no-such-host.invalid"):
        probe(cfg("http://no-such-host.invalid:8000/v1"))
    _probed.clear()


def test_a_transient_probe_failure_warns_and_goes_on(monkeypatch):
    monkeypatch.setenv(KEY, "sk-test-0000")
    _probed.clear()
    said = []
    with ScriptedServer() as server:
        server.script({"status": 503, "body": "overloaded"})
        probe(cfg(server.url), log=said.append)
        probe(cfg(server.url), log=said.append)  # once per endpoint
        assert len(server.requests) == 1
    assert len(said) == 1 and "going on" in said[0]
    monkeypatch.delenv(KEY)
    with pytest.raises(EndpointError, match=f"model.api_key_env names {KEY}, which is not set"):
        probe(cfg("http://127.0.0.1:1/v1"))
    probe(ModelConfig(id="oracle"))  # offline agents: nothing to probe
    _probed.clear()


# -- results folder and config errors ------------------------------------------------------------
def test_an_unwritable_results_folder_is_one_line_and_nothing_is_created(tmp_path):
    (tmp_path / "a-file").write_text("not a folder")
    done = launch(f"results_dir={tmp_path}/a-file/results", "run_id=x", "tasks=[grasp_single_cube]")
    assert done.returncode == Exit.REFUSED
    assert done.stderr.strip() == (
        f"results_dir={tmp_path}/a-file/results: {tmp_path}/a-file is not a folder; choose another results_dir="
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a-file"]


def test_a_config_error_leaves_no_run_folder_behind(tmp_path):
    done = launch(f"results_dir={tmp_path}/results", "run_id=x", "tasks=[no_such_task]")
    assert done.returncode == Exit.REFUSED
    assert done.stderr.startswith("config error: 'tasks': unknown task 'no_such_task'")
    assert list(tmp_path.iterdir()) == []
    (tmp_path / "results" / "kept").mkdir(parents=True)  # an existing folder stays, and what is in it
    done = launch(f"results_dir={tmp_path}/results", "run_id=x", "model=posetext", "tasks=[place_shoe]")
    assert done.returncode == Exit.REFUSED and "posetext controls one arm; place_shoe needs two" in done.stderr
    assert [p.name for p in (tmp_path / "results").iterdir()] == ["kept"]


def test_a_refused_sweep_leaves_no_sweep_folder_behind(tmp_path):
    done = launch("-m", f"results_dir={tmp_path}/results", "run_id=x", "tasks=[no_such_task]", "summary=own,none")
    assert done.returncode == Exit.REFUSED and "config error: 'tasks': unknown task 'no_such_task'" in done.stderr
    assert list(tmp_path.iterdir()) == []


def test_a_parallel_sweep_runs_every_job_and_exits_with_the_worst(tmp_path):
    """A refused job of a joblib sweep (another process) costs the others nothing, and the launcher's
    status says it was refused: the jobs' statuses are combined."""
    done = launch("-m", "hydra/launcher=joblib", "hydra.launcher.n_jobs=2", "seeds=1,-1", "tasks=[grasp_single_cube]",
                  "ray.address=none", "render=small", "recording.enabled=false", f"results_dir={tmp_path}",
                  "run_id=sweep")  # fmt: skip
    assert done.returncode == Exit.REFUSED, done.stderr[-2000:]
    assert "config error: 'seeds' must be >= 1, got -1" in done.stderr
    rows = read_rows(tmp_path / "sweep")
    assert len(rows) == 1 and rows["status"].tolist() == ["ok"]


def test_a_misspelt_key_gets_a_suggestion():
    assert misspelt(["tsks=[a]"]) == "unknown config key 'tsks'; did you mean 'tasks'?"
    assert misspelt(["ray.adress=none"]) == "unknown config key 'ray.adress'; did you mean 'ray.address'?"
    assert misspelt(["model.timout_s=3"]) == "unknown config key 'model.timout_s'; did you mean 'model.timeout_s'?"
    assert misspelt(["protocl=both"]) == "unknown config key 'protocl'; did you mean 'protocol'?"
    assert misspelt(["model=servo", "protocol=both", "+experiment=smoke", "model.extra.x=1", "seeds=[1,2]"]) is None
    assert misspelt(["summary=shared", "summary.source=gpt"]) is None  # a key of the chosen group option
    assert misspelt(["-m", "summary=own,none", "runs=2", "hydra/launcher=joblib", "hydra.launcher.n_jobs=3"]) is None
    with pytest.raises(ConfigError, match=r"model.temprature \(did you mean 'temperature'\?\)"):
        from_config({**composed(), "model": {**composed()["model"], "temprature": 1}}, Path("/tmp/x"))


def test_help_shows_examples_groups_and_exit_codes():
    text = help_text()
    assert "python -m vabench.launch +experiment=smoke" in text and "python -m vabench.tasks" in text
    assert "protocol    active, both, passive" in text and "exit status: 0 every episode judged" in text


def test_the_task_list_names_track_arms_budget_and_seeds():
    out = subprocess.run([sys.executable, "-m", "vabench.tasks"], cwd=ROOT, capture_output=True, text=True).stdout
    assert "lift_pot" in out and "dual (left, right)" in out and "put_everything_in_basket" in out
    line = next(x for x in out.splitlines() if x.startswith("grasp_single_cube "))
    assert line.split()[1:4] == ["base", "single", "(right)"] and "50" in line.split() and "20:" in line


# -- what an agent cannot do is refused before any work -----------------------------------------------
def test_a_one_arm_agent_leaves_two_arm_tasks_out_of_tasks_all_and_refuses_them_listed():
    said = []
    run = from_config(composed("model=posetext", "protocol=both"), Path("/tmp/x"), log=said.append)
    assert "place_shoe" not in run.tasks and "grasp_single_cube" in run.tasks
    assert any(s.startswith("tasks=all: place_shoe left out (posetext controls one arm") for s in said)
    with pytest.raises(ConfigError, match="posetext controls one arm; place_shoe needs two"):
        validate("model=posetext", "tasks=[place_shoe]")
    run = from_config(composed("model=servo", "protocol=both"), Path("/tmp/x"), log=said.append)
    assert {"place_shoe", "handover_horizontal_block", "lift_pot"} <= set(run.tasks)  # a skill for each


def test_a_replay_of_another_episode_is_refused_with_the_overrides_that_fit(tmp_path):
    record = tmp_path / "events.jsonl"
    start = {"type": "episode_start", "task": "grasp_single_cube", "seed": 1001, "protocol": "active"}
    record.write_text(json.dumps(start) + "\n")
    base = ("model=replay", f"model.extra.record={record}", "tasks=[grasp_single_cube]")
    with pytest.raises(ConfigError, match=r"set tasks=\[grasp_single_cube\] seeds=\[1001\] protocol=active"):
        validate(*base, "seeds=[1000]")
    assert validate(*base, "seeds=[1001]").tasks == ("grasp_single_cube",)


def test_explicit_seeds_outside_the_manifest_run_with_a_warning():
    said = []
    run = from_config(composed("tasks=[grasp_single_cube]", "seeds=[1000,7]"), Path("/tmp/x"), log=said.append)
    assert run.seeds == (1000, 7)
    assert len(said) == 1 and said[0].startswith("warning: seeds 7 of grasp_single_cube are not among its 20 verified")


# -- a corrupt outcome file ------------------------------------------------------------------------
def two_rows(tmp_path: Path):
    run = from_config(composed("tasks=[grasp_single_cube]", "seeds=2", f"results_dir={tmp_path}"), tmp_path / "run")
    specs = expand(run)
    for spec in specs:
        row = OutcomeRow(**run.identity, **spec.identity(), status="ok", success=True, end_reason="success", steps=3)
        write_row(spec.outcome_path(run.run_dir), row)
    return run, specs


def test_a_corrupt_outcome_file_is_set_aside_and_its_episode_runs_again(tmp_path):
    run, specs = two_rows(tmp_path)
    bad = specs[1].outcome_path(run.run_dir)
    bad.write_bytes(b"PAR1 truncated by a full disk")
    said = []
    pending, done = todo(run, log=said.append)
    assert pending == [(specs[1], 1)] and done == 1
    assert len(said) == 1 and said[0].startswith(f"unreadable outcome file {bad} (") and "runs again" in said[0]
    aside = list(bad.parent.glob("_unreadable-*"))
    assert not bad.exists() and len(aside) == 1 and aside[0].read_bytes().startswith(b"PAR1 truncated")
    assert len(read_rows(run.run_dir)) == 1 and len(pd.read_parquet(run.run_dir)) == 1  # readers skip it


def test_readers_show_the_run_and_name_the_unreadable_file(tmp_path):
    run, specs = two_rows(tmp_path)
    bad = specs[0].outcome_path(run.run_dir)
    bad.write_bytes(b"garbage")
    df = load_runs(run.run_dir)
    assert len(df) == 1 and [p for p, _ in df.attrs["unreadable"]] == [bad]
    from vabench.analysis.load import prepare

    _, notes = prepare(df)
    assert any(str(bad) in n and "left out" in n for n in notes)
    assert bad.exists()  # written a moment ago (a copy may still be writing it): named, not moved


@pytest.mark.slow
def test_relaunching_a_run_with_a_corrupt_file_reruns_that_episode(tmp_path):
    args = ("model=oracle", "tasks=[grasp_single_cube]", "seeds=1", "ray.address=none", "render=small",
            "recording.enabled=false", f"results_dir={tmp_path}", "run_id=r")  # fmt: skip
    assert launch(*args).returncode == Exit.JUDGED
    (outcome,) = (tmp_path / "r" / "outcomes").rglob("*.parquet")
    outcome.write_bytes(b"not parquet")
    again = launch(*args)
    assert again.returncode == Exit.JUDGED, again.stderr[-2000:]
    assert f"unreadable outcome file {outcome}" in again.stdout + again.stderr and "Traceback" not in again.stderr
    assert read_rows(tmp_path / "r")["status"].tolist() == ["ok"]


# -- the end of a run ------------------------------------------------------------------------------
def test_unjudged_rows_are_grouped_by_kind_and_cause():
    rows = pd.DataFrame(
        {
            "status": ["ok", "infra_error", "infra_error", "infra_error"],
            "error_kind": [None, "infra", "infra", "permanent"],
            "error": [
                None,
                "model: x: gave up after 7 attempts: Timeout",
                "model: x: gave up after 3 attempts: Timeout",
                "model: x: not retryable (status 400): BadRequestError",
            ],
        }  # fmt: skip
    )
    text = unjudged_summary(rows)
    assert text.splitlines() == [
        "3 of 4 episodes not judged (infra_error rows, excluded from every rate):",
        "  infra (2; rerun the same run_id to retry):",
        "    2 x model: x: gave up after N attempts: Timeout",
        "  permanent (1; retrying cannot help: fix the cause):",
        "    1 x model: x: not retryable (status 400): BadRequestError",
    ]
    assert unjudged_summary(rows.iloc[:1]) is None


def test_a_run_whose_episodes_are_not_judged_exits_3_and_says_why(tmp_path):
    with ScriptedServer(default={"status": 500, "body": "down"}) as server:
        done = launch("model=openai", "model.id=openai/x", f"model.api_base={server.url}", f"model.api_key_env={KEY}",
                      "model.max_retries=0", "max_attempts=1", "tasks=[grasp_single_cube]", "seeds=1",
                      "ray.address=none", "render=small", "recording.enabled=false", f"results_dir={tmp_path}",
                      "run_id=down")  # fmt: skip
    assert done.returncode == Exit.UNJUDGED, done.stderr[-2000:]
    assert "1 of 1 episode not judged" in done.stdout and "  infra (1; rerun the same run_id to retry):" in done.stdout
    assert "probe: model.api_base=" in done.stderr and "going on" in done.stderr
    assert "HTTP Request" not in done.stdout + done.stderr  # LiteLLM / httpx logging is quiet


# -- analysis lookups -----------------------------------------------------------------------------
def test_short_condition_names():
    labels = ["servo | active | summary none | render fast", "servo | passive | summary none | render fast",
              "oracle | active | summary none | render fast (privileged)"]  # fmt: skip
    assert condition_named("servo active", labels) == labels[0]
    assert condition_named("servo/passive", labels) == labels[1]
    assert condition_named(labels[2], labels) == labels[2]
    with pytest.raises(ValueError, match="2 conditions match 'servo'"):
        condition_named("servo", labels)
    assert condition_named("oracle privileged", labels) == labels[2]
    with pytest.raises(ValueError, match="no rows of condition 'gpt'"):
        condition_named("gpt", labels)


# -- printed tables and figures -------------------------------------------------------------------
def test_numbers_and_words_print_as_a_reader_expects():
    from vabench.analysis.cells import sign_test, signed
    from vabench.core.vocab import counted

    assert [signed(x) for x in (-0.001, 0.0, 1.234, -2.5)] == ["0.00", "0.00", "+1.23", "-2.50"]
    assert sign_test("passive worse", 0, 0, 2, float("nan")) == "no test: no non-tied family (2 tied)"
    assert sign_test("passive worse", 3, 4, 1, 0.625) == "passive worse on 3 of 4 non-tied (1 tied), p=0.62"
    assert (counted(1, "episode"), counted(2, "episode"), counted(0, "family", "families")) == (
        "1 episode",
        "2 episodes",
        "0 families",
    )


def test_a_note_common_to_several_tables_is_printed_once():
    from vabench.analysis.report import to_markdown

    a, b = pd.DataFrame({"x": [1]}), pd.DataFrame({"y": [2]})
    a.attrs, b.attrs = {"title": "A", "notes": ["shared", "only a"]}, {"title": "B", "notes": ["shared"]}
    said: set[str] = set()
    first, second = to_markdown(a, said), to_markdown(b, said)
    assert "- shared" in first and "- only a" in first
    assert "- shared" not in second and "(1 note(s) as above.)" in second
    assert "- shared" in to_markdown(b)  # a table on its own (a file) keeps its notes


def test_figure_labels_drop_what_every_condition_shares(tmp_path):
    from vabench.analysis.diagnostic_plots import diagnostic_profile_radar
    from vabench.analysis.labels import CRITERIA
    from vabench.analysis.plots import short_labels

    conds = ["oracle | active | summary none (privileged)", "servo | passive | summary none"]
    assert short_labels(conds) == (["oracle\nactive\n(privileged)", "servo\npassive"], "summary none")
    profile = pd.DataFrame(
        [
            (1, c, "M", k, 1, 2, float("nan") if (c == conds[1] and k == "SR") else 50.0)
            for c in conds
            for k in CRITERIA
        ],
        columns=["rank", "condition", "module", "criterion", "k", "n", "score_pct"],
    )
    assert diagnostic_profile_radar(profile, tmp_path / "radar.png").stat().st_size > 10_000


@pytest.mark.parametrize(
    ("status", "retried"),
    [(400, False), (401, False), (403, False), (404, False), (408, True), (429, True), (503, True)],
)
def test_provider_errors_are_classified_once_4xx_permanent_but_408_and_429(status, retried, monkeypatch):
    from vabench.agents.chat.model import ModelError
    from vabench.agents.models.llm import LiteLLMModel

    monkeypatch.setenv(KEY, "sk-test-0000")
    with ScriptedServer() as server:
        server.script({"status": status, "body": "scripted"}, "ok")
        model = LiteLLMModel(cfg(server.url, max_retries=1, backoff_initial_s=0.01, backoff_max_s=0.01))
        if retried:
            assert model.complete([{"role": "user", "content": "hi"}]).text == "ok"
            assert server.statuses == [status, 200]
        else:
            with pytest.raises(ModelError) as err:
                model.complete([{"role": "user", "content": "hi"}])
            assert err.value.permanent and server.statuses == [status] and f"status {status}" in str(err.value)


def test_an_agent_that_refuses_an_episode_as_it_starts_is_a_permanent_error(physics_env, tmp_path):
    """Validation refuses these runs; an episode that starts anyway (a hand-built run) is never
    retried as infrastructure."""
    from vabench.agents.episode import Episode, run_episode
    from vabench.agents.models.offline import replay
    from vabench.agents.models.posetext import PosetextAgent

    record = tmp_path / "events.jsonl"
    start = {"type": "episode_start", "task": "grasp_single_cube", "seed": 1001, "protocol": "active"}
    record.write_text(json.dumps(start) + "\n")
    replay = run_episode(
        physics_env, replay(record), Episode.of("grasp_single_cube", 1000, env=physics_env), tmp_path / "a"
    )
    assert (replay.status, replay.error_kind) == ("infra_error", "permanent") and "seeds=[1001]" in replay.error
    one_arm = run_episode(physics_env, PosetextAgent(), Episode.of("place_shoe", 1000, env=physics_env), tmp_path / "b")
    assert (one_arm.status, one_arm.error_kind) == ("infra_error", "permanent") and "one arm" in one_arm.error


def test_a_provider_key_that_is_missing_is_named_before_any_work(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    _probed.clear()
    with ScriptedServer() as server, pytest.raises(EndpointError, match=r"no API key was found; set the provider"):
        probe(ModelConfig(id="openai/x", api_base=server.url))
    _probed.clear()
