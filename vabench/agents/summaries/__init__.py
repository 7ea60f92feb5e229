"""Demonstration summaries: learning one from demos, the demo tools, the summary schema,
the store that keeps them, and the expert-written ones."""
