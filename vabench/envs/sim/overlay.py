"""The debug overlay of recording views: finger-midpoint (GC) and end-effector markers and the
gripper's local axes, projected into the image with the camera's own pose and lens.

Recording views are evaluator side (D.4: stored apart from the clean model-facing frames), so the
overlay may use what a model never gets: camera calibration. Drawn in 2-D after rendering, so
nothing is ever added to the scene the model's cameras see.
"""

from __future__ import annotations

import numpy as np
from PIL import Image, ImageDraw

AXIS_M = 0.06  # drawn length of each gripper axis
AXIS_COLOURS = ((230, 40, 40), (40, 200, 40), (50, 110, 255))  # local x, y, z: red, green, blue
GC_COLOUR, EE_COLOUR = (255, 220, 0), (255, 255, 255)


def project(points: np.ndarray, pose: np.ndarray, fovy_rad: float, width: int, height: int) -> np.ndarray:
    """Pixel (u, v) of world points for a SAPIEN camera at ``pose`` (rotation columns: forward,
    left, up); NaN for points behind the camera."""
    pts = np.atleast_2d(np.asarray(points, dtype=float))
    local = (pts - pose[:3, 3]) @ pose[:3, :3]  # (forward, left, up)
    f = (height / 2) / np.tan(fovy_rad / 2)
    with np.errstate(divide="ignore", invalid="ignore"):
        u = width / 2 - f * local[:, 1] / local[:, 0]
        v = height / 2 - f * local[:, 2] / local[:, 0]
    uv = np.stack([u, v], axis=1)
    uv[local[:, 0] <= 1e-6] = np.nan
    return uv


def draw(rgb: np.ndarray, pose: np.ndarray, fovy_rad: float, arms: dict[str, dict], caption: str = "") -> np.ndarray:
    """``rgb`` with markers per arm: ``arms[name] = {"gc": xyz, "ee": xyz, "rotation": 3x3 gripper
    axes in the world frame}``; ``caption`` is written top left."""
    image = Image.fromarray(rgb)
    pen = ImageDraw.Draw(image)
    h, w = rgb.shape[:2]
    for name, arm in arms.items():
        gc = np.asarray(arm["gc"], dtype=float)
        tips = gc + AXIS_M * np.asarray(arm["rotation"], dtype=float).T  # one row per local axis
        uv = project(np.vstack([gc, arm["ee"], tips]), pose, fovy_rad, w, h)
        if np.isnan(uv[0]).any():
            continue
        for tip, colour in zip(uv[2:], AXIS_COLOURS, strict=True):
            if not np.isnan(tip).any():
                pen.line([tuple(uv[0]), tuple(tip)], fill=colour, width=2)
        if not np.isnan(uv[1]).any():
            _dot(pen, uv[1], 3, EE_COLOUR)
        _dot(pen, uv[0], 4, GC_COLOUR)
        pen.text((uv[0][0] + 6, uv[0][1] - 12), name[0].upper(), fill=GC_COLOUR)
    if caption:
        pen.rectangle([0, 0, w, 13], fill=(0, 0, 0))
        pen.text((3, 1), caption[: w // 6], fill=(255, 255, 255))
    return np.asarray(image)


def _dot(pen: ImageDraw.ImageDraw, uv, r: float, colour) -> None:
    x, y = uv
    pen.ellipse([x - r, y - r, x + r, y + r], outline=(0, 0, 0), fill=colour)
