"""Numbers anyone can check: ``python -m vabench.verify RUN|BUNDLE`` re-simulates every judged
episode of a run folder from its recorded replies and compares it, checks every row against its
record, and names what differs between the run's machine and this one; ``--rescore OUT`` writes
the re-simulations with the current code as a new run folder. No model is called."""

from .check import Report, rescore, unpacked, verify

__all__ = ["Report", "rescore", "unpacked", "verify"]
