"""How agents meet the record: hooks, instruction files and settings, the MCP server."""
