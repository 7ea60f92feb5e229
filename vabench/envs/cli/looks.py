"""Pictures of what a model sees, as small labelled PNGs on a verified seed: the active view beside
the five passive views (``views.png``, at the default ``paper`` preset), every visual perturbation
at every level, and every embodiment (home, and holding the cube after the expert's grasp). The
README and the docs show the committed copies in ``docs/looks/``; this makes them again from the
code (meshes come from the cache).

    python -m vabench.envs.cli.looks --out docs/looks                # every sheet
    python -m vabench.envs.cli.looks --out /tmp/looks --only views --task place_cube_in_bowl --seed 1003
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw

from vabench.core.errors import command
from vabench.core.vocab import ACTIVE, PASSIVE, Robot

from ..env import EnvConfig, VABenchEnv
from ..perturb import PerturbationConfig, every_level
from ..render import RENDER_PRESETS
from ..seeds import eval_seeds

TILE = (256, 192)


def _label(rgb: np.ndarray, text: str) -> Image.Image:
    tile = Image.fromarray(rgb).resize(TILE)
    draw = ImageDraw.Draw(tile)
    draw.rectangle((0, 0, 8 + 6 * len(text), 14), fill="black")
    draw.text((4, 1), text, fill="white")
    return tile


def _sheet(tiles: list[Image.Image], columns: int, out: Path) -> Path:
    rows = -(-len(tiles) // columns)
    sheet = Image.new("RGB", (columns * TILE[0], rows * TILE[1]), "white")
    for i, tile in enumerate(tiles):
        sheet.paste(tile, ((i % columns) * TILE[0], (i // columns) * TILE[1]))
    out.parent.mkdir(parents=True, exist_ok=True)
    sheet.save(out, optimize=True)
    return out


def views(task: str, seed: int, out: Path) -> Path:
    """The first active view and the five passive views of one scene (the two protocols' images)."""
    env = VABenchEnv(EnvConfig(preset=RENDER_PRESETS["paper"]))
    active = env.reset(task, seed, ACTIVE.name).images[ACTIVE.name]
    tiles = [_label(active, "active camera (one view, movable)")]
    passive = env.reset(task, seed, PASSIVE.name).images
    tiles += [_label(rgb, f"passive: {view}") for view, rgb in passive.items()]
    env.close()
    return _sheet(tiles, 3, out)


def perturbations(task: str, seed: int, out: Path) -> Path:
    """The first active view under none and every perturbation level (what a model is sent)."""
    tiles = []
    for p in [PerturbationConfig(), *every_level()]:
        env = VABenchEnv(EnvConfig(preset=RENDER_PRESETS["small"], perturbation=p))
        tiles.append(_label(env.reset(task, seed).images["active"], p.label))
        env.close()
    return _sheet(tiles, 4, out)


def embodiments(task: str, seed: int, out: Path) -> Path:
    """Each robot at home and after its expert's grasp (the passive oblique view shows the arm), on
    one scene (a picture: the seed need not be in every robot's manifest)."""
    tiles = []
    for robot in Robot:
        env = VABenchEnv(EnvConfig(preset=RENDER_PRESETS["small"], robot=robot))
        env.reset(task, seed)
        tiles.append(_label(env.camera.passive_bundle(env._ees(), env.controlled)["oblique_45"], f"{robot} home"))
        for action in env.expert():
            result = env.step(action)
            if "close" in action["action"] or result.done:
                break
        tiles.append(_label(env.camera.passive_bundle(env._ees(), env.controlled)["oblique_45"], f"{robot} grasp"))
        env.close()
    return _sheet(tiles, 2, out)


SHEETS = {"views": views, "perturbations": perturbations, "embodiments": embodiments}


@command("python -m vabench.envs.cli.looks")
def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Pictures of the views, every perturbation and every embodiment.")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--task", default="place_cube_in_bowl")
    ap.add_argument("--seed", type=int, default=None, help="default: the task's first verified seed")
    ap.add_argument("--only", choices=sorted(SHEETS), action="append", help="this sheet only (repeatable)")
    args = ap.parse_args(argv)
    seed = args.seed if args.seed is not None else eval_seeds(args.task)[0]
    for name in args.only or SHEETS:
        print(SHEETS[name](args.task, seed, args.out / f"{name}.png"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
