"""The words and types every layer shares: errors, the Registry, vocab, range checks, the
paper's task table, the Condition, the episode spec and the interventions' manifests. Imports
nothing else of vabench."""
