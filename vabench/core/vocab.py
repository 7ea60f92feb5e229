"""The benchmark's words, defined once: protocols with their properties, tracks, summary modes,
episode statuses, end reasons and error kinds, step kinds, arm counts, observation profiles and
render presets, and the seeds per task.

Every layer (envs, agents, actors, analysis, review) imports these instead of writing the words
as string literals (tests/test_architecture.py checks it), so a new word is added here and nowhere
else. The words are ``StrEnum`` members: they equal their strings, so Parquet, JSON and pandas see
plain strings. This module imports nothing heavy, and from vabench only the registry pattern.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from vabench.core.errors import ConfigError
from vabench.core.registry import Registry


@dataclass(frozen=True)
class Protocol:
    """How the model sees the scene (paper 3.4, C.6-C.7)."""

    name: str
    camera_actions: bool  # True: one movable camera and the Table 27 camera actions (active)
    about: str

    @property
    def bundle(self) -> bool:
        """Every observation is the fixed five-view bundle of the C.7 observer (passive); earlier
        bundles are never re-sent."""
        return not self.camera_actions

    def __str__(self) -> str:
        return self.name


ACTIVE = Protocol("active", True, "the model chooses viewpoints with camera actions; one current image per request")
PASSIVE = Protocol("passive", False, "five fixed views of the current moment per request; no camera actions")
PROTOCOLS: Registry[Protocol] = Registry("protocol", ((p.name, p) for p in (ACTIVE, PASSIVE)), "protocol=NAME")


def protocol_named(name: str | Protocol) -> Protocol:
    """The protocol called ``name``; UnknownName (a ValueError) names the allowed values."""
    return name if isinstance(name, Protocol) else PROTOCOLS[name]


class Track(StrEnum):
    """Which part of the suite a task belongs to (paper Tables 2, 5, 15)."""

    BASE = "base"
    TRANSFER = "transfer"
    LONG_HORIZON = "long_horizon"


TRACKS: Registry[str] = Registry(
    "track",
    (
        (Track.BASE, "the 14 base task families"),
        (Track.TRANSFER, "held-out variants of base families, reusing their base task's summary"),
        (Track.LONG_HORIZON, "the five-object basket task, learned from atomic-skill demonstrations"),
    ),
    "track=NAME",
)


def track(name: str) -> Track:
    """The track called ``name``; UnknownName (a ValueError) names the allowed values."""
    return Track(TRACKS.check(name))


class SummaryKind(StrEnum):
    OWN = "own"  # the evaluated model's own summary, learned from the demonstration
    NONE = "none"
    EXPERT = (
        "expert"  # an intervention: the expert-written procedure summary (vabench.agents.summaries.expert_summaries)
    )
    SHARED = "shared"  # another model's (shared:<model id>), the shared-summary control


@dataclass(frozen=True)
class SummaryMode:
    """Which demonstration summary an episode carries (paper 3.3, Table 6): the evaluated model's
    ``own``, ``none``, or another model's (``shared:<model id>``, the shared-summary control)."""

    kind: SummaryKind
    source: str | None = None  # the author of a shared summary

    def __str__(self) -> str:
        return f"{SummaryKind.SHARED}:{self.source}" if self.kind == SummaryKind.SHARED else str(self.kind)


SUMMARY_MODES = (SummaryKind.OWN, SummaryKind.NONE, SummaryKind.EXPERT, f"{SummaryKind.SHARED}:<model id>")


def summary_mode(text: str | SummaryMode) -> SummaryMode:
    """Parse ``own`` / ``none`` / ``shared:<model id>``; ValueError names the allowed forms."""
    if isinstance(text, SummaryMode):
        return text
    if text in (SummaryKind.OWN, SummaryKind.NONE, SummaryKind.EXPERT):
        return SummaryMode(SummaryKind(text))
    prefix = f"{SummaryKind.SHARED}:"
    if isinstance(text, str) and text.startswith(prefix) and text[len(prefix) :].strip():
        return SummaryMode(SummaryKind.SHARED, text[len(prefix) :].strip())
    shown = repr(text) if len(repr(text)) <= 60 else repr(text)[:57] + "..."
    raise ConfigError(f"unknown summary mode {shown}; allowed: {', '.join(SUMMARY_MODES)}")


# The outcome table's words (docs/design.md, the outcome row).
class Status(StrEnum):
    OK = "ok"
    INFRA_ERROR = "infra_error"  # the episode could not be judged: excluded from every rate, retried


class EndReason(StrEnum):
    SUCCESS = "success"
    STOP = "stop"
    BUDGET = "budget"
    REPAIRS_EXHAUSTED = "repairs_exhausted"
    CALL_LIMIT = "call_limit"
    INFRA_ERROR = "infra_error"


LEARNED = "learned"  # a summary learning's end when it saved a summary (its others are EndReason's)


class ErrorKind(StrEnum):
    """Why an episode (or a summary learning) could not be judged: the driver's retry decision."""

    INFRA = "infra"  # the provider, the simulator or a worker failed: retried
    PERMANENT = "permanent"  # retrying cannot help (bad key, unknown model, a rejected request): never retried


class StepKind(StrEnum):
    """What one env step was (every kind counts against the budget)."""

    CAMERA = "camera"
    ROBOT = "robot"
    INVALID = "invalid"


class Arms(StrEnum):
    SINGLE = "single"
    DUAL = "dual"


# The arms' names: plain strings (they key dicts, name URDF links and appear in messages and prompts).
LEFT, RIGHT = "left", "right"
ARM_NAMES = (LEFT, RIGHT)


class ObservationProfile(StrEnum):
    """What each observation tells the model (``observation=``; vabench.core.condition)."""

    PAPER = "paper"  # the paper's boundary: step, instruction, proprioception, actions, two booleans, images
    EXPLAINED = "explained"  # an ablation: + budget left, the env's reason texts, table height, earlier images


class Intervention(StrEnum):
    """A named intervention across the paper's boundary (``intervention=``, or summary=expert):
    each has a declared input manifest (vabench.core.interventions), a row column and a label part, so its
    rows never pool with the paper condition's."""

    NONE = "none"  # the paper's boundary
    EXPERT_SUMMARY = "expert_summary"  # summary=expert: the expert-written procedure summary
    OBJECT_POSES = "object_poses"  # every observation states the task objects' poses and sizes: removes perception
    DEPTH_POINT = "depth_point"  # a free tool: a pixel of the current image -> the world point under it
    VIEWS_1 = "views_1"  # passive: the topdown view only
    VIEWS_3 = "views_3"  # passive: topdown, side, oblique_45
    VIEWS_5 = "views_5"  # active: the five passive views attached to every observation


class Render(StrEnum):
    """Render presets (vabench.envs.render): the model's image sizes and encodings per protocol."""

    PAPER = "paper"  # the paper's study: the reference harness's sizes and encodings
    FAST = "fast"  # 640x480 everywhere: smoke and ad-hoc runs on a laptop
    SMALL = "small"  # 320x240: tests


class Perturbation(StrEnum):
    """Visual perturbation kinds (``perturbation=<kind>:<level>``; vabench.envs.perturb): the look changes, the
    physics never does, so every manifest seed stays valid."""

    NONE = "none"  # the paper's look
    LIGHTING = "lighting"  # ambient and key-light intensity, colour and direction
    TEXTURE = "texture"  # table, wall and floor colour and pattern
    COLOUR = "colour"  # task objects whose colour the instruction does not name
    DISTRACTORS = "distractors"  # visual-only objects on free table areas, off the robot's way
    NOISE = "noise"  # Gaussian pixel noise on every model-facing image
    BLUR = "blur"  # Gaussian blur on every model-facing image


PERTURBATION_LEVELS = (1, 2, 3)  # mild, moderate, strong; ``none`` has level 0


class Robot(StrEnum):
    """Embodiments (``robot=NAME``; vabench.envs.sim.embodiments): arms from example-robot-data,
    each carrying the Panda hand, so the gripper, its TCP and the action protocol are the same."""

    PANDA = "panda"  # the paper's Franka Emika Panda (7 DoF)
    XARM7 = "xarm7"  # UFactory xArm7 (7 DoF) with the Panda hand
    UR5 = "ur5"  # Universal Robots UR5 (6 DoF) with the Panda hand


class ControlMode(StrEnum):
    """Action interfaces (``control=``; vabench.envs.control): what one env step carries out."""

    COMMANDS = "commands"  # the paper's metric commands (Tables 26-27), each planned by mplib and run to rest
    EE_DELTA = "ee_delta"  # a continuous end-effector delta per arm, tracked for one control period (10 Hz)


class CacheMode(StrEnum):
    """The response cache (model.cache; vabench.agents.models.cache): replies kept per episode in the run folder."""

    OFF = "off"  # every request goes to the provider
    ON = "on"  # a request answered before in this episode (an interrupted or failed attempt) is answered again free
    ONLY = "only"  # never call a provider: a request not in the cache fails (debugging, re-rendering)


class PromptCache(StrEnum):
    """How a provider's prompt cache reads a run's requests (the plan prices them so; vabench.plan.estimate)."""

    AUTOMATIC = "automatic"  # OpenAI: a repeated prefix of 1,024 tokens or more, by itself
    BREAKPOINTS = "breakpoints"  # Anthropic: up to the requests' cache_control breakpoints (model.prompt_cache=true)
    NONE = "none"  # no breakpoints (Anthropic with model.prompt_cache=false) or a provider the plan knows no cache of


class CostLimit(StrEnum):
    """The spending limits (each the config key that sets it): reaching one stops new requests at
    once; episodes in flight end as interrupted (no row: resumable, neither a failure nor infra)."""

    RUN = "model.max_cost_usd"  # the whole run: every worker and node, summary learning included
    EPISODE = "harness.max_episode_cost_usd"  # one episode (one attempt)


class Split(StrEnum):
    """Which scenes a seed comes from (``split=NAME``; vabench.envs.seeds): the two pools never share a seed."""

    EVAL = "eval"  # the evaluation manifests (the paper's verified seeds): what runs and Gym evaluate on
    TRAIN = "train"  # the training pool: screened the same way, disjoint from every evaluation manifest


SEEDS_PER_TASK = 20  # verified seeds per task (paper 5.1; the seed manifests)
TRAIN_SEEDS_PER_TASK = 10  # screened training seeds per task (the train manifests; --count screens more)


def counted(n: int, word: str, plural: str | None = None) -> str:
    """``1 episode``, ``2 episodes``, ``0 episodes``: a count with its word in the right number."""
    return f"{n} {word if n == 1 else plural or word + 's'}"


def arms_label(arms: tuple[str, ...] | list[str]) -> Arms:
    """``single`` or ``dual``: the outcome table's name for a task's controlled arms."""
    return Arms.DUAL if len(arms) == 2 else Arms.SINGLE
