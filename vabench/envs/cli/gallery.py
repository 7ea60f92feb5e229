"""A picture of every task, to look at as a person would: the initial active view and the state
after the scripted expert (same view, and a gripper-centred oblique view, since the arm often
hides the result), on the first verified seed, as PNG files plus one contact sheet. Two-arm
tasks also get ``<task>_views.png``: the fifteen arm-specific semantic views (rows left, right,
both; columns the five views) just before the expert's last gripper action, when both arms are
engaged.

    python -m vabench.envs.cli.gallery --out gallery/            # every task
    python -m vabench.envs.cli.gallery --task place_cube_in_bowl --camera paper
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from PIL import Image, ImageDraw

from vabench.core.errors import command
from vabench.core.vocab import LEFT, RIGHT, Render

from ..env import EnvConfig, VABenchEnv
from ..render import RENDER_PRESETS
from ..seeds import eval_seeds
from ..sim.camera import PASSIVE_ORDER, semantic_target, view_pose
from ..tasks import TASKS, task_class


def shoot(env: VABenchEnv, task: str, seed: int, out: Path) -> tuple[list[Path], bool]:
    """Initial view, final view (same camera) and a gripper-centred oblique view of the end."""
    images = [env.reset(task, seed).images["active"]]
    last, success = images[0], False
    for result in env.expert_steps():
        last, success = result.observation.images["active"], result.success
    images.append(last)
    images.append(env.camera.passive_bundle(env._ees(), env.controlled)["oblique_45"])  # the passive observer
    paths = [out / f"{task}_{name}.png" for name in ("initial", "final", "final_oblique")]
    for image, path in zip(images, paths, strict=True):
        Image.fromarray(image).save(path)
    return paths, success


def arm_views(env: VABenchEnv) -> dict[str, Image.Image]:
    """The fifteen ``view_<arm>_<view>`` images of the current state, without stepping the env."""
    gcs = env._gcs()
    out = {}
    for who in (LEFT, RIGHT, "both"):
        for view in PASSIVE_ORDER:
            base, target, mirror = semantic_target(f"{who}_{view}", gcs, env.controlled)
            out[f"view_{who}_{view}"] = Image.fromarray(env.camera.render(view_pose(base, target, mirror)[0]))
    return out


def dual_views(env: VABenchEnv, task: str, seed: int, out: Path) -> tuple[Path, bool]:
    """Run the expert; keep the arm views from just before its last gripper action; one labelled sheet."""
    env.reset(task, seed)
    views, success = arm_views(env), False
    for action in env.expert():
        if "gripper.open" in action["action"] or "gripper.close" in action["action"]:
            views = arm_views(env)
        result = env.step(action)
        success = result.success
        if result.done:
            break
    w, h = next(iter(views.values())).size
    w, h = w // 2, h // 2
    sheet = Image.new("RGB", (5 * w, 3 * (h + 20)), "white")
    draw = ImageDraw.Draw(sheet)
    for i, (name, image) in enumerate(views.items()):
        x, y = (i % 5) * w, (i // 5) * (h + 20)
        draw.text((x + 4, y + 4), f"camera.{name}", fill="black")
        sheet.paste(image.resize((w, h)), (x, y + 20))
    path = out / f"{task}_views.png"
    sheet.save(path)
    return path, success


def contact_sheet(rows: list[tuple[str, list[Path], bool]], out: Path) -> Path:
    """All tasks in one image: a row per task (initial | final | final, oblique), labelled."""
    w, h = Image.open(rows[0][1][0]).size
    sheet = Image.new("RGB", (3 * w, len(rows) * (h + 24)), "white")
    draw = ImageDraw.Draw(sheet)
    for i, (name, paths, ok) in enumerate(rows):
        y = i * (h + 24)
        verdict = "success" if ok else "FAILED"
        draw.text((6, y + 6), f"{name}: initial | after the expert ({verdict}) | same, oblique view", fill="black")
        for j, path in enumerate(paths):
            sheet.paste(Image.open(path), (j * w, y + 24))
    path = out / "gallery.png"
    sheet.save(path)
    return path


@command("python -m vabench.envs.cli.gallery")
def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--task", action="append", choices=sorted(TASKS), help="default: every task")
    ap.add_argument("--out", type=Path, default=Path("gallery"))
    ap.add_argument("--render", choices=list(RENDER_PRESETS), default=Render.FAST)
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    env = VABenchEnv(EnvConfig(preset=RENDER_PRESETS[args.render]))
    rows = []
    try:
        for task in args.task or sorted(TASKS):
            seed = eval_seeds(task)[0]
            paths, ok = shoot(env, task, seed, args.out)
            rows.append((task, paths, ok))
            print(f"{task} seed {seed}: {'success' if ok else 'FAILED'} -> {', '.join(p.name for p in paths)}")
            if len(task_class(task).arms) == 2:
                path, ok = dual_views(env, task, seed, args.out)
                rows[-1] = (task, paths, rows[-1][2] and ok)
                print(f"{task} seed {seed}: arm-specific views -> {path.name}")
    finally:
        env.close()
    print(f"contact sheet: {contact_sheet(rows, args.out)}")
    return 0 if all(ok for _, _, ok in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
