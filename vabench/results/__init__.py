"""What a run folder holds, as files: the outcome row and its table, episode records
(layout, events, frames), media, outcome files set aside as unreadable, and bundles. Below the
simulator (the demo recorder writes media); the run's bookkeeping is vabench.run.folder."""
