"""An inspect_ai eval of one VA-Bench episode through python -m vabench.mcp, as an inspect user
writes it: the server as ``mcp_server_stdio``, ``mockllm/model`` scripted to call its tools (the
oracle's commands, given as JSON), and a scorer that reads the server's verdict (vabench's checker)
from the last tool result. Runs in the inspect venv (tests/inspect_venv.py), never the project's:
it imports no vabench.

    python tests/inspect_eval.py CALLS.json LOG_DIR PROJECT_PYTHON PROJECT_ROOT -- WORD ...
"""

import json
import sys

from inspect_ai import Task, eval
from inspect_ai.dataset import Sample
from inspect_ai.model import ChatMessageTool, ModelOutput, get_model
from inspect_ai.scorer import CORRECT, INCORRECT, Score, Target, accuracy, scorer
from inspect_ai.solver import Generate, TaskState, solver
from inspect_ai.tool import mcp_connection, mcp_server_stdio

OVER = "The episode is over: "


@scorer(metrics=[accuracy()])
def checker():
    """CORRECT when the server said the episode ended in success (vabench's checker), else INCORRECT."""

    async def score(state: TaskState, target: Target) -> Score:
        said = [m.text for m in state.messages if isinstance(m, ChatMessageTool) and OVER in m.text]
        end = said[-1].split(OVER, 1)[1].split(" ", 1)[0] if said else "not over"
        return Score(value=CORRECT if end == "success" else INCORRECT, answer=end, explanation=said[-1] if said else "")

    return score


@solver
def play(server):
    """The model calls the server's tools until it stops calling them, over one connection: the
    server plays one episode per MCP session (inspect's react() agent keeps the connection too;
    a bare use_tools() connects once per call, and each call would start a new episode)."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        async with mcp_connection([server]):
            state.tools = await server.tools()
            return await generate(state, tool_calls="loop")

    return solve


def main(argv: list[str]) -> None:
    calls_file, log_dir, python, root = argv[:4]
    words = argv[argv.index("--") + 1 :]
    calls = json.loads(open(calls_file).read())
    server = mcp_server_stdio(name="vabench", command=python, args=["-m", "vabench.mcp", *words], cwd=root)
    outputs = [ModelOutput.for_tool_call("mockllm/model", name, args) for name, args in calls]
    outputs.append(ModelOutput.from_content("mockllm/model", "Done."))  # no tool call: the loop ends
    model = get_model("mockllm/model", custom_outputs=outputs)
    task = Task(
        dataset=[Sample(input="Play the VA-Bench episode with the tools.", target="success")],
        solver=play(server),
        scorer=checker(),
    )
    [log] = eval(task, model=model, log_dir=log_dir, display="none", message_limit=4 * len(calls) + 10)
    sample = log.samples[0]
    tools = [m.function for m in sample.messages if isinstance(m, ChatMessageTool)]
    score = next(iter(sample.scores.values()))
    print(
        json.dumps(
            {
                "status": log.status,
                "score": score.value,
                "answer": score.answer,
                "tool_calls": len(tools),
                "accuracy": log.results.scores[0].metrics["accuracy"].value,
                "log": log.location,
            }
        )
    )


if __name__ == "__main__":
    main(sys.argv[1:])
