"""Visual perturbations (``perturbation=<kind>:<level>``, e.g. ``perturbation=lighting:2``): named, seeded
levels of the scene's look and of the model-facing images, for the robustness track
(``+experiment=robustness``).

Physics never changes: lighting, textures and object colours are render materials, distractors are
visual-only bodies (no collision shape, so PhysX never sees them), and noise and blur touch only
the pixels a model is sent. Every manifest seed therefore stays valid and the oracle's trajectory
is bitwise the same under every perturbation (tests/test_perturb.py). Each episode draws its
perturbation from its own generator, seeded by the episode seed, the kind and the level (never the
task's layout generator), so a perturbed scene is reproducible and its layout is the unperturbed
one. The scene side lives in :mod:`vabench.envs.perturb.scene`; the image side (noise, blur) here.

Levels: 1 mild, 2 moderate, 3 strong (the numbers are here and in the scene module).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np
from PIL import Image, ImageFilter

from vabench.core.condition import default
from vabench.core.errors import ConfigError
from vabench.core.registry import Registry
from vabench.core.vocab import PERTURBATION_LEVELS, Perturbation

FORM = "perturbation=<kind>:<level>, e.g. perturbation=blur:2; levels " + ", ".join(map(str, PERTURBATION_LEVELS))
KINDS: Registry[str] = Registry(
    "perturbation kind",
    (
        (Perturbation.LIGHTING, "ambient and key-light intensity, colour and direction"),
        (Perturbation.TEXTURE, "table, wall and floor colour and pattern"),
        (Perturbation.COLOUR, "task parts whose colour the instruction does not name"),
        (Perturbation.DISTRACTORS, "visual-only objects on free table areas, off the robot's way"),
        (Perturbation.NOISE, "Gaussian pixel noise on every model-facing image"),
        (Perturbation.BLUR, "Gaussian blur on every model-facing image"),
    ),
    FORM,
)
NOISE_SIGMA = 6.0  # pixel noise SD (0-255 scale) per level
BLUR_RADIUS = 1.0  # Gaussian blur radius in pixels per level, at 640 px wide (scaled with the width)


def _noise(rgb: np.ndarray, level: int, rng: np.random.Generator) -> np.ndarray:
    noise = rng.normal(0.0, NOISE_SIGMA * level, rgb.shape)
    return np.clip(rgb.astype(np.float32) + noise, 0, 255).astype(np.uint8)


def _blur(rgb: np.ndarray, level: int, rng: np.random.Generator) -> np.ndarray:
    radius = BLUR_RADIUS * level * rgb.shape[1] / 640
    return np.asarray(Image.fromarray(rgb).filter(ImageFilter.GaussianBlur(radius)))


# The image-side kinds: (model-facing image HxWx3 uint8, level, this image's generator) -> the image the model
# is sent. A kind not here changes the scene instead (vabench.envs.perturb.scene.SCENE_EFFECTS).
IMAGE_EFFECTS: Registry = Registry("image perturbation", ((Perturbation.NOISE, _noise), (Perturbation.BLUR, _blur)))


@dataclass(frozen=True)
class PerturbationConfig:
    """One named perturbation at one level: ``perturbation`` is ``none`` or ``<kind>:<level>``
    (``lighting:2``), recorded as it is in every outcome row and, when not ``none``, in the
    condition label. One key, so a sweep lists the baseline and every level side by side."""

    name: str = default("perturbation")

    def __post_init__(self):
        if self.name == Perturbation.NONE:
            return
        kind, colon, level = str(self.name).partition(":")
        KINDS.check(kind)  # UnknownName: the kinds and the closest one
        if not colon or not level.isdigit() or int(level) not in PERTURBATION_LEVELS:
            raise ConfigError(f"perturbation {self.name!r} needs a level: {FORM}")

    @classmethod
    def of(cls, kind: str, level: int) -> PerturbationConfig:
        return cls(f"{kind}:{level}")

    @property
    def kind(self) -> str:
        return self.name.partition(":")[0]

    @property
    def level(self) -> int:
        return int(self.name.partition(":")[2] or 0)

    @property
    def label(self) -> str:
        return self.name

    @property
    def active(self) -> bool:
        return self.name != Perturbation.NONE


def parse(label: str | PerturbationConfig | None) -> PerturbationConfig:
    """A row's ``perturbation`` (None in rows written before schema 9: none) as a config."""
    if isinstance(label, PerturbationConfig):
        return label
    return PerturbationConfig(str(label or Perturbation.NONE))


def every_level() -> list[PerturbationConfig]:
    """Every registered perturbation kind at every level (the robustness sweep, the gallery, the oracle test)."""
    return [PerturbationConfig.of(k, lv) for k in KINDS for lv in PERTURBATION_LEVELS]


def rng(config: PerturbationConfig, seed: int, *salt) -> np.random.Generator:
    """The perturbation's own generator for one episode (and, with ``salt``, one image)."""
    text = ":".join(map(str, (config.kind, config.level, seed, *salt)))
    return np.random.default_rng(int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little"))


def perturb_image(config: PerturbationConfig, rgb: np.ndarray, seed: int, step: int, view: str) -> np.ndarray:
    """A model-facing image under an image-side perturbation (``IMAGE_EFFECTS``); others return it as is."""
    effect = IMAGE_EFFECTS.get(config.kind)
    return rgb if effect is None else effect(rgb, config.level, rng(config, seed, step, view))
