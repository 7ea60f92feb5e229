"""Open an exported dataset with LeRobot's own loader, as a user would, and write down what it read.

Runs in the LeRobot venv (tests/lerobot_venv.py), never in the project's: it imports no vabench.

    VENV/bin/python tests/lerobot_open.py DATASET REPO_ID OUT

writes OUT/read.json (the loader's printed summaries, every frame's values but its images, the
episodes table) and OUT/<index>_<camera>.png (every decoded image), and prints the summaries.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import torch
from PIL import Image

NMS = "(Tensor dets, Tensor scores, float iou_threshold) -> Tensor"  # torchvision 0.24's own schema


def import_torchvision() -> None:
    """torchvision as LeRobot imports it. The venv's torchvision 0.24.1 is the package index's,
    built against CUDA torch 2.9.1: its compiled operators cannot load beside torch's CPU build
    (tests/lerobot_venv.py), and its import then fails registering a fake kernel for
    ``torchvision::nms``, the one operator it registers without asking whether they loaded.
    Declaring that schema lets the pure-Python package import; nothing the loader runs calls it
    (LeRobot decodes videos with PyAV through ``torchvision.io``, and its transforms are Python)."""
    try:
        import torchvision  # noqa: F401
    except RuntimeError as e:
        if "torchvision::nms does not exist" not in str(e):
            raise
        for name in [m for m in sys.modules if m == "torchvision" or m.startswith("torchvision.")]:
            del sys.modules[name]
        torch.library.define("torchvision::nms", NMS)
        import torchvision  # noqa: F401


import_torchvision()
from lerobot.datasets.lerobot_dataset import LeRobotDataset  # noqa: E402


def plain(value):
    if isinstance(value, torch.Tensor):
        return value.tolist()
    return value


def main(root: str, repo_id: str, out: str) -> None:
    out_dir = Path(out)
    out_dir.mkdir(parents=True, exist_ok=True)
    ds = LeRobotDataset(repo_id, root=root, video_backend="pyav")
    cameras = list(ds.meta.camera_keys)
    frames = []
    for i in range(len(ds)):
        item = ds[i]
        for cam in cameras:
            rgb = (item[cam].permute(1, 2, 0).numpy() * 255).round().astype(np.uint8)
            Image.fromarray(rgb).save(out_dir / f"{i:05d}_{cam}.png")
        frames.append({k: plain(v) for k, v in item.items() if k not in cameras})
    batch = next(iter(torch.utils.data.DataLoader(ds, batch_size=4, shuffle=True)))
    episodes = ds.meta.episodes.to_pandas()
    read = {
        "repr": repr(ds),
        "meta_repr": repr(ds.meta),
        "fps": ds.fps,
        "num_frames": ds.num_frames,
        "num_episodes": ds.num_episodes,
        "cameras": cameras,
        "features": {k: {"dtype": v["dtype"], "shape": list(v["shape"])} for k, v in ds.features.items()},
        "batch_shapes": {k: list(v.shape) for k, v in batch.items() if isinstance(v, torch.Tensor)},
        "stats_keys": sorted(ds.meta.stats),
        "tasks": list(ds.meta.tasks.index),
        "episodes": json.loads(episodes.to_json(orient="records")),
        "frames": frames,
    }
    (out_dir / "read.json").write_text(json.dumps(read))
    print(read["repr"])
    print(read["meta_repr"])
    print("one DataLoader batch:", read["batch_shapes"])


if __name__ == "__main__":
    main(*sys.argv[1:4])
