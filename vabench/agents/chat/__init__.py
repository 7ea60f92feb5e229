"""The chat harness: the model interface (``model``), the protocol (a reply's decision),
prompts, the dialogue with a model, the conversation history and its compaction, prompt-cache
prefixes, the tools a model calls, and the harness config."""
