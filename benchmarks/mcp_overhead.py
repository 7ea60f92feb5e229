"""Per-step overhead of the MCP path against the in-process agent on the same episode.

The episode: grasp_single_cube, its first verified seed, render=small, the oracle's commands
(computed once, beforehand, so no step includes the expert's planning). In process, an agent that
answers those commands goes through the loop (:func:`vabench.agents.episode.run_episode`); a step
is the time between two of its ``act`` calls (the loop, the env step, the checker, the record,
the next observation). Over MCP, the official SDK client sends the same commands as tool calls to
``python -m vabench.mcp`` over stdio; a step is one ``call_tool`` round trip (the same loop through
a seat, plus the JSON-RPC exchange, the observation's text and its JPEG as MCP image content).
Server start-up, the env's first reset and the client's connection are outside every step.

Two episodes: the oracle's commands to success (steps of motion planning and physics), and ten
camera actions then a stop (cheap steps, a render each, where the overhead shows). Prints, for
each, the median step of each path over every step of every repetition (interleaved) and the
overhead (MCP minus in-process), in milliseconds and as a share of the in-process step.

    python benchmarks/mcp_overhead.py [--repeats 3]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import anyio  # noqa: E402
import mcp_types as types  # noqa: E402
from mcp import Client, StdioServerParameters  # noqa: E402

from vabench.agents.episode import Episode, run_episode  # noqa: E402
from vabench.core.boundary import Agent, Command, Stop  # noqa: E402
from vabench.core.condition import Condition  # noqa: E402
from vabench.envs import EnvConfig, VABenchEnv  # noqa: E402
from vabench.gym.oracle import expert_decisions  # noqa: E402

TASK, SEED, RENDER = "grasp_single_cube", 1000, "small"
VIEWS = ("view_topdown", "view_side", "zoom_in", "yaw_left", "view_front_side_45")
CAMERA = [{"action": f"camera.{v}"} for v in VIEWS * 2]  # cheap steps (a render each): the overhead shows


class Commands(Agent):
    """Answers the given commands in order, noting when each ``act`` was called."""

    name = "commands"

    def __init__(self, decisions: list[dict]):
        self.decisions, self.calls = decisions, []

    def start(self, brief) -> None:
        self.left = iter(self.decisions)

    def act(self, obs):
        self.calls.append(time.perf_counter())
        decision = next(self.left, None)
        return Command(decision) if decision is not None else Stop("done")


def in_process(env: VABenchEnv, decisions: list[dict]) -> list[float]:
    agent = Commands(decisions)
    with tempfile.TemporaryDirectory() as out:
        run_episode(env, agent, Episode.of(TASK, SEED, env=env), Path(out))
    marks = agent.calls[: len(decisions) + 1]  # a step: from one act to the next
    if len(marks) == len(decisions):  # the last command ended the episode (success): no act after it
        marks.append(time.perf_counter())
    return [b - a for a, b in zip(marks, marks[1:], strict=False)]


def over_mcp(decisions: list[dict]) -> list[float]:
    with tempfile.TemporaryDirectory() as results:
        words = [f"tasks=[{TASK}]", "seeds=1", f"render={RENDER}", f"results_dir={results}", "run_id=bench"]
        server = StdioServerParameters(command=sys.executable, args=["-m", "vabench.mcp", *words], cwd=str(ROOT))

        async def play() -> list[float]:
            async with Client(server, client_info=types.Implementation(name="bench", version="1")) as client:
                await client.call_tool("observe", {})  # the session's episode is claimed and reset here
                steps = []
                for d in decisions:
                    name, args = d["action"].replace(".", "_"), {k: v for k, v in d.items() if k != "action"}
                    t0 = time.perf_counter()
                    result = await client.call_tool(name, args)
                    steps.append(time.perf_counter() - t0)
                    assert not result.is_error, result.content[0].text
                if "The episode is over" not in result.content[0].text:
                    await client.call_tool("stop", {})
                return steps

        return anyio.run(play)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--repeats", type=int, default=3)
    args = p.parse_args()
    env = VABenchEnv(EnvConfig.of(Condition("commands", "active", render=RENDER)))
    env.reset(TASK, SEED)  # the renderer's first reset (shaders): outside every step
    episodes = {"oracle": expert_decisions(TASK, SEED), "camera": CAMERA}
    for what, decisions in episodes.items():
        local, remote = [], []
        for _ in range(args.repeats):  # interleaved: a load that comes and goes meets both
            local += in_process(env, decisions)
            remote += over_mcp(decisions)
        a, b = statistics.median(local), statistics.median(remote)
        print(f"{what} ({len(decisions)} steps, {args.repeats} repeats, median over every step):")
        print(f"  in-process step {a * 1e3:.1f} ms; MCP (SDK client, stdio) step {b * 1e3:.1f} ms")
        print(f"  overhead {(b - a) * 1e3:.1f} ms a step ({(b - a) / a:+.0%} of the in-process step)")


if __name__ == "__main__":
    main()
