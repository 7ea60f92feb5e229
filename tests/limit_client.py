"""A job that only calls the model, for tests of the key's shared budget across processes: the
run's limiter as ``make_limiter`` builds it (``budget_for`` the config), a real LiteLLM client,
real HTTP. It says ``ready`` once LiteLLM is warm, waits for a line on stdin, then sends ``n``
requests one after another, each carrying ``job: NAME`` (the provider tells the jobs apart).

    python -m tests.limit_client URL NAME N RPM SHARE(1|0)
"""

from __future__ import annotations

import os
import sys

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from vabench.agents.chat.model import ModelConfig  # noqa: E402
from vabench.agents.models.keybudget import budget_for  # noqa: E402
from vabench.agents.models.llm import LiteLLMModel  # noqa: E402
from vabench.agents.models.ratelimit import RateLimiter  # noqa: E402

KEY_VAR = "VABENCH_TEST_KEY"


def main(url: str, name: str, n: int, rpm: float, share: bool) -> None:
    cfg = ModelConfig(
        id="openai/test-model",
        api_base=url,
        api_key_env=KEY_VAR,
        rpm=rpm,
        share_limits=share,
        max_retries=10,
        backoff_initial_s=0.1,
        backoff_max_s=1.0,
        extra={"extra_body": {"job": name}},
    )
    model = LiteLLMModel(cfg)
    model.limiter = RateLimiter(cfg.rpm, cfg.tpm, shared=budget_for(cfg))
    model.warm()
    print("ready", flush=True)
    sys.stdin.readline()
    for _ in range(n):
        model.complete([{"role": "user", "content": "hello"}])
    print("done", flush=True)


if __name__ == "__main__":
    url, name, n, rpm, share = sys.argv[1:6]
    main(url, name, int(n), float(rpm), share == "1")
