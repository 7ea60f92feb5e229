"""The paper's success rates per protocol, track and task (shared/reference/va-bench-paper.txt), as
the plan's priors mix a failing and a successful episode by them (``benchmarks/plan_priors.py``).

- base, active: the mean over the 12 primary conditions of Tables 7-9 (three-run means, %);
- base, passive: that rate times the task's passive/active ratio over the four conditions of
  Table 10 (successes out of 20 per condition; the pooled ratio where the task has none active);
- transfer, active: the base rate times the task's held-out/base ratio over the four conditions
  of Table 15 (their base rates from Tables 7-8); passive: times the base passive ratio too;
- long horizon: no condition completes an episode (Table 5): 0.
"""

from __future__ import annotations

from vabench.core.vocab import ACTIVE, PASSIVE, Track
from vabench.envs.tasks import task_class, tasks_of_track

MIN_RATE = 0.01  # a success arm is measured from this rate up; below it the plan takes every episode as failing

# Tables 7-9, % (Qwen3.8 max, Opus 5, GPT-5.6 sol, GPT-5.6 terra, Doubao 2.1, Gemini 3.6, GPT-5.6 luna, sonnet 5,
# Qwen3.7 max, Qwen3.7 plus, MiniMax M3, Mimo v2.5)
BASE = {
    "beat_block_hammer_right": (3.33, 8.33, 15.00, 6.67, 0, 0, 0, 0, 0, 0, 0, 0),
    "click_bell_right": (73.33, 68.33, 65.00, 1.67, 6.67, 13.33, 0, 11.67, 0, 0, 0, 0),
    "grasp_pen_leaning_cube": (61.67, 35.00, 45.00, 25.00, 6.67, 10.00, 18.33, 5.00, 1.67, 3.33, 0, 0),
    "grasp_single_bottle": (91.67, 75.00, 76.67, 51.67, 86.67, 38.33, 3.33, 33.33, 1.67, 18.33, 0, 0),
    "grasp_single_bottle_upright": (65.00, 78.33, 70.00, 68.33, 48.33, 78.33, 86.67, 40.00, 76.67, 76.67, 46.67, 41.67),
    "grasp_single_cube": (83.33, 83.33, 76.67, 31.67, 10.00, 8.33, 15.00, 16.67, 20.00, 0, 10.00, 5.00),
    "grasp_single_pen": (91.67, 63.33, 28.33, 48.33, 26.67, 23.33, 8.33, 1.67, 13.33, 0, 0, 0),
    "place_cube_in_bowl": (81.67, 88.33, 85.00, 18.33, 6.67, 5.00, 6.67, 11.67, 0, 1.67, 0, 0),
    "place_cube_on_cube": (86.67, 78.33, 88.33, 46.67, 8.33, 10.00, 13.33, 0, 0, 0, 0, 0),
    "place_single_bottle_upright": (40.00, 38.33, 13.33, 6.67, 6.67, 11.67, 26.67, 0, 0, 0, 0, 0),
    "place_single_cube": (43.33, 88.33, 91.67, 16.67, 3.33, 0, 13.33, 6.67, 0, 0, 0, 0),
    "place_shoe": (33.33, 35.00, 66.67, 0, 0, 0, 3.33, 0, 0, 0, 0, 0),
    "handover_horizontal_block": (0,) * 12,
    "lift_pot": (0, 0, 0, 1.67, 0, 0, 0, 0, 0, 0, 0, 0),
}
# Table 10: successes of 20, active / passive, for Qwen3.8-max, GPT-5.6-sol, Opus-5, Doubao-2.1
ACTIVE_PASSIVE = {
    "click_bell_right": ((16, 16, 12, 0), (19, 14, 10, 3)),
    "grasp_pen_leaning_cube": ((13, 5, 8, 1), (11, 2, 6, 0)),
    "grasp_single_bottle": ((19, 18, 15, 17), (12, 11, 13, 7)),
    "grasp_single_bottle_upright": ((14, 16, 12, 10), (8, 13, 7, 2)),
    "grasp_single_cube": ((19, 19, 18, 3), (7, 15, 11, 0)),
    "grasp_single_pen": ((16, 7, 16, 7), (11, 6, 13, 3)),
    "place_cube_in_bowl": ((17, 19, 20, 0), (1, 17, 8, 0)),
    "place_cube_on_cube": ((19, 20, 16, 2), (5, 14, 6, 0)),
    "place_single_bottle_upright": ((9, 3, 8, 1), (0, 0, 2, 0)),
    "place_single_cube": ((12, 17, 18, 1), (2, 0, 6, 0)),
    "beat_block_hammer_right": ((0, 3, 1, 0), (1, 0, 0, 0)),
    "place_shoe": ((7, 14, 8, 0), (1, 3, 3, 0)),
    "handover_horizontal_block": ((0, 0, 0, 0), (0, 0, 0, 0)),
    "lift_pot": ((0, 0, 0, 0), (0, 0, 0, 0)),
}
# Table 15, % held-out (Qwen3.8 max, GPT-5.6 sol, terra, luna), and the same four's base rates (Tables 7-8)
HELD_OUT = {
    "grasp_single_bottle": ((85, 80, 60, 20), (91.67, 76.67, 51.67, 3.33)),
    "grasp_single_bottle_upright": ((40, 35, 50, 55), (65.00, 70.00, 68.33, 86.67)),
    "grasp_single_cube": ((80, 50, 40, 15), (83.33, 76.67, 31.67, 15.00)),
    "place_cube_in_bowl": ((70, 40, 5, 20), (81.67, 85.00, 18.33, 6.67)),
    "place_cube_on_cube": ((80, 65, 5, 10), (86.67, 88.33, 46.67, 13.33)),
    "place_single_bottle_upright": ((55, 20, 15, 10), (40.00, 13.33, 6.67, 26.67)),
    "place_single_cube": ((65, 45, 20, 0), (43.33, 91.67, 16.67, 13.33)),
}


def _passive_ratio(family: str) -> tuple[float, str]:
    active, passive = (sum(v) for v in ACTIVE_PASSIVE[family])
    if active:
        return passive / active, f"x {passive}/{active} passive/active (Table 10)"
    pooled = [sum(sum(v) for v in col) for col in zip(*ACTIVE_PASSIVE.values(), strict=True)]
    return pooled[1] / pooled[0], f"x {pooled[1]}/{pooled[0]} pooled passive/active (Table 10)"


def success_rates() -> dict[tuple[str, str], tuple[float, str]]:
    """(protocol, task) -> (rate in [0, 1], how the paper gives it) for every task of every track."""
    rates = {}
    for family, row in BASE.items():
        active = sum(row) / len(row) / 100
        rates[(ACTIVE.name, family)] = (active, "mean of the 12 primary conditions (Tables 7-9)")
        ratio, why = _passive_ratio(family)
        rates[(PASSIVE.name, family)] = (active * ratio, f"{rates[(ACTIVE.name, family)][1]} {why}")
    for task in tasks_of_track(Track.TRANSFER):
        family = task_class(task).summary_task
        held, base = (sum(v) for v in HELD_OUT[family])
        active = rates[(ACTIVE.name, family)][0] * held / base
        how = f"{family}'s Tables 7-9 mean x {held:g}/{base:g} held-out/base (Table 15, Tables 7-8)"
        rates[(ACTIVE.name, task)] = (active, how)
        ratio, why = _passive_ratio(family)
        rates[(PASSIVE.name, task)] = (active * ratio, f"{how} {why}")
    for task in tasks_of_track(Track.LONG_HORIZON):
        for protocol in (ACTIVE.name, PASSIVE.name):
            rates[(protocol, task)] = (0.0, "no condition completes an episode (Table 5)")
    return rates
