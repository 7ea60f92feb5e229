"""Ray driver, episode actors and the outcome writer; the only layer that imports Ray.
Arrives with the experiments issue."""
