"""``python -m vabench.mcp``: a run's episodes played by MCP clients (agent frameworks, Claude
Code, inspect_ai), each client session through a seat (:mod:`vabench.run.seat`), so its record and
row are any agent's. :mod:`.tools`: the tools and their texts; :mod:`.server`: the MCP server and
its sessions; :mod:`.http`: streamable HTTP behind the review app's access rules (docs/mcp.md)."""
