"""Visual perturbations: their names and levels, the image side (:mod:`.config`) and the scene side
(:mod:`.scene`: lighting, textures, colours, distractors). The physics never changes."""

from .config import FORM, IMAGE_EFFECTS, KINDS, PerturbationConfig, every_level, parse, perturb_image, rng

__all__ = ["FORM", "IMAGE_EFFECTS", "KINDS", "PerturbationConfig", "every_level", "parse", "perturb_image", "rng"]
