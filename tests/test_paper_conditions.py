"""Where the paper is silent, the reference harness's settings (issue 24), checked as a user meets
them: the paper experiments select the ``paper`` render preset, whose requests over real HTTP
carry the reference's image sizes and encodings from the reference's first view, and the model
templates put the reference's reasoning settings on the wire of each provider's own API."""

from __future__ import annotations

import base64
import io
import json

import numpy as np
import pytest
from PIL import Image

from tests.openai_server import ScriptedServer
from tests.test_harness import KEY_VAR
from tests.test_launch import EXPERIMENTS, composed, validate
from tests.test_observation import _images, _is_observation, script
from vabench.envs import EnvConfig, VABenchEnv
from vabench.envs.render import RENDER_PRESETS, Encoding
from vabench.envs.sim.geometry import look_at
from vabench.results.outcomes import read_rows
from vabench.results.records import read_events
from vabench.run.config.run import ConfigError, from_config
from vabench.run.driver import Driver

MOVE = {"action": "gripper.move_world", "axis": "z", "sign": "+", "distance_mm": 10}
STOP = {"stop": True, "reason": "test over"}
PAPER_EXPERIMENTS = sorted(set(EXPERIMENTS) - {"smoke"})


@pytest.fixture(autouse=True)
def _key(monkeypatch):
    monkeypatch.setenv(KEY_VAR, "sk-test-not-a-secret-123")


def _jpeg(url: str) -> Image.Image:
    head, b64 = url.split(",", 1)
    assert head == "data:image/jpeg;base64"
    return Image.open(io.BytesIO(base64.b64decode(b64)))


def _tables(quality: int) -> dict:
    out = io.BytesIO()
    Image.new("RGB", (16, 16)).save(out, "JPEG", quality=quality)
    return Image.open(io.BytesIO(out.getvalue())).quantization


@pytest.mark.parametrize("name", PAPER_EXPERIMENTS)
def test_every_paper_experiment_renders_at_the_paper_preset_and_smoke_stays_fast(name):
    assert validate(f"+experiment={name}", "model.id=oracle").render == "paper" == validate().render
    assert validate("+experiment=smoke").render == "fast"  # a minutes-long check, named as a departure


def test_center_high_is_the_first_active_view():
    """Reference notes 4.1: eye (0, -0.58, 1.48) looking at (0.17 s, gc_y - 0.02, max(0.86, gc_z - 0.05))."""
    env = VABenchEnv(EnvConfig(preset=RENDER_PRESETS["small"]))
    try:
        for task, side in (("grasp_single_cube", 1.0), ("lift_pot", 0.0)):
            env.reset(task, 1000 if side else 1001)
            gc = np.mean([env.world.arms[a].gc() for a in env.controlled], axis=0)
            eye, target = np.array([0.0, -0.58, 1.48]), np.array([0.17 * side, gc[1] - 0.02, max(0.86, gc[2] - 0.05)])
            assert np.allclose(env.camera.pose[:3, 3], eye) and np.allclose(
                env.camera.pose[:3, :3], look_at(eye, target, (0, 0, 1))
            )
    finally:
        env.close()


def test_passive_encoding_is_the_reference_q60_store_re_encoded_at_q95():
    rgb = np.random.default_rng(0).integers(0, 255, (48, 64, 3), dtype=np.uint8)
    paper = RENDER_PRESETS["paper"]
    assert paper.encoding(bundle=True) == Encoding(quality=95, source_quality=60)
    assert paper.encoding(bundle=False) == Encoding(quality=95)
    q60 = io.BytesIO()
    Image.fromarray(rgb).save(q60, "JPEG", quality=60)
    expected = io.BytesIO()
    Image.open(io.BytesIO(q60.getvalue())).save(expected, "JPEG", quality=95)
    assert paper.encoding(bundle=True).encode(rgb) == expected.getvalue()


def test_main_requests_over_http_carry_the_reference_sizes_and_encodings(tmp_path):
    """Under ``+experiment=main`` every active request image is a 1280x960 JPEG 95, the first of them
    rendered from ``center_high``; every passive request carries five 384x288 JPEG 95 (stored at 60)."""
    decisions = {"active": [{"action": "camera.view_side"}, MOVE, STOP], "passive": [MOVE, STOP]}

    def reply(body: dict) -> str:
        passive = sum(len(_images(m)) for m in body["messages"] if _is_observation(m)) >= 5
        return script(*decisions["passive" if passive else "active"])(body)

    with ScriptedServer(default=reply) as server:
        cfg = composed(
            "+experiment=main",
            "model=openai",
            "model.id=openai/paper-sizes",
            f"model.api_base={server.url}",
            f"model.api_key_env={KEY_VAR}",
            "summary=none",
            "protocol=both",
            "tasks=[grasp_single_cube]",
            "seeds=1",
            "runs=1",
            "ray.address=none",
            f"results_dir={tmp_path}",
            "run_id=paper",
        )
        run = from_config(cfg, tmp_path / "paper")
        df = Driver(run, log=lambda *_: None, progress=False).execute()
        requests = list(server.requests)
    assert len(df) == 2 and set(df["render"]) == {"paper"} and (df["status"] == "ok").all()
    assert set(df["condition"]) == {
        "openai/paper-sizes | active | summary none",
        "openai/paper-sizes | passive | summary none",
    }
    q95 = _tables(95)
    sizes = {"active": [], "passive": []}
    for body in requests:
        current = [i for i, m in enumerate(body["messages"]) if _is_observation(m)][-1]
        images = [_jpeg(u) for u in _images(body["messages"][current])]
        assert all(im.quantization == q95 for im in images)
        sizes["passive" if len(images) == 5 else "active"].append({im.size for im in images})
    assert sizes["active"] and all(s == {(1280, 960)} for s in sizes["active"])
    assert sizes["passive"] and all(s == {(384, 288)} for s in sizes["passive"])
    active = read_rows(tmp_path / "paper").query("protocol == 'active'").iloc[0]
    first = [e for e in read_events(tmp_path / "paper" / active["record"]) if e["type"] == "request"][0]
    sent = (tmp_path / "paper" / active["record"]).parent / first["images"][0]
    env = VABenchEnv(EnvConfig(preset=RENDER_PRESETS["paper"]))
    try:
        env.reset("grasp_single_cube", int(active["seed"]))
        gc = env.world.arms["right"].gc()
        eye, target = np.array([0.0, -0.58, 1.48]), np.array([0.17, gc[1] - 0.02, max(0.86, gc[2] - 0.05)])
        pose = np.eye(4)
        pose[:3, :3], pose[:3, 3] = look_at(eye, target, (0, 0, 1)), eye
        assert sent.read_bytes() == Encoding(quality=95).encode(env.camera.render(pose))  # what the model saw first
    finally:
        env.close()


# -- provider reasoning settings ---------------------------------------------------------------------


def _price(model: str) -> tuple[float, float]:
    """Input and output dollars per token in LiteLLM's (pinned, local) price map."""
    from vabench.agents.models.llm import _litellm

    cost = _litellm().model_cost[model]
    return cost["input_cost_per_token"], cost["output_cost_per_token"]


def _episode(tmp_path, template: str, model_id: str, api_base: str, *more: str):
    cfg = composed(
        f"model={template}",
        f"model.id={model_id}",
        f"model.api_base={api_base}",
        f"model.api_key_env={KEY_VAR}",
        "model.max_retries=0",
        "tasks=[grasp_single_cube]",
        "seeds=1",
        "ray.address=none",
        "recording.enabled=false",
        f"results_dir={tmp_path}",
        f"run_id={template}",
        *more,
    )
    df = Driver(from_config(cfg, tmp_path / template), log=lambda *_: None, progress=False).execute()
    return df.iloc[0]


def test_openai_reasoning_models_get_medium_effort_and_their_reasoning_tokens_are_counted_and_priced(tmp_path):
    usage = {"prompt_tokens": 1000, "completion_tokens": 600, "completion_tokens_details": {"reasoning_tokens": 500}}
    with ScriptedServer(default={"content": json.dumps(STOP), "usage": usage}) as server:
        row = _episode(tmp_path / "o3", "openai", "openai/o3", server.url)
        plain = _episode(tmp_path / "4o", "openai", "openai/gpt-4o", server.url)
        o3, gpt4o = server.requests
    assert o3["reasoning_effort"] == "medium" and "reasoning_effort" not in gpt4o  # LiteLLM drops it for gpt-4o
    assert (row["completion_tokens"], row["reasoning_tokens"], plain["status"]) == (600, 500, "ok")
    price = _price("o3")
    assert row["cost_usd"] == pytest.approx(1000 * price[0] + 600 * price[1])  # reasoning is billed as output


def test_anthropic_thinking_reaches_the_messages_api_and_its_text_stays_in_the_record(tmp_path):
    thought = "The cube is left of the gripper; I should look from the side first."
    usage = {"input_tokens": 1200, "output_tokens": 300}
    reply = {"content": json.dumps({"action": "camera.view_side"}), "usage": usage, "thinking": thought}
    with ScriptedServer() as server:
        server.script(reply, {"content": json.dumps(STOP), "usage": usage})
        row = _episode(tmp_path, "anthropic", "anthropic/claude-sonnet-4-5", server.base)
        first, second = server.requests
        paths = list(server.paths)
    assert paths == ["/v1/messages"] * 2
    assert first["thinking"] == {"type": "enabled", "budget_tokens": 1024} and first["max_tokens"] == 4096
    assert "temperature" not in first
    assert thought not in json.dumps(second)  # never sent back to the model
    assert row["reasoning_tokens"] > 0 and row["completion_tokens"] == 600
    price = _price("claude-sonnet-4-5")
    assert row["cost_usd"] == pytest.approx(2 * (1200 * price[0] + 300 * price[1]))
    events = read_events(tmp_path / "anthropic" / row["record"])
    replies = [e for e in events if e["type"] == "reply"]
    assert replies[0]["reasoning"] == thought and replies[0]["reasoning_tokens"] > 0


def test_gemini_gets_the_same_thinking_budget(tmp_path):
    usage = {"promptTokenCount": 1000, "candidatesTokenCount": 50, "thoughtsTokenCount": 400}
    with ScriptedServer(default={"content": json.dumps(STOP), "usage": usage, "thinking": "hm"}) as server:
        row = _episode(tmp_path, "gemini", "gemini/gemini-2.5-pro", server.base)
        (body,) = server.requests
    assert body["generationConfig"]["thinkingConfig"] == {"includeThoughts": True, "thinkingBudget": 1024}
    assert (row["reasoning_tokens"], row["completion_tokens"]) == (400, 450)


def test_thinking_with_a_temperature_is_refused_at_validation():
    with pytest.raises(ConfigError, match="model.temperature.*extended thinking"):
        validate("model=anthropic", "model.temperature=0.2")
