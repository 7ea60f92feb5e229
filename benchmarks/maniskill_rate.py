"""ManiSkill3's ``PickCube-v1`` timed on its CPU backend, for benchmarks/policy_rate.py (issue 49).
Runs inside ManiSkill3's own venv (benchmarks/maniskill_venv.py; never the project's: it pins other
versions) and imports nothing of vabench. Prints one JSON object: ms per ``env.step`` with
``obs_mode="state"`` and with one 320x240 RGB camera (``obs_mode="rgb"``, the sensor resized), and
ms per warm reset (``env.reset`` of an env already built, a new seed), each the median over
``--rounds`` of each round's median, wall and CPU time (CPU: every thread's, the renderer's too).

    <maniskill venv>/bin/python benchmarks/maniskill_rate.py [--rounds 3] [--steps 20] [--resets 5]

The control mode is ``pd_ee_delta_pose`` (ManiSkill3's end-effector delta: 20 Hz control, 100 Hz
sim); each step is a small delta on a changing axis, the gripper open.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

ENV_ID = "PickCube-v1"
SIZE = (320, 240)  # width, height: vabench's small preset


def make(obs_mode: str):
    import gymnasium as gym
    import mani_skill.envs  # noqa: F401  (registers the envs)

    kwargs = {"obs_mode": obs_mode, "control_mode": "pd_ee_delta_pose", "sim_backend": "cpu", "num_envs": 1}
    if obs_mode == "rgb":
        kwargs["sensor_configs"] = {"width": SIZE[0], "height": SIZE[1]}
    return gym.make(ENV_ID, **kwargs)


def timed(fn) -> tuple[float, float]:
    t, cpu = time.perf_counter(), time.process_time()
    fn()
    return (time.perf_counter() - t) * 1000, (time.process_time() - cpu) * 1000


def step_ms(env, seed: int, n: int) -> list[tuple[float, float]]:
    import numpy as np

    env.reset(seed=seed)
    out = []
    for k in range(n):
        a = np.zeros(env.action_space.shape, dtype=np.float32)
        a[..., k % 3] = 0.3 if (k // 3) % 2 == 0 else -0.3  # a small delta (normalised units), gripper last
        a[..., -1] = 1.0  # open
        out.append(timed(lambda a=a: env.step(a)))
    return out


def median2(times: list[tuple[float, float]]) -> tuple[float, float]:
    return tuple(statistics.median(t[i] for t in times) for i in (0, 1))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--resets", type=int, default=5)
    args = ap.parse_args()
    envs = {"state": make("state"), "rgb": make("rgb")}
    for env in envs.values():
        step_ms(env, 0, 2)  # first-use costs (shader compile), once
    shape = envs["rgb"].unwrapped.get_obs()["sensor_data"]
    cams = {name: tuple(d["rgb"].shape) for name, d in shape.items()}
    rounds: dict[str, list] = {"state": [], "rgb": [], "reset": []}
    for r in range(args.rounds):
        for key, env in envs.items():
            rounds[key].append(median2(step_ms(env, 100 + r, args.steps)))
        resets = [timed(lambda s=1000 + r * args.resets + s: envs["rgb"].reset(seed=s)) for s in range(args.resets)]
        rounds["reset"].append(median2(resets))
    out = {f"{key}_ms": dict(zip(("wall", "cpu"), median2(v), strict=True)) for key, v in rounds.items()}
    import mani_skill

    out |= {"env": ENV_ID, "mani_skill": mani_skill.__version__, "cameras": cams, "rounds": args.rounds}
    out["reset_note"] = "env.reset(seed) of the RGB env, built once"
    print(json.dumps(out))


if __name__ == "__main__":
    main()
