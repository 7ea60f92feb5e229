"""vabench: VA-Bench, multimodal LLMs as robot agents in SAPIEN physics simulation.

The folders are the layers, lowest first; a module imports its own layer and the ones before it,
never a later one (``LAYERS`` in ``tests/test_architecture.py`` checks the import graph):

- ``core``: the words and types every layer shares: errors, the Registry, vocab, range checks, the
  paper's task table, the Condition, the interventions' manifests, and the agent boundary
  (``core/boundary.py``: what every kind of agent is shown and may answer).
- ``results``: what a run folder holds: its layout and run info, the outcome row and its table,
  the episode spec's place, episode records, media, bundles.
- ``envs``: the simulator; the env API is the privilege boundary. ``gym``: Gymnasium envs over it.
- ``agents``: the episode loop (``episode.py``); ``agents/chat`` the chat harness, one agent behind
  the boundary (its agent, the chat model interface, protocol, prompts, dialogue, history, tools);
  ``agents/models`` the things that answer (LiteLLM with its cache and rate limits, offline agents,
  policy servers); ``agents/summaries`` demonstration summaries.
- ``analysis``, ``export``, ``learn``, ``review``: readers of run folders and exports; ``analysis``
  never imports the simulator, Ray or agents.
- ``run``: the run machinery: ``run/config`` (what a run is), ``run/folder`` (its bookkeeping on
  disk), ``run/actors`` (the Ray-facing workers), the driver; ``plan``: what a run will cost.
- ``verify``, ``site``, ``launch``: commands over runs; ``tasks.py``, ``serve_policy.py`` and
  ``bundle.py`` are commands that must sit at the top (``python -m vabench.<name>``).
"""

__version__ = "0.1.0"

import sys as _sys

if "gymnasium" in _sys.modules:  # gymnasium.make("vabench:vabench/<Task>-v0") imports vabench: register the ids
    import vabench.gym  # noqa: F401 (registers vabench/<Task>-v0 for every task; docs/gym.md)
