"""Render presets: the size, lens and encoding of every image a model sees, per protocol, and how
demonstrations are recorded. One preset is chosen per run (``render=NAME``) and recorded in
every outcome row, so rows of two presets never pool.

What fixes each value:

- the paper fixes the lenses (3.4, C.7): the active head camera at 37 degrees, the passive
  observer at 55 degrees (:mod:`vabench.envs.sim.camera`);
- where the paper is silent, the reference harness fixes sizes and encodings
  (shared/reference/reference-harness-notes.md 2.4, 4.4, 6.1, 10.4): the active view renders at
  1280x960 and is sent as JPEG quality 95; the observer renders at 384x288, is stored as JPEG
  quality 60 and re-encoded at quality 95 for transport; demonstrations are recorded from the
  first active view (``center_high``) at 1280x960 and keep 3 frames per second. That is the
  ``paper`` preset, the default of every paper experiment;
- ``fast`` (640x480 in both protocols, JPEG 95, the pre-``paper`` default) and ``small``
  (320x240, tests) are named presets for laptops and smoke runs, never pooled with ``paper``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from io import BytesIO

import numpy as np
from PIL import Image

from vabench.core.errors import ConfigError
from vabench.core.registry import Registry
from vabench.core.vocab import Render

from .sim.camera import CameraConfig

IMAGE_FORMATS = ("jpeg", "png")


@dataclass(frozen=True)
class Encoding:
    """How a model-facing image is encoded (JPEG, as every provider request of the reference). The
    bytes stored in the episode record are exactly the bytes sent, so a request never encodes twice
    and a reviewer sees what the model saw."""

    quality: int = 95  # JPEG quality of the bytes sent
    source_quality: int | None = None  # the pixels first pass through a JPEG of this quality (reference: q60 storage)
    suffix = ".jpg"

    def __post_init__(self):
        for q in (self.quality, self.source_quality):
            if q is not None and not 1 <= q <= 100:
                raise ConfigError(f"JPEG quality must be in [1, 100], got {q}")

    def encode(self, rgb: np.ndarray) -> bytes:
        image = Image.fromarray(rgb)
        if self.source_quality is not None:  # the reference stores this JPEG, then re-encodes it for transport
            image = Image.open(BytesIO(_jpeg(image, self.source_quality)))
        return _jpeg(image, self.quality)


def _jpeg(image: Image.Image, quality: int) -> bytes:
    out = BytesIO()
    image.save(out, "JPEG", quality=quality)
    return out.getvalue()


@dataclass(frozen=True)
class RenderPreset:
    """Everything about the model's images that a run fixes (see the module docstring)."""

    name: str
    active: CameraConfig  # the active camera (37 degrees) at its render size
    observer_size: tuple[int, int]  # the passive bundle's observer lens (55 degrees), width x height
    active_encoding: Encoding = field(default_factory=Encoding)
    passive_encoding: Encoding = field(default_factory=Encoding)
    demo_fps: float = 3.0  # demonstration frames per simulated second (reference: 3 fps)
    demo_encoding: Encoding = field(default_factory=Encoding)  # as the reference sends demo frames: JPEG 95

    def __post_init__(self):
        w, h = self.observer_size
        if not (16 <= w <= 4096 and 16 <= h <= 4096):
            raise ConfigError(f"observer size must be in [16, 4096] x [16, 4096], got {w}x{h}")
        if not 0.5 <= self.demo_fps <= 60:
            raise ConfigError(f"demo_fps must be in [0.5, 60], got {self.demo_fps}")

    def encoding(self, bundle: bool) -> Encoding:
        """The encoding of a protocol's observation images (``bundle``: the passive five views)."""
        return self.passive_encoding if bundle else self.active_encoding


RENDER_PRESETS: Registry[RenderPreset] = Registry(
    "render preset",
    (
        (p.name, p)
        for p in (
            RenderPreset(
                Render.PAPER,
                CameraConfig(width=1280, height=960),
                (384, 288),
                passive_encoding=Encoding(quality=95, source_quality=60),
            ),
            RenderPreset(Render.FAST, CameraConfig(width=640, height=480), (640, 480)),
            RenderPreset(Render.SMALL, CameraConfig(width=320, height=240), (320, 240)),
        )
    ),
    "render=NAME",
)


def render_preset(name: str | RenderPreset) -> RenderPreset:
    """The preset called ``name``; UnknownName (a ValueError) names the allowed values."""
    return name if isinstance(name, RenderPreset) else RENDER_PRESETS[name]


def sent_bytes(render: str, view: str, pixels, protocol: str) -> bytes:
    """A frame's bytes as a chat model is sent them: the render preset's encoding of the protocol
    (the active camera's own; the passive bundle's, which a view intervention's added views share),
    for players outside the chat harness (the MCP server, the human page)."""
    from vabench.core.vocab import ACTIVE, protocol_named

    bundle = protocol_named(protocol).bundle or view != ACTIVE.name
    return render_preset(render).encoding(bundle).encode(pixels)
