"""Feature statistics as LeRobot keeps them (lerobot.datasets.compute_stats): per episode in
meta/episodes (``stats/<feature>/<stat>``) and for the dataset in meta/stats.json; min, max, mean,
std, count and the 1/10/50/90/99 % quantiles per component; images per channel in [0, 1], shaped
(3, 1, 1), from a sample of frames seen at a reduced size (JPEG draft decoding). The dataset's
are the episodes' pooled as LeRobot pools them (weighted means; quantiles weighted by count)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from PIL import Image

QUANTILES = (0.01, 0.10, 0.50, 0.90, 0.99)
QUANTILE_KEYS = tuple(f"q{round(q * 100):02d}" for q in QUANTILES)
MAX_IMAGE_SAMPLES = 100  # images per episode and camera, evenly spaced (LeRobot samples ~100)
IMAGE_SIDE = 150  # images are decoded at about this size for their statistics (LeRobot: ~150 px)


def vector_stats(values: np.ndarray) -> dict[str, np.ndarray]:
    """Per-component statistics of (frames, ...) values; shape (1,) for a scalar feature."""
    x = np.asarray(values, dtype=np.float64).reshape(len(values), -1)
    out = {
        "min": x.min(axis=0),
        "max": x.max(axis=0),
        "mean": x.mean(axis=0),
        "std": x.std(axis=0),
        "count": np.array([len(x)]),
    }
    for key, q in zip(QUANTILE_KEYS, np.quantile(x, QUANTILES, axis=0), strict=True):
        out[key] = q
    return out


def image_stats(paths: list[Path]) -> dict[str, np.ndarray]:
    """Per-channel statistics in [0, 1] of a sample of an episode's images, each shaped (3, 1, 1)."""
    picks = np.unique(np.round(np.linspace(0, len(paths) - 1, min(len(paths), MAX_IMAGE_SAMPLES))).astype(int))
    pixels = np.concatenate([_small(paths[i]) for i in picks]) / 255.0
    stats = vector_stats(pixels)
    return {k: v if k == "count" else v.reshape(3, 1, 1) for k, v in {**stats, "count": np.array([len(paths)])}.items()}


def _small(path: Path) -> np.ndarray:
    with Image.open(path) as image:
        scale = max(1, max(image.size) // IMAGE_SIDE)
        image.draft("RGB", (image.width // scale, image.height // scale))  # JPEG: decoded at the reduced size
        return np.asarray(image.convert("RGB")).reshape(-1, 3)


def pooled(episodes: list[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """One feature's dataset statistics from its episodes' (lerobot's aggregate_feature_stats)."""
    counts = np.array([float(e["count"][0]) for e in episodes])
    total = counts.sum()
    weights = counts.reshape(-1, *([1] * np.ndim(episodes[0]["mean"])))
    means = np.stack([e["mean"] for e in episodes])
    mean = (means * weights).sum(axis=0) / total
    variance = ((np.stack([e["std"] for e in episodes]) ** 2 + (means - mean) ** 2) * weights).sum(axis=0) / total
    out = {
        "min": np.min(np.stack([e["min"] for e in episodes]), axis=0),
        "max": np.max(np.stack([e["max"] for e in episodes]), axis=0),
        "mean": mean,
        "std": np.sqrt(variance),
        "count": np.array([int(total)]),
    }
    for key in QUANTILE_KEYS:
        out[key] = (np.stack([e[key] for e in episodes]) * weights).sum(axis=0) / total
    return out


def as_json(stats: dict[str, dict[str, np.ndarray]]) -> dict:
    return {feature: {k: np.asarray(v).tolist() for k, v in s.items()} for feature, s in stats.items()}
