"""What an env is built for (:class:`EnvConfig`): a condition's look (its render preset, robot,
perturbation and action interface) and the simulator's own settings; and the evaluator's recording view
(:class:`RecordingConfig`, ``recording.*`` in the config)."""

from __future__ import annotations

from dataclasses import dataclass, field

from vabench.core.checks import within
from vabench.core.condition import DEFAULT_RENDER, Condition, default
from vabench.core.errors import ConfigError

from .control import CONTROLS, recording_stride
from .perturb import PerturbationConfig
from .render import RENDER_PRESETS, RenderPreset, render_preset

SETTLE_STEPS = 2000  # RoboTwin's stability check: settle 2000 steps ...
STABILITY_WINDOW = 500  # ... then watch 500 more ...


@dataclass(frozen=True)
class RecordingConfig:
    """The evaluator's recording view (D.4, reference notes 4.4 ``gripper_follow``): rendered at
    reset and after every action for reviewers and videos, stored apart from the model's frames,
    never in an Observation. ``fps`` is the episode video's frame rate: one frame per paper command;
    under ``control=ee_delta`` one per :func:`~vabench.envs.control.recording_stride` control steps
    (the video plays in real time), the episode's last step always (:meth:`due`), and under the
    active protocol the view is the active camera's picture of that moment
    (vabench.envs.sim.camera.CameraRig.recording)."""

    enabled: bool = True  # render the recording view at reset and after every action
    width: int = 320  # recording view width in pixels (even: H.264)
    height: int = 240  # recording view height in pixels (even: H.264)
    overlay: bool = True  # GC and end-effector markers, gripper axes, the step's action
    video: bool = True  # an mp4 per episode from its recording views, when the episode ends
    fps: float = 2.0  # the episode video's frame rate (one frame per step)

    def __post_init__(self):
        within(self, "recording", 16, 1920, "width")
        within(self, "recording", 16, 1080, "height")
        if self.width % 2 or self.height % 2:
            size = f"{self.width}x{self.height}"
            raise ConfigError(f"'recording.width' and 'recording.height' must be even (H.264), got {size}")
        within(self, "recording", 0.1, 60, "fps")

    def due(self, step: int, last: bool, control: str) -> bool:
        """Whether the view is taken after ``step`` (0: the reset) under the ``control`` mode."""
        return self.enabled and (last or step % recording_stride(self.fps, control) == 0)


@dataclass(frozen=True)
class EnvConfig:
    """What an env is built for: a condition's look (render preset, robot, perturbation: :meth:`of`)
    and the simulator's own settings."""

    preset: RenderPreset = RENDER_PRESETS[DEFAULT_RENDER]  # image sizes and lenses per protocol (vabench.envs.render)
    recording: RecordingConfig = field(default_factory=RecordingConfig)
    render: bool = True  # False: no images at all (physics-only screening and tests)
    hold_cameras: bool = True  # False: no render targets kept between renders (many scenes per process; sim.camera)
    settle_steps: int = SETTLE_STEPS
    warm_reset: bool = False  # keep and restore the settled start (vabench.envs.settle_cache): a start of its own
    stability_window: int = STABILITY_WINDOW
    robot: str = default("robot")  # the embodiment (vabench.envs.sim.embodiments)
    perturbation: PerturbationConfig = field(default_factory=PerturbationConfig)  # the look (vabench.envs.perturb)
    control: str = default("control")  # the action interface (vabench.envs.control)
    wrist: bool = True  # under control=ee_delta: a wrist camera's view per controlled arm beside the protocol's

    def __post_init__(self):
        CONTROLS.check(self.control)  # UnknownName names the control modes

    @classmethod
    def of(cls, condition: Condition, **settings) -> EnvConfig:
        """An env built for ``condition``'s look; ``settings``: the simulator's own (recording, ...)."""
        look = {"preset": render_preset(condition.render), "robot": condition.robot, "control": condition.control}
        return cls(**look, perturbation=PerturbationConfig(condition.perturbation), **settings)

    @property
    def look(self) -> tuple[str, str, str, str]:
        """(render preset, robot, perturbation, control), as :attr:`vabench.core.condition.Condition.look`
        says them."""
        return str(self.preset.name), str(self.robot), str(self.perturbation.label), str(self.control)
