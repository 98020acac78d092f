"""How agents meet the record: hooks, instruction files and settings, the MCP server."""
from __future__ import annotations

import importlib
from types import ModuleType

HOOK_AGENTS = ("claude", "codex", "gemini")  # each has a module here with EVENTS and run(event, stdin_text, vault)


def hook_module(agent: str) -> ModuleType:
    """The module that answers `vault-tools hook AGENT EVENT`."""
    return importlib.import_module(f"{__name__}.{agent}")
