"""The agent side: the episode loop (harness), the chat harness (chat, dialogue, prompts, protocol,
history), the things that answer (the LiteLLM client, its cache and limits, the offline oracle /
random / replay / servo / posetext agents, the policy client), demonstration summaries and
episode records. Every agent meets the loop at one typed boundary (:mod:`vabench.core.boundary`).

Talks to the simulator only through the env API of :mod:`vabench.envs`; the single privileged
call (the task expert) goes only to agents that declare ``privileged = True``.

    from vabench.agents.episode import Episode, run_episode
    from vabench.agents.chat.model import ModelConfig
    from vabench.agents.models.kinds import make_model
    from vabench.core.condition import Condition
    from vabench.envs import EnvConfig, VABenchEnv

    condition = Condition("oracle", "active", render="small")
    env = VABenchEnv(EnvConfig.of(condition))
    episode = Episode.of("grasp_single_cube", 1000, env=env)
    row = run_episode(env, make_model(ModelConfig(id="oracle")), episode, "out/ep")
"""
