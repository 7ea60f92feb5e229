"""Power and sample size for comparing two conditions' success rates (beyond the paper).

Model: each condition is run ``runs`` times over ``episodes`` episodes per run (seeds per task x
tasks). A run's true rate is the condition's rate plus a run effect with SD ``run_sd`` (what makes
runs differ beyond seed sampling: provider drift, sampling temperature); each episode then
succeeds independently. The condition's estimate is the mean over all episodes, with variance

    V(p) = (p q + (episodes - 1) run_sd^2) / (episodes * runs)

(``run_sd = 0``: the binomial p q / n). The test is the two-sided z-test of the difference with the
pooled rate under H0, so the normal-approximation size is

    d = z_{1-a/2} sqrt(2 V(p_bar)) + z_{power} sqrt(V(p1) + V(p2)),

which for ``run_sd = 0`` and one run is the textbook two-proportion formula
``n = (z_{1-a/2} sqrt(2 p_bar q_bar) + z_{power} sqrt(p1 q1 + p2 q2))^2 / d^2``. Runs needed for a
given number of episodes is closed form (``runs`` factors out); episodes needed for a given number
of runs is found by root finding (closed form when ``run_sd = 0``) and may not exist: with a run
effect, more seeds cannot replace runs, since V(p) >= run_sd^2 / runs. :func:`simulate_power`
draws the model itself (run effects, clipped rates, binomial episodes) and applies the same test.

The SD across runs that a table reports (Table 3's "mean +- SD") also holds the binomial noise of
each run's episodes; :func:`excess_sd` removes it.

    python -m vabench.analysis.power --baseline 0.3 --difference 0.1 --run-sd 0.03 --simulate 4000
"""

from __future__ import annotations

import argparse
import math
import sys

import numpy as np
import pandas as pd
from scipy.optimize import brentq
from scipy.stats import norm

from vabench.core.errors import ConfigError

MAX_EPISODES = 10**7


def _check(p1: float, p2: float, run_sd: float, alpha: float, power: float | None = None) -> None:
    if not 0 < p1 < 1:
        raise ConfigError(f"baseline success rate must be in (0, 1), got {p1}")
    if not 0 < p2 < 1 or p1 == p2:
        raise ConfigError(f"baseline + difference must be in (0, 1) and differ from the baseline, got {p2}")
    if not 0 < alpha < 1:
        raise ConfigError(f"alpha must be in (0, 1), got {alpha}")
    if power is not None and not alpha / 2 < power < 1:
        raise ConfigError(f"power must be in (alpha/2, 1), got {power}")
    if not 0 <= run_sd or run_sd**2 >= min(p1 * (1 - p1), p2 * (1 - p2)):
        raise ConfigError(f"run_sd must be >= 0 and run_sd^2 below p(1-p) of both rates, got {run_sd}")


def variance(p: float, episodes: float, runs: float, run_sd: float = 0.0) -> float:
    """Variance of a condition's success-rate estimate over ``runs`` runs of ``episodes`` episodes."""
    return (p * (1 - p) + (episodes - 1) * run_sd**2) / (episodes * runs)


def excess_sd(observed_sd: float, p: float, episodes: int) -> float:
    """The run effect's SD from an observed SD of run-level rates (each over ``episodes`` episodes):
    sqrt(max(0, sd^2 - p q / episodes)), the part binomial sampling does not explain."""
    if observed_sd < 0 or episodes < 1 or not 0 <= p <= 1:
        raise ValueError("need observed_sd >= 0, episodes >= 1 and 0 <= p <= 1")
    return math.sqrt(max(0.0, observed_sd**2 - p * (1 - p) / episodes))


def _sds(p1, p2, episodes, runs, run_sd):
    pbar = (p1 + p2) / 2
    s0 = math.sqrt(2 * variance(pbar, episodes, runs, run_sd))
    s1 = math.sqrt(variance(p1, episodes, runs, run_sd) + variance(p2, episodes, runs, run_sd))
    return s0, s1


def power_of(p1: float, p2: float, episodes: int, runs: int = 1, run_sd: float = 0.0, alpha: float = 0.05) -> float:
    """Normal-approximation power of the two-sided z-test (both rejection tails)."""
    _check(p1, p2, run_sd, alpha)
    s0, s1 = _sds(p1, p2, episodes, runs, run_sd)
    z, d = norm.ppf(1 - alpha / 2), abs(p2 - p1)
    return float(norm.cdf((d - z * s0) / s1) + norm.cdf((-d - z * s0) / s1))


def runs_needed(p1, p2, episodes: int, run_sd: float = 0.0, alpha: float = 0.05, power: float = 0.8) -> int:
    """Runs per condition for ``power`` with ``episodes`` episodes per run (closed form, rounded up)."""
    _check(p1, p2, run_sd, alpha, power)
    s0, s1 = _sds(p1, p2, episodes, 1, run_sd)
    za, zb = norm.ppf(1 - alpha / 2), norm.ppf(power)
    return max(1, math.ceil((za * s0 + zb * s1) ** 2 / (p2 - p1) ** 2 - 1e-9))


def episodes_needed(p1, p2, runs: int = 1, run_sd: float = 0.0, alpha: float = 0.05, power: float = 0.8) -> float:
    """Episodes per run and condition for ``power`` with ``runs`` runs (rounded up), or ``inf`` when
    no number of episodes reaches it (the run effect alone is too large for this many runs)."""
    _check(p1, p2, run_sd, alpha, power)
    za, zb, d = norm.ppf(1 - alpha / 2), norm.ppf(power), abs(p2 - p1)

    def gap(s: float) -> float:
        s0, s1 = _sds(p1, p2, s, runs, run_sd)
        return za * s0 + zb * s1 - d

    if run_sd == 0:
        pbar = (p1 + p2) / 2
        n = (za * math.sqrt(2 * pbar * (1 - pbar)) + zb * math.sqrt(p1 * (1 - p1) + p2 * (1 - p2))) ** 2 / d**2
        return float(max(1, math.ceil(n / runs - 1e-9)))
    if gap(MAX_EPISODES) >= 0:
        return math.inf
    if gap(1) <= 0:
        return 1.0
    return float(math.ceil(brentq(gap, 1, MAX_EPISODES, xtol=1e-6) - 1e-9))


def simulate_power(
    p1, p2, episodes: int, runs: int = 1, run_sd: float = 0.0, alpha: float = 0.05, n_sim: int = 4000, seed: int = 0
) -> float:
    """Monte Carlo power: draw run effects (normal, rates clipped to [0, 1]) and binomial episodes for
    both conditions, apply the same two-sided z-test (pooled rate under H0), count rejections."""
    _check(p1, p2, run_sd, alpha)
    if n_sim < 1 or episodes < 1 or runs < 1:
        raise ValueError("need n_sim, episodes and runs >= 1")
    rng = np.random.default_rng(seed)
    est = []
    for p in (p1, p2):
        rate = np.clip(p + rng.normal(0.0, run_sd, size=(n_sim, runs)), 0.0, 1.0)
        est.append(rng.binomial(episodes, rate).sum(axis=1) / (episodes * runs))
    pooled = (est[0] + est[1]) / 2
    se = np.sqrt(2 * (pooled * (1 - pooled) + (episodes - 1) * run_sd**2) / (episodes * runs))
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.where(se > 0, (est[1] - est[0]) / se, 0.0)
    return float((np.abs(z) > norm.ppf(1 - alpha / 2)).mean())


def sample_size_table(
    p1: float,
    difference: float,
    run_sd: float = 0.0,
    alpha: float = 0.05,
    power: float = 0.8,
    tasks: int = 14,
    max_runs: int = 5,
    seeds: int | None = None,
    n_sim: int = 0,
    seed: int = 0,
) -> pd.DataFrame:
    """For 1..max_runs runs: seeds per task needed (episodes = seeds x tasks per run and condition),
    the power of that design (normal approximation, and simulated when ``n_sim``); with ``seeds``
    also the runs needed at that many seeds per task."""
    p2 = p1 + difference
    _check(p1, p2, run_sd, alpha, power)
    if tasks < 1 or max_runs < 1 or (seeds is not None and seeds < 1):
        raise ConfigError("tasks, max_runs and seeds must be >= 1")
    designs = []
    for r in range(1, max_runs + 1):
        e = episodes_needed(p1, p2, r, run_sd, alpha, power)
        designs.append(("seeds for runs", r, math.inf if math.isinf(e) else math.ceil(e / tasks)))
    if seeds is not None:
        designs.append(("runs for seeds", runs_needed(p1, p2, seeds * tasks, run_sd, alpha, power), seeds))
    rows = []
    for solve, r, s in designs:
        ok = not math.isinf(s)
        n = int(s * tasks) if ok else None
        pw = power_of(p1, p2, n, r, run_sd, alpha) if ok else math.nan
        sim = simulate_power(p1, p2, n, r, run_sd, alpha, n_sim, seed) if ok and n_sim else math.nan
        rows.append([solve, r, s if ok else math.nan, n, n * r if ok else None, pw, sim])
    cols = ["solved", "runs", "seeds_per_task", "episodes_per_run", "episodes_per_condition", "power", "sim_power"]
    out = pd.DataFrame(rows, columns=cols)
    out["episodes_per_run"] = out["episodes_per_run"].astype("Int64")
    out["episodes_per_condition"] = out["episodes_per_condition"].astype("Int64")
    notes = [
        f"Baseline {p1:.3f}, difference {difference:+.3f} ({p2:.3f}), run SD {run_sd:.4f}, two-sided alpha "
        f"{alpha}, target power {power}, {tasks} task(s) per run; per condition.",
        "Seeds per task are rounded up, so the power of the design shown is at least the target.",
        "NaN seeds: no number of seeds reaches the target with this many runs (the run effect dominates)."
        if out["seeds_per_task"].isna().any()
        else None,
        f"Simulated power from {n_sim} draws (Generator seed {seed})." if n_sim else None,
        "Tasks are treated as exchangeable (one pooled rate): conservative when rates differ between tasks.",
    ]
    out.attrs = {
        "kind": "power",
        "title": "Sample size for a difference in success rate",
        "notes": [n for n in notes if n],
    }
    return out


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m vabench.analysis.power",
        description="Seeds x runs needed to detect a difference in success rate between two conditions.",
    )
    p.add_argument("--baseline", type=float, required=True, help="baseline success rate, in (0, 1)")
    p.add_argument("--difference", type=float, required=True, help="difference to detect (e.g. 0.10 or -0.10)")
    p.add_argument("--run-sd", type=float, default=0.0, help="between-run SD of a condition's success rate (0-1)")
    p.add_argument("--observed-episodes", type=int, metavar="N",
                   help="--run-sd was observed over runs of N episodes: remove its binomial part first")  # fmt: skip
    p.add_argument("--alpha", type=float, default=0.05, help="two-sided significance level (default 0.05)")
    p.add_argument("--power", type=float, default=0.8, help="target power (default 0.8)")
    p.add_argument("--tasks", type=int, default=14, help="task families per run (default 14)")
    p.add_argument("--max-runs", type=int, default=5, help="tabulate 1..MAX_RUNS runs (default 5)")
    p.add_argument("--seeds", type=int, help="also: runs needed with this many seeds per task")
    p.add_argument("--simulate", type=int, default=0, metavar="N", help="also simulate each design N times")
    p.add_argument("--seed", type=int, default=0, help="random seed of the simulation")
    return p


def main(argv: list[str] | None = None) -> int:
    ap = parser()
    a = ap.parse_args(argv)
    if a.run_sd < 0:
        ap.error(f"--run-sd must be >= 0, got {a.run_sd}")
    if a.observed_episodes is not None and a.observed_episodes < 1:
        ap.error(f"--observed-episodes must be >= 1, got {a.observed_episodes}")
    if a.simulate < 0:
        ap.error(f"--simulate must be >= 0, got {a.simulate}")
    run_sd = a.run_sd
    if a.observed_episodes and 0 < a.baseline < 1:
        run_sd = excess_sd(a.run_sd, a.baseline, a.observed_episodes)
    try:
        table = sample_size_table(
            a.baseline, a.difference, run_sd, a.alpha, a.power, a.tasks, a.max_runs, a.seeds, a.simulate, a.seed
        )
    except ValueError as e:
        flag = {"baseline s": "--baseline", "baseline +": "--difference", "alpha": "--alpha", "power": "--power"}
        name = next((f for k, f in flag.items() if str(e).startswith(k)), "--run-sd" if "run_sd" in str(e) else "")
        ap.error(f"{name}: {e}" if name else str(e))
    from .report import to_markdown

    print(to_markdown(table))
    return 0


if __name__ == "__main__":
    sys.exit(main())
