"""Models and the agent harness (decision protocol, prompts, LiteLLM client, summaries).
Talks to the simulator only through the env API in :mod:`vabench.envs`. Arrives with issue 3."""
