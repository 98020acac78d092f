"""Lint: the vault's state turned into diagnostics, one stable code per rule, in the style of ruff.

`facts.gather` does all the reading (notes, ledger, `git show`, file times,
pinned pages) and hands back `Facts`; every rule is a pure function of those
facts, kept with its doc in the module of its family:

    schema.py        VT001-VT009  each note readable, its properties well-formed and within limits
    supersession.py  VT010-VT016  supersedes / superseded_by form one chain; a new ruling says what it replaces
    record_rules.py  VT020-VT029  seals hold, notes agree with the ledger, the ledger is append-only and
                              keeps its seal lines, clones' outcomes do not conflict; a ruling holds an
                              answer before it is sealed
    pinned.py        VT030-VT033  pinned pages current, the agent's view within budget, git set up
    scopes.py        VT050-VT051  a ruling's scope globs are valid and match files
    carriers.py      VT052        conflict copies a sync engine made of decision notes
    hygiene.py       VT040-VT043  warnings: stale questions, revisit dates, topic variants, no source

`registry.RULES` is the one table from code to rule. `runner.lint` runs the
rules, applies the severities set in `config.yaml`, the per-note
`vault-tools-ignore` property and the paths asked for; `runner.run_lint` is
the command line's single entry point. `fixes.fix` does the safe, mechanical
repairs and nothing else: it never edits what the owner wrote. `formats`
renders reports, `--explain` and the README's rule table.
"""
from __future__ import annotations

# The families register their rules on import (in whatever order an import sorter leaves them).
from . import carriers, hygiene, pinned, record_rules, schema, scopes, supersession  # noqa: F401
from .facts import TOOK_EFFECT, Facts, committed_text, first_line, gather, read_ledger
from .fixes import fix
from .formats import (
    FORMATS,
    check_format,
    explain,
    format_github,
    format_text,
    report_json,
    rules_table,
    summary,
    workspace_file,
)
from .registry import (
    CODE_PATTERN,
    CONFIG_PATH,
    DOC_HEADINGS,
    ERROR,
    IGNORE_PROPERTY,
    LEDGER_PATH,
    RULES,
    SEVERITIES,
    WARNING,
    Check,
    Diagnostic,
    Finding,
    Report,
    Rule,
    check_config,
    ignore_problems,
    ignored_codes,
    rule,
)
from .runner import LintResult, lint, report_paths, run_lint

# RULES is kept in code order: the order rules run in, are listed and are documented.

__all__ = [
    "CODE_PATTERN", "CONFIG_PATH", "DOC_HEADINGS", "ERROR", "FORMATS", "IGNORE_PROPERTY", "LEDGER_PATH", "RULES",
    "SEVERITIES", "TOOK_EFFECT", "WARNING", "Check", "Diagnostic", "Facts", "Finding", "LintResult", "Report", "Rule",
    "check_config", "check_format", "committed_text", "explain", "first_line", "fix", "format_github", "format_text",
    "gather", "ignore_problems", "ignored_codes", "lint", "read_ledger", "report_json", "report_paths", "rule",
    "rules_table", "run_lint", "summary", "workspace_file",
]

_by_code = sorted(RULES.items())
RULES.clear()
RULES.update(_by_code)
