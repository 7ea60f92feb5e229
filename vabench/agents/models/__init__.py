"""The things that answer: the LiteLLM client with its cache, rate limits and key budgets,
the offline agents (oracle, random, replay, posetext, servo), the policy-server agent, and
``kinds`` (make_model: a model config to the thing that answers)."""
