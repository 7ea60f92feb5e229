"""What a run will cost before it starts: ``python -m vabench.launch <overrides> plan=true``
(docs/plan.md).

Prints, for the composed config and without a key, Ray, a request or a file written: episodes per
condition; summary-learning calls; model calls per episode (an upper bound from the step budget
and ``harness.max_calls_per_step``, and an expected figure); input, image and output tokens per
call (text by the model's tokenizer, images by each provider's rule at the render preset's sizes:
:mod:`vabench.agents.chat.tokens`); dollars from LiteLLM's local price
map (input, cached input, cache writes, output, reasoning) at the run's prompt-cache setting; wall
time from latency, episodes in flight and ``model.rpm`` / ``model.tpm``; with ``plan.difference=D``
the seeds and runs that detect D at 80 % power (:mod:`vabench.analysis.power`) and what that
design costs. An offline agent is free: its plan counts steps and time only.

Expected figures come from a previous run folder (``plan.calibrate=RUN``: its rows' calls,
tokens, cached tokens, wall time and success, per task and protocol, else per protocol), or else
from the measured priors (:mod:`vabench.plan.priors`: a failing and a successful episode per
protocol, track and task, mixed at the paper's success rate) and :data:`PRIORS` (assumptions). The
token model follows the conversation (:mod:`vabench.agents.chat.history`): call k carries the system
prompt, the current observation and k-1 earlier turns (their images as text stubs); a prompt cache
reads everything up to the previous observation's text (:mod:`vabench.agents.chat.prefix`).
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace

from vabench.core.vocab import PromptCache, SummaryKind, Track, protocol_named
from vabench.envs.tasks import episode_budget
from vabench.run.config.run import RunConfig
from vabench.run.config.specs import expand


@dataclass(frozen=True)
class Priors:
    """Expected figures that no measured episode gives (the measured ones, per protocol, track and
    task, are :mod:`vabench.plan.priors`'): stated assumptions a calibration run replaces."""

    summary_tokens: int = 600  # a learned summary in the system prompt (summary=own or shared)
    thinking_share: float = 0.6  # of an extended-thinking budget used per reply
    reasoning_tokens: int = 600  # per reply of a reasoning model with reasoning_effort set
    latency_s: float = 8.0  # per call (5-20 s for multimodal models)
    learn_calls: int = 8  # summary learning: retrieve, a few frame looks, learn
    learn_images: int = 6  # demo frames a learning request carries on average
    learn_reply_tokens: int = 300  # a learning reply (a tool call, or the summary)
    baseline: float = 0.3  # success rate for plan.difference without calibration
    startup_s: float = 20.0  # launcher, imports, the first env (plus ray_startup_s on Ray)
    ray_startup_s: float = 30.0


PRIORS = Priors()


@dataclass
class Estimate:
    """One episode's (or learning's) expected model use; sums over a plan."""

    episodes: float = 0.0
    calls: float = 0.0
    calls_max: float = 0.0
    input: float = 0.0  # all input tokens (cached ones included)
    image: float = 0.0  # of input: image tokens
    cached: float = 0.0  # of input: read from the provider's prompt cache
    written: float = 0.0  # of input: written to it (Anthropic)
    output: float = 0.0  # completion tokens, reasoning included
    reasoning: float = 0.0
    wall_s: float = 0.0  # one episode's (summed: episode-seconds)
    success: float | None = None
    per: dict = field(default_factory=dict)

    def scaled(self, n: float) -> Estimate:
        return replace(self, **{k: getattr(self, k) * n for k in SUMMED})

    def __add__(self, other: Estimate) -> Estimate:
        return replace(self, **{k: getattr(self, k) + getattr(other, k) for k in SUMMED})

    def cost(self, price) -> float | None:
        """US dollars at LiteLLM's prices (``vabench.agents.models.llm.Prices``), None when unpriced."""
        if price is None:
            return None
        fresh = self.input - self.cached - self.written
        text_out = self.output - self.reasoning
        return (
            fresh * price.input
            + self.cached * price.cached_input
            + self.written * price.cache_write
            + text_out * price.output
            + self.reasoning * price.reasoning
        )


SUMMED = tuple(f.name for f in fields(Estimate) if f.name not in ("success", "per"))  # what adds and scales


def reasoning_per_reply(run: RunConfig, priors: Priors = PRIORS) -> float:
    """Reasoning tokens per reply the model's settings ask for (extended thinking: a share of its
    budget; reasoning_effort: a prior, for reasoning models only: LiteLLM drops it for others)."""
    extra = run.model.extra
    thinking = extra.get("thinking") if isinstance(extra.get("thinking"), dict) else {}
    if thinking.get("type") == "enabled":
        return priors.thinking_share * float(thinking.get("budget_tokens") or 0)
    if extra.get("reasoning_effort") and _supports_reasoning(run.model.id):
        return float(priors.reasoning_tokens)
    return 0.0


def _supports_reasoning(model_id: str) -> bool:
    name = model_id.split("/", 1)[-1]
    return name.startswith(("o1", "o3", "o4", "gpt-5"))


def cache_kind(run: RunConfig) -> PromptCache:
    """How the provider's prompt cache reads this run's requests: ``automatic`` (OpenAI caches a
    repeated prefix by itself), ``breakpoints`` (Anthropic, up to ``model.prompt_cache``'s
    breakpoints) or ``none`` (Anthropic with ``model.prompt_cache=false``, other providers)."""
    provider = run.model.id.split("/", 1)[0]
    if provider == "anthropic":
        return PromptCache.BREAKPOINTS if run.model.prompt_cache else PromptCache.NONE
    return PromptCache.AUTOMATIC if provider == "openai" else PromptCache.NONE


def prior_episode(run: RunConfig, task: str, protocol: str, priors: Priors = PRIORS) -> Estimate:
    """One expected episode from the measured priors: a failing and a successful episode of the
    task and protocol (:func:`vabench.plan.priors.cell`), mixed at the paper's success rate."""
    from vabench.plan.priors import cell

    c = cell(task, protocol)
    kind = cache_kind(run)
    failing = arm_episode(run, task, protocol, c.failure, kind, priors)
    succeeding = arm_episode(run, task, protocol, c.success, kind, priors)
    est = failing.scaled(1 - c.success_rate) + succeeding.scaled(c.success_rate)
    est.success = c.success_rate
    return est


def arm_episode(run: RunConfig, task: str, protocol: str, arm, kind: str, priors: Priors = PRIORS) -> Estimate:
    """One episode of one kind (a :class:`vabench.plan.priors.Cohort`) from the code: the real system
    prompt counted by the model's tokenizer, the provider's image rule at the preset's sizes (both
    :mod:`vabench.agents.chat.tokens`), the conversation's growth, and the prompt cache's reads and
    writes (``kind``: :func:`cache_kind`)."""
    from vabench.agents.chat import prompts
    from vabench.agents.chat.tokens import image_tokens, request_tokens
    from vabench.envs import RENDER_PRESETS
    from vabench.envs.tasks import task_class

    cls, p = task_class(task), protocol_named(protocol)
    preset = RENDER_PRESETS[run.render]
    prompt = prompts.system_prompt(task, tuple(cls.arms), protocol, None, cls.track != Track.BASE)
    system = request_tokens(run.model.id, [{"role": "system", "content": prompt}]).total  # with the framing
    system += priors.summary_tokens if run.summary.kind != SummaryKind.NONE else 0
    size = preset.observer_size if p.bundle else (preset.active.width, preset.active.height)
    image = (5 if p.bundle else 1) * image_tokens(run.model.id, *size)
    budget = episode_budget(run.condition, task)  # the control mode's, x budget_scale
    steps = budget * arm.share
    n = max(1.0, steps * arm.calls_per_step)
    head = system + arm.obs_tokens  # what every call carries but the images and the earlier turns
    input_ = n * (head + image) + arm.turn_tokens * n * (n - 1) / 2
    cached = written = 0.0
    if kind != PromptCache.NONE:  # call k reads the system prompt, k-2 turns and the previous observation's text
        cached = (n - 1) * head + arm.turn_tokens * (n - 1) * (n - 2) / 2
        if kind == PromptCache.AUTOMATIC:
            cached -= (n - 1) * 64  # read in 128-token steps
        else:
            written = head + (n - 1) * arm.turn_tokens
    reasoning = n * reasoning_per_reply(run, priors)
    output = n * arm.reply_tokens + reasoning
    wall = n * priors.latency_s + steps * arm.s_per_step
    calls_max = budget * run.harness.max_calls_per_step
    return Estimate(1, n, calls_max, input_, n * image, max(0.0, cached), written, output, reasoning, wall)


def learning(run: RunConfig, priors: Priors = PRIORS) -> tuple[list[str], Estimate]:
    """The summaries this run would learn (``summary=own``, not in the store) and their calls."""
    from vabench.agents.chat.tokens import image_tokens
    from vabench.agents.models.kinds import is_offline
    from vabench.agents.summaries.learning import MAX_ATTEMPTS
    from vabench.agents.summaries.summary_store import SummaryStore
    from vabench.envs import RENDER_PRESETS
    from vabench.envs.tasks import task_class

    if run.summary.kind != SummaryKind.OWN or is_offline(run.model.id):
        return [], Estimate()
    store = SummaryStore(run.summary_root)
    bases = sorted({task_class(t).summary_task for t in run.tasks})
    missing = [b for b in bases if not store.has(run.condition.model, b)]
    preset = RENDER_PRESETS[run.render]
    image = priors.learn_images * image_tokens(run.model.id, preset.active.width, preset.active.height)
    n = priors.learn_calls
    per = Estimate(
        1, n, MAX_ATTEMPTS * run.harness.max_calls_per_step, n * (1500 + image), n * image,
        output=n * (priors.learn_reply_tokens + reasoning_per_reply(run, priors)),
        reasoning=n * reasoning_per_reply(run, priors), wall_s=n * priors.latency_s * 2,
    )  # fmt: skip
    return missing, per.scaled(len(missing))


def episode_counts(run: RunConfig) -> dict[tuple[str, str], int]:
    """Episodes per (condition, task, protocol) of the run's design."""
    counts: dict[tuple[str, str, str], int] = {}
    for spec in expand(run):
        key = (spec.condition.label, spec.task, spec.protocol)
        counts[key] = counts.get(key, 0) + 1
    return counts


def in_flight(run: RunConfig) -> int:
    """Episodes run at once (docs/cluster.md, "Sizing a run"): one without Ray, else the workers' slots up to
    the model's max_concurrency."""
    if run.ray.in_process:
        return 1
    return max(1, min(run.ray.env_actors * run.ray.episodes_per_actor, run.model.max_concurrency))


def wall_time(run: RunConfig, total: Estimate, learn: Estimate, learn_tasks: int) -> dict[str, float]:
    """Seconds: the episodes' work spread over the episodes in flight, and the floors that
    ``model.rpm`` and ``model.tpm`` put under it; summary learning runs first."""
    flight, episodes = in_flight(run), max(total.episodes, 1)
    work = total.wall_s / episodes * max(1.0, episodes / flight)  # fewer episodes than slots: one wave
    work += PRIORS.startup_s + (0.0 if run.ray.in_process else PRIORS.ray_startup_s)
    rpm = total.calls / run.model.rpm * 60 if run.model.rpm else 0.0
    tpm = (total.input + total.output) / run.model.tpm * 60 if run.model.tpm else 0.0
    learn_s = learn.wall_s / max(1, min(learn_tasks, run.model.max_concurrency))
    return {"episodes": max(work, rpm, tpm), "work": work, "rpm": rpm, "tpm": tpm, "learning": learn_s}
