"""The agent side: the decision protocol, prompts, the harness loop, models (LiteLLM and the
offline oracle / random / replay agents), demonstration summaries and episode records.

Talks to the simulator only through the env API of :mod:`vabench.envs`; the single privileged
call (the task expert) goes only to models that declare ``privileged = True``.

    from vabench.agents.harness import Episode, run_episode
    from vabench.agents.models import ModelConfig
    from vabench.agents.registry import make_model
    from vabench.condition import Condition
    from vabench.envs import EnvConfig, VABenchEnv

    condition = Condition("oracle", "active", render="small")
    env = VABenchEnv(EnvConfig.of(condition))
    episode = Episode.of("grasp_single_cube", 1000, env=env)
    row = run_episode(env, make_model(ModelConfig(id="oracle")), episode, "out/ep")
"""
