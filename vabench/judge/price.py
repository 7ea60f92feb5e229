"""What a judge pass will cost, before it runs (``judge.plan=true``): no request, nothing written.

Per item (record and sample) the prompt is the request the pass would send, counted as the plan counts
a request (:func:`vabench.agents.chat.tokens.request_tokens`: the model's tokenizer, its provider's
image rule), and the reply
:data:`REPLY_TOKENS` (a label object with its steps; at most ``model.max_tokens``). An item whose
request the response cache already answered costs nothing. Prices are LiteLLM's map's; a model it
does not know is priced as unknown. The bound doubles every item (each repaired once).
"""

from __future__ import annotations

from pathlib import Path

from vabench.agents.chat.model import ModelConfig
from vabench.agents.chat.tokens import request_tokens
from vabench.agents.models.cache import request_key
from vabench.agents.models.llm import prices
from vabench.analysis import labels as L

from .evidence import evidence
from .passes import cache_folder, judged_records, model_judge

REPLY_TOKENS = 400  # a judge reply: the JSON object of gates, nine labels and their steps, with room


def plan(run: Path, cfg: ModelConfig, samples: int = 1, max_frames: int = 12) -> dict:
    """``items``, ``cached``, ``prompt_tokens``, ``completion_tokens``, ``cost_usd`` (None: unpriced)
    and ``bound_usd`` (every item repaired once) of the pass ``judge(run, cfg, samples, max_frames)``."""
    run, cfg = Path(run), model_judge(cfg).cfg
    reply = min(REPLY_TOKENS, cfg.max_tokens)
    items = cached = prompt = 0
    for record in judged_records(run):
        messages = evidence(run / record, max_frames).messages
        key = request_key(cfg, messages)[:32]
        for k in range(1, samples + 1):
            items += 1
            if (cache_folder(run, L.judge_annotator(cfg.name or cfg.id, k), record) / f"{key}.json").is_file():
                cached += 1
            else:
                prompt += request_tokens(cfg.id, messages).total
    completion = (items - cached) * reply
    p = prices(cfg.id)
    cost = None if p is None else prompt * p.input + completion * p.output
    return {"items": items, "cached": cached, "prompt_tokens": prompt, "completion_tokens": completion,
            "cost_usd": cost, "bound_usd": None if cost is None else 2 * cost}  # fmt: skip
