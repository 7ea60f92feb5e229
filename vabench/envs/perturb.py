"""Visual perturbations (``perturbation.kind`` / ``perturbation.level``): named, seeded levels of the
scene's look and of the model-facing images, for the robustness track (``+experiment=robustness``).

Physics never changes: lighting, textures and object colours are render materials, distractors are
visual-only bodies (no collision shape, so PhysX never sees them), and noise and blur touch only
the pixels a model is sent. Every manifest seed therefore stays valid and the oracle's trajectory
is bitwise the same under every perturbation (tests/test_perturb.py). Each episode draws its
perturbation from its own generator, seeded by the episode seed, the kind and the level (never the
task's layout generator), so a perturbed scene is reproducible and its layout is the unperturbed
one. The scene side lives in :mod:`vabench.envs.sim.look`.

Levels: 1 mild, 2 moderate, 3 strong (the numbers are in :data:`STRENGTH` and sim.look).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np
from PIL import Image, ImageFilter

from vabench.checks import one_of
from vabench.vocab import PERTURBATION_LEVELS, Perturbation

IMAGE_KINDS = (Perturbation.NOISE, Perturbation.BLUR)
NOISE_SIGMA = 6.0  # pixel noise SD (0-255 scale) per level
BLUR_RADIUS = 1.0  # Gaussian blur radius in pixels per level, at 640 px wide (scaled with the width)


@dataclass(frozen=True)
class PerturbationConfig:
    """One named perturbation at one level (``none`` has level 0). Recorded in every outcome row as
    :attr:`label` (``none`` or ``<kind>:<level>``) and, when not ``none``, in the condition label."""

    kind: str = Perturbation.NONE
    level: int = 0

    def __post_init__(self):
        one_of(self, "perturbation", "kind", list(Perturbation))
        if self.kind == Perturbation.NONE and self.level != 0:
            raise ValueError(f"'perturbation.level' must be 0 with perturbation.kind=none, got {self.level}")
        if self.kind != Perturbation.NONE:
            one_of(self, "perturbation", "level", PERTURBATION_LEVELS)

    @property
    def label(self) -> str:
        return str(Perturbation.NONE) if self.kind == Perturbation.NONE else f"{self.kind}:{self.level}"

    @property
    def active(self) -> bool:
        return self.kind != Perturbation.NONE


def parse(label: str | PerturbationConfig | None) -> PerturbationConfig:
    """``none`` or ``<kind>:<level>`` (a row's ``perturbation``) as a config; ValueError says the form."""
    if isinstance(label, PerturbationConfig):
        return label
    if label in (None, Perturbation.NONE):
        return PerturbationConfig()
    kind, _, level = str(label).partition(":")
    if not level.isdigit():
        raise ValueError(f"perturbation must be 'none' or '<kind>:<level>', e.g. 'lighting:2', got {label!r}")
    return PerturbationConfig(kind, int(level))


def every_level() -> list[PerturbationConfig]:
    """Every perturbation at every level (the robustness sweep, the gallery, the oracle test)."""
    return [PerturbationConfig(k, lv) for k in Perturbation if k != Perturbation.NONE for lv in PERTURBATION_LEVELS]


def rng(config: PerturbationConfig, seed: int, *salt) -> np.random.Generator:
    """The perturbation's own generator for one episode (and, with ``salt``, one image)."""
    text = ":".join(map(str, (config.kind, config.level, seed, *salt)))
    return np.random.default_rng(int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little"))


def perturb_image(config: PerturbationConfig, rgb: np.ndarray, seed: int, step: int, view: str) -> np.ndarray:
    """A model-facing image under an image-level perturbation (noise, blur); others return it as is."""
    if config.kind == Perturbation.NOISE:
        noise = rng(config, seed, step, view).normal(0.0, NOISE_SIGMA * config.level, rgb.shape)
        return np.clip(rgb.astype(np.float32) + noise, 0, 255).astype(np.uint8)
    if config.kind == Perturbation.BLUR:
        radius = BLUR_RADIUS * config.level * rgb.shape[1] / 640
        return np.asarray(Image.fromarray(rgb).filter(ImageFilter.GaussianBlur(radius)))
    return rgb
