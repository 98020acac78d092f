"""The Obsidian templates for decision notes (Decision.md, Question.md), shipped in the wheel as `vault_tools.templates`."""
