"""``python -m vabench.plan tokens REQUEST.json --model openai/gpt-4o``: the prompt tokens of one
captured request, as the model's provider counts them (docs/plan.md, "Counting one request").

REQUEST.json is a chat-format messages list (text and images as data URLs), or a request body
holding one (``messages``; an Anthropic body's ``system`` too). Text is counted by the model's
tokenizer through ``litellm.token_counter``, images by the provider's published rule
(:mod:`vabench.agents.chat.tokens`); where no tokenizer is known for the model, the line says which
stands in. A file that is missing or not such a request: one line, exit status 2.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from vabench.core.errors import BadFile, NotFound, command

PROG = "python -m vabench.plan"


def messages_of(path: Path) -> tuple[list[dict], str | None]:
    """The messages of a captured request, and the model its body names (None for a bare list)."""
    if not path.is_file():
        raise NotFound(f"{path}: no such file (give a captured request: a JSON messages list or body)")
    try:
        data = json.loads(path.read_text())
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise BadFile(f"{path}: not JSON ({e})") from None
    model = None
    if isinstance(data, dict):
        model, system = data.get("model"), data.get("system")
        data = ([{"role": "system", "content": system}] if system else []) + list(data.get("messages") or [])
    if not data or not all(isinstance(m, dict) and "role" in m for m in data):
        raise BadFile(f"{path}: not a chat request (a list of messages, each with a role, or a body with messages)")
    return data, model if isinstance(model, str) else None


def tokens_lines(messages: list[dict], model_id: str) -> list[str]:
    from vabench.agents.chat.tokens import request_tokens, tokenizer

    count, tk = request_tokens(model_id, messages), tokenizer(model_id)
    unknown = f"; {count.unknown} of unreadable size counted as 2048 x 2048" if count.unknown else ""
    how = f"{tk.name} (the provider's tokenizer, via LiteLLM)" if tk.exact else f"a fallback: {tk.note}"
    return [
        f"prompt tokens: {count.total} ({model_id})",
        f"  text {count.text} in {len(messages)} messages, framing {count.framing}, "
        f"images {count.images} ({count.image_count} images{unknown})",
        f"  text counted by {how}; images by the provider's published rule",
    ]


@command(PROG)
def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog=PROG, description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="what", required=True)
    tokens = sub.add_parser("tokens", help="the prompt tokens of one captured request")
    tokens.add_argument(
        "captured", metavar="REQUEST.json", type=Path, help="a JSON messages list, or a request body with messages"
    )
    tokens.add_argument("--model", help="a LiteLLM model id, e.g. openai/gpt-4o (default: the body's model)")
    args = ap.parse_args(argv)
    messages, named = messages_of(args.captured)
    model_id = args.model or named
    if not model_id:
        ap.error("the request names no model: give --model, e.g. --model openai/gpt-4o")
    print("\n".join(tokens_lines(messages, model_id)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
