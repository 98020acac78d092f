"""Lint's outputs, all from the same rules and diagnostics: text lines, JSON, GitHub Actions annotations,
the closing summary, `lint --explain CODE` and the README's rule table.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from ..errors import UsageError
from .registry import ERROR, IGNORE_PROPERTY, RULES, Diagnostic, Report

FORMATS = ("text", "json", "github")


def check_format(value: str) -> str:
    if value not in FORMATS:
        raise UsageError(f"--format must be one of {', '.join(FORMATS)}, not {value!r}")
    return value


def format_text(diagnostic: Diagnostic) -> str:
    return f"{diagnostic.path}:{diagnostic.line}: {diagnostic.code} {diagnostic.severity}: {diagnostic.message}"


def _github_escape(text: str, *, property_: bool = False) -> str:
    text = text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    return text.replace(":", "%3A").replace(",", "%2C") if property_ else text


def format_github(diagnostic: Diagnostic, file: str) -> str:
    """A GitHub Actions workflow command that annotates `file` (relative to the workspace)."""
    level = "error" if diagnostic.severity == ERROR else "warning"
    title = f"{diagnostic.code} {diagnostic.name}"
    return (f"::{level} file={_github_escape(file, property_=True)},line={diagnostic.line},"
            f"title={_github_escape(title, property_=True)}::{_github_escape(diagnostic.message)}")


def workspace_file(root: Path, path: str, cwd: Path) -> str:
    """A vault-relative path as GitHub shows it: relative to the folder lint runs in, else absolute."""
    file = root / path
    try:
        return file.relative_to(cwd.resolve()).as_posix()
    except ValueError:
        return file.as_posix()


def report_json(report: Report) -> dict[str, Any]:
    return {
        "diagnostics": [{"code": d.code, "name": d.name, "severity": d.severity, "path": d.path, "line": d.line,
                         "message": d.message} for d in report.diagnostics],
        "errors": report.errors, "warnings": report.warnings, "ignored": report.ignored,
        "fixed": report.fixed, "not_fixed": report.not_fixed,
    }


def summary(report: Report) -> str:
    def plural(count: int, word: str) -> str:
        return f"{count} {word}{'' if count == 1 else 's'}"

    found = (f"Found {plural(report.errors, 'error')} and {plural(report.warnings, 'warning')}"
             if report.diagnostics else "No problems found")
    if report.ignored:
        found += f" ({plural(report.ignored, 'finding')} ignored by {IGNORE_PROPERTY})"
    return found + "."


def explain(code: str) -> str:
    rule_ = RULES.get(code.strip().upper())
    if rule_ is None:
        raise UsageError(f"{code!r} names no rule (known: {', '.join(RULES)})")
    return f"# {rule_.code} {rule_.name}\n\nDefault severity: {rule_.severity_shown}.\n\n{rule_.doc}\n"


def rules_table() -> str:
    """The README's rule table, rendered from the rules' docs."""
    def cell(text: str) -> str:
        return text.replace("|", "\\|")

    rows = ["| Code | Name | Default | What triggers it | How to fix |", "|---|---|---|---|---|"]
    for rule_ in RULES.values():
        rows.append(f"| `{rule_.code}` | {rule_.name} | {rule_.severity_shown} | "
                    f"{cell(rule_.section('What it does'))} | {cell(rule_.section('How to fix'))} |")
    return "\n".join(rows) + "\n"
