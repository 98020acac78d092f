"""Running the rules: `lint` over gathered facts, for the paths asked for."""
from __future__ import annotations

import unicodedata
from pathlib import Path
from typing import Iterable, Sequence

from ..errors import UsageError
from .facts import Facts
from .registry import IGNORE_PROPERTY, RULES, Diagnostic, Report, check_config, ignored_codes


def _within(path: str, scopes: Sequence[str]) -> bool:
    path = unicodedata.normalize("NFC", path)  # a name typed on one system may be spelt otherwise on disk
    return any(scope in ("", ".") or path == scope or path.startswith(scope.rstrip("/") + "/")
               for scope in (unicodedata.normalize("NFC", scope) for scope in scopes))


def lint(facts: Facts, paths: Sequence[str] | None = None) -> Report:
    """Every rule over the facts; `paths` (vault-relative) limit what is reported, not what is checked."""
    overrides = check_config(facts.config)
    diagnostics: list[Diagnostic] = []
    ignored = 0
    for code, rule_ in RULES.items():
        setting = overrides.get(code)
        if setting == "off":
            continue
        for finding in rule_.check(facts):
            if paths is not None and not _within(finding.path, paths):
                continue
            if code in (ignored_codes(facts.properties.get(finding.path, {}).get(IGNORE_PROPERTY)) or set()):
                ignored += 1
                continue
            severity = setting or finding.severity or rule_.severity
            diagnostics.append(Diagnostic(code, severity, finding.path, finding.line or 1, finding.message))
    diagnostics.sort(key=Diagnostic.sort_key)
    return Report(diagnostics, ignored)


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
