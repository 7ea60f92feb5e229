"""Numbers anyone can check: ``python -m vabench.verify RUN|BUNDLE`` re-simulates every judged
episode of a run folder from its recorded replies and compares it, checks every row against its
record, and names what differs between the run's machine and this one; ``--rescore OUT`` writes
the re-simulations with the current code as a new run folder. No model is called.

``check`` (the re-simulation: simulator and actor code) is imported on first use, so a reader that
needs only the row-against-record check (``compare.check_record``: the results site) imports no
simulator."""

__all__ = ["Report", "rescore", "unpacked", "verify"]


def __getattr__(name: str):
    if name in __all__:
        from . import check

        return getattr(check, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
