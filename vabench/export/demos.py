"""Expert episodes from the demonstrations (``$VABENCH_CACHE/demos/<preset>/<task>/``).

A stored demonstration is what a model may watch: RGB frames at 3 simulated frames per second and
a manifest, no actions and no robot state (vabench.envs.demo_recorder). So the exporter runs the task's
expert again on the demo's seed at the demo's render preset (the same physics the stored video
shows, as ``demos.trace`` relies on) and keeps, per expert action, the image of the demo's fixed
view, the robot state and the action, exactly as a model episode's record holds them. A time-sampled
frame at 3 fps falls in the middle of an action, where no single action of the paper's metric
action space describes the step to the next frame; one frame per decision does.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

from vabench.core.vocab import ACTIVE, EndReason, Intervention, Perturbation, Robot, Status
from vabench.envs.demo_recorder import DEMO_FORMAT
from vabench.envs.env import EnvConfig, VABenchEnv
from vabench.envs.render import render_preset
from vabench.envs.seeds import demo_seed, split_seeds
from vabench.envs.sim.camera import INITIAL_VIEW

from .clips import Clip, ExportError, columns
from .features import NO_ACTION

MANIFEST = "demo.json"
DEMO_MODEL = "scripted_expert"  # the model column of a demonstration's episode
DEMO_CONDITION = "demonstration"
ORACLE_CONDITION = "oracle"  # the expert's episodes on a split's seeds (python -m vabench.export lerobot --oracle)
DEMO_SPLIT = "demo"  # a demonstration's seed: the demonstration pool, neither split's (vabench.envs.seeds)


def is_demos(path: Path) -> bool:
    return bool(demo_folders(path))


def demo_folders(path: Path, tasks: Iterable[str] = ()) -> list[Path]:
    """The demonstrations under ``path`` (a task's folder, a preset's, or the demos root), in
    order; only ``tasks`` when named."""
    path, tasks = Path(path), set(tasks)
    found = [path] if (path / MANIFEST).is_file() else sorted(p.parent for p in path.glob(f"**/{MANIFEST}"))
    return [f for f in found if not tasks or f.name in tasks]


def demo_clip(folder: Path, scratch: Path) -> Clip:
    """Replay one demonstration (its frames written under ``scratch``)."""
    meta = json.loads((Path(folder) / MANIFEST).read_text())
    if meta.get("format") != DEMO_FORMAT:
        raise ExportError(f"{folder}/{MANIFEST} is not a vabench demonstration ({DEMO_FORMAT})")
    task, preset = meta["task"], render_preset(meta["render"])
    out = Path(scratch) / preset.name / task
    clip = expert_clip(task, demo_seed(task), preset, out, f"the demonstration of {task} ({preset.name})")
    clip.meta.update(condition=DEMO_CONDITION, record=f"{preset.name}/{task}", split=DEMO_SPLIT)
    return clip


def oracle_clips(tasks: Iterable[str], split: str, seeds: int | None, render: str, scratch: Path, bar=iter) -> list:
    """The expert's episodes on the first ``seeds`` (None: every) seeds of ``split`` of each task,
    at ``render``'s preset, filmed from the demonstrations' view: data to learn from, e.g. BC on
    ``split=train`` (the evaluation manifests stay unseen)."""
    preset, todo = render_preset(render), []
    for task in tasks:
        chosen = split_seeds(task, Robot.PANDA, split)
        todo += [(task, seed) for seed in (chosen if seeds is None else chosen[:seeds])]
    clips = []
    for task, seed in bar(todo):
        clip = expert_clip(task, seed, preset, Path(scratch) / preset.name / task / str(seed), f"{task} seed {seed}")
        clip.meta.update(condition=ORACLE_CONDITION, record=f"{preset.name}/{task}/{seed}", split=str(split))
        clips.append(clip)
    return clips


def expert_clip(task: str, seed: int, preset, out: Path, where: str) -> Clip:
    """The scripted expert on ``task`` at ``seed``: one frame per expert action from the active
    camera's first view (the demonstrations'), the robot state and the action, as a record holds them."""
    out.mkdir(parents=True, exist_ok=True)
    env = VABenchEnv(EnvConfig(preset=preset))
    try:
        obs = env.reset(task, seed, ACTIVE.name)  # the active camera at its first view: the demo's
        arms, states, actions, frames = (
            tuple(obs.arms),
            {0: env.evaluator_state()},
            {},
            [_save(out, obs, preset.demo_encoding)],
        )
        for decision in env.expert():
            step = env.step(decision)
            actions[step.step] = {
                "kind": step.kind,
                "payload": decision,
                "valid": step.action_valid,
                "planner_success": step.planner_success,
                "success": step.success,
            }
            states[step.step] = env.evaluator_state()
            if step.done:
                break
            frames.append(_save(out, step.observation, preset.demo_encoding))
        success, steps, instruction = bool(env.success), env.steps, env.task.instruction
    finally:
        env.close()
    table, dof = columns(states, actions, len(frames), NO_ACTION, arms, where)
    row = {
        "run_id": None,
        "condition": DEMO_CONDITION,
        "model": DEMO_MODEL,
        "task": task,
        "seed": seed,
        "run_index": 1,
        "attempt": 1,
        "protocol": ACTIVE.name,
        "render": preset.name,
        "robot": Robot.PANDA,  # demonstrations are the Panda's
        "perturbation": Perturbation.NONE,
        "intervention": Intervention.NONE,
        "status": Status.OK,
        "success": success,
        "end_reason": EndReason.SUCCESS if success else EndReason.BUDGET,
        "steps": steps,
        "privileged": True,
        "outcome_key": None,
        "record": None,
        "split": None,
    }
    return Clip(instruction, {INITIAL_VIEW: frames}, table, row, dof, Robot.PANDA)


def _save(folder: Path, obs, encoding) -> Path:
    """The observation's image as the demo tools send demo frames (the preset's JPEG)."""
    path = folder / f"step_{obs.step:03d}{encoding.suffix}"
    path.write_bytes(encoding.encode(obs.images[ACTIVE.name]))
    return path
