"""vault-tools: a decision ledger that lives inside an Obsidian vault."""

__version__ = "0.1.0"
