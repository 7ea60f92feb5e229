"""Running episodes: the validated run config, the episode specs, the driver (the one way episodes
run) and its backends (Ray actors, or this process with ``ray.address=none``), and the worker that
owns an env and a model. The only layer that imports Ray, and only in ``backends``."""
