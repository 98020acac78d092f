"""Running the rules: `lint` over gathered facts, and `run_lint`, the one call the command line makes."""
from __future__ import annotations

import datetime as dt
import math
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import UsageError
from ..vault import Vault
from . import fixes
from .facts import Facts, gather
from .formats import check_format, format_github, format_text, report_json, summary, workspace_file
from .registry import IGNORE_PROPERTY, RULES, SEVERITIES, Diagnostic, Report, check_config, ignored_codes


def _within(path: str, scopes: Sequence[str]) -> bool:
    path = unicodedata.normalize("NFC", path)  # a name typed on one system may be spelt otherwise on disk
    return any(scope in ("", ".") or path == scope or path.startswith(scope.rstrip("/") + "/")
               for scope in (unicodedata.normalize("NFC", scope) for scope in scopes))


def lint(facts: Facts, paths: Sequence[str] | None = None) -> Report:
    """Every rule over the facts; `paths` (vault-relative) limit what is reported, not what is checked."""
    overrides = check_config(facts.config)
    remembered = remembered_findings(facts, {code for code, setting in overrides.items() if setting == "off"})
    diagnostics: list[Diagnostic] = []
    ignored = 0
    opted_out: dict[str, set[str]] = {}  # by path: the codes its `vault-tools-ignore` names
    for code, rule_ in RULES.items():
        setting = overrides.get(code)
        if setting == "off":
            continue
        for path, line, message, severity in remembered[code] if rule_.remembered else rule_.check(facts):
            if paths is not None and not _within(path, paths):
                continue
            if path not in opted_out:
                opted_out[path] = ignored_codes(facts.properties.get(path, {}).get(IGNORE_PROPERTY)) or set()
            if code in opted_out[path]:
                ignored += 1
                continue
            diagnostics.append(Diagnostic(code, setting or severity or rule_.severity, path, line or 1, message))
    diagnostics.sort(key=Diagnostic.sort_key)
    return Report(diagnostics, ignored)


# docs/design/0023-remembered-pages-and-findings.md
def remembered_findings(facts: Facts, off: set[str]) -> dict[str, list[list[Any]]]:
    """What the `remembered` rules find, as [path, line, message, severity] lists, taken from an earlier run
    when all they look at is as it was then (`Facts.remember`) and the clock has not passed a moment their
    findings change at; else found now."""
    codes = [code for code, rule_ in RULES.items() if rule_.remembered and code not in off]

    def find() -> dict[str, Any]:
        facts.findings_change_at = None
        found = {code: [list(finding) for finding in RULES[code].check(facts)] for code in codes}
        return {"found": found, "made_at": facts.now, "change_at": facts.findings_change_at}

    if facts.remember is None:
        kept = find()
    else:
        kept = facts.remember(find)
        if not _still_true(kept, codes, facts.now):  # the clock moved past what was found, or a damaged memo
            kept = facts.remember(find, anew=True)
    found: dict[str, list[list[Any]]] = kept["found"]
    return found


def _still_true(kept: Any, codes: list[str], now: float) -> bool:
    if not isinstance(kept, dict) or not isinstance(kept.get("found"), dict):
        return False
    made_at: Any = kept.get("made_at")
    change_at: Any = kept.get("change_at")
    if not (_moment(made_at) and (change_at is None or _moment(change_at))):
        return False
    if now < made_at or (change_at is not None and now >= change_at):
        return False
    return all(_findings_kept(kept["found"].get(code)) for code in codes)


def _moment(value: Any) -> bool:
    return type(value) in (int, float) and math.isfinite(value)


def _findings_kept(value: Any) -> bool:
    return isinstance(value, list) and all(
        isinstance(item, list) and len(item) == 4 and isinstance(item[0], str) and isinstance(item[2], str)
        and (item[1] is None or type(item[1]) is int) and item[3] in (None, *SEVERITIES)
        for item in value)


def report_paths(root: Path, paths: Iterable[Path], cwd: Path | None = None) -> list[str] | None:
    """The paths asked for, relative to the vault; None when none were given."""
    given = list(paths)
    if not given:
        return None
    found = []
    for path in given:
        absolute = (cwd or Path.cwd()) / path.expanduser()
        if not absolute.exists():
            raise UsageError("no such file or folder", path=str(path))
        try:
            relative = absolute.resolve().relative_to(root.resolve()).as_posix()
        except ValueError:
            raise UsageError("is not inside the vault", path=str(path)) from None
        found.append("" if relative == "." else relative)
    return found


@dataclass
class LintResult:
    """One run of `vault-tools lint`: the report (with what --fix did) and how to show it."""

    report: Report
    output_format: str  # text, json or github
    failed: bool  # errors were found, or warnings under --strict: exit 1
    lines: list[str]  # the diagnostics, one a line, in the text or github format (none for json)

    @property
    def fix_lines(self) -> list[str]:
        """What --fix did, then what it could not do and why."""
        return [*self.report.fixed, *self.report.not_fixed]

    def summary(self) -> str:
        return summary(self.report)

    def as_json(self) -> dict[str, Any]:
        return report_json(self.report)


def run_lint(vault: Vault, *, paths: Iterable[Path] = (), fix: bool = False, strict: bool = False,
             today: dt.date | None = None, output_format: str = "text", cwd: Path | None = None) -> LintResult:
    """Check the vault against every rule, after the safe repairs when `fix` is set.

    `paths` (relative to `cwd`, the current folder by default) limit what is
    reported, not what is checked. Refuses, before anything is written, an
    unknown format, a `config.yaml` naming no rule, and a path outside the vault.
    """
    check_format(output_format)
    check_config(vault.config)
    scopes = report_paths(vault.root, paths, cwd)
    fixed: tuple[list[str], list[str]] = fixes.fix(vault, today=today) if fix else ([], [])
    report = lint(gather(vault, today=today), scopes)
    report.fixed, report.not_fixed = fixed
    if output_format == "github":
        where = cwd or Path.cwd()
        lines = [format_github(d, workspace_file(vault.root, d.path, where)) for d in report.diagnostics]
    elif output_format == "text":
        lines = [format_text(d) for d in report.diagnostics]
    else:
        lines = []
    return LintResult(report, output_format, report.failed(strict), lines)
