"""The rule registry: what a rule is, the one table from code to rule, and what running rules reports.

Each family module registers its rules with `@rule(code, name, severity)`;
the rule's docstring (What it does / Why / How to fix) is its documentation,
read by `lint --explain` and the README's rule table. A code is never reused
for another rule.
"""
from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from ..config import Config
from ..errors import ConfigError
from ..record_files import CONFIG_FILE, LEGACY_LEDGER, STATE_DIR
from ..rule_codes import RULE_CODES

ERROR = "error"
WARNING = "warning"
SEVERITIES = (ERROR, WARNING)
CODE_PATTERN = re.compile(r"^VT\d{3}$")
DOC_HEADINGS = ("What it does", "Why", "How to fix")
IGNORE_PROPERTY = "vault-tools-ignore"
LEDGER_PATH = f"{STATE_DIR}/{LEGACY_LEDGER}"
CONFIG_PATH = f"{STATE_DIR}/{CONFIG_FILE}"


class Finding(NamedTuple):
    """What a rule reports; the rule's code and severity are added by `lint`."""

    path: str
    line: int | None
    message: str
    severity: str | None = None  # only for a rule whose severity depends on the case


# A rule's check: what it finds in the lint facts (`facts.Facts`, which imports this module: taken as Any here)
Check = Callable[[Any], Iterable[Finding]]


@dataclass(frozen=True)
class Rule:
    code: str
    name: str
    severity: str
    check: Check
    severity_shown: str  # how the table shows the default severity
    remembered: bool = False  # see `rule`

    @property
    def doc(self) -> str:
        return inspect.cleandoc(self.check.__doc__ or "")

    def section(self, heading: str) -> str:
        """One `## heading` section of the doc, as a single line of Markdown."""
        parts = re.split(r"^## +(.+)$", self.doc, flags=re.MULTILINE)
        sections = {parts[i].strip(): parts[i + 1] for i in range(1, len(parts) - 1, 2)}
        return " ".join(sections.get(heading, "").split())


# The one table from code to rule, in the order the families register them (by code).
RULES: dict[str, Rule] = {}


def rule(code: str, name: str, severity: str, severity_shown: str | None = None, *,
         remembered: bool = False) -> Callable[[Check], Check]:
    """Register the decorated check as the rule `code`; its docstring is the rule's doc.

    A `remembered` rule looks at nothing but the decision notes (their text and times), the names of the
    vault's files, the ledger, the config and today's date (not git or files outside the vault): lint
    takes its findings from an earlier run when none of those changed (see `runner.lint`). One that
    compares the clock with a note's time says when its findings would change (`Facts.changes_at`)."""
    if not CODE_PATTERN.match(code):
        raise ValueError(f"rule code {code!r} is not like VT001")
    if code not in RULE_CODES:
        raise ValueError(f"rule code {code} is not listed in rule_codes.RULE_CODES")
    if severity not in SEVERITIES:
        raise ValueError(f"{code}: severity {severity!r} is not one of {', '.join(SEVERITIES)}")

    def register(check: Check) -> Check:
        if code in RULES:
            raise ValueError(f"{code} is registered twice: {RULES[code].name} and {name}")
        RULES[code] = Rule(code, name, severity, check, severity_shown or severity, remembered)
        ordered = sorted(RULES.items())  # the table runs in code order, whatever order the families load in
        RULES.clear()
        RULES.update(ordered)
        return check

    return register


class Diagnostic(NamedTuple):  # a tuple: a lint of a large vault can make a hundred thousand
    code: str
    severity: str
    path: str  # vault-relative, forward slashes
    line: int
    message: str

    @property
    def name(self) -> str:
        return RULES[self.code].name

    def sort_key(self) -> tuple[str, int, str, str]:
        return self.path, self.line, self.code, self.message


@dataclass
class Report:
    diagnostics: list[Diagnostic]
    ignored: int = 0  # findings a note opted out of with vault-tools-ignore
    fixed: list[str] = field(default_factory=list)  # what --fix did
    not_fixed: list[str] = field(default_factory=list)  # what --fix could not do, and why

    @property
    def errors(self) -> int:
        return sum(1 for d in self.diagnostics if d.severity == ERROR)

    @property
    def warnings(self) -> int:
        return sum(1 for d in self.diagnostics if d.severity == WARNING)

    def failed(self, strict: bool = False) -> bool:
        return self.errors > 0 or (strict and self.warnings > 0)


# -- codes named by the owner: `vault-tools-ignore` and `config.yaml` ----------------------------

def ignore_problems(value: Any) -> list[str]:
    """What is wrong with a `vault-tools-ignore` value (nothing when it is absent)."""
    if value is None:
        return []
    codes = ignored_codes(value)
    if codes is None:
        return ["must be a list of rule codes, like [VT043]"]
    return [f"names no rule: {code!r}" for code in sorted(codes) if code not in RULES]


def ignored_codes(value: Any) -> set[str] | None:
    if value is None:
        return set()
    if isinstance(value, str):
        items: list[Any] = [part for part in re.split(r"[,\s]+", value) if part]
    elif isinstance(value, list):
        items = list(value)
    else:
        return None
    if not all(isinstance(item, str) for item in items):
        return None
    return {item.strip().upper() for item in items}


def check_config(config: Config) -> dict[str, str]:
    """The severity overrides of `config.yaml`; refuses a code that names no rule."""
    for code, setting in config.lint.items():
        if code not in RULES:
            raise ConfigError(f"lint: {code!r} names no rule (known: {', '.join(RULES)})", path=CONFIG_PATH)
        if setting not in (ERROR, WARNING, "off"):
            raise ConfigError(f"lint: {code} must be error, warning or off, not {setting!r}", path=CONFIG_PATH)
    return dict(config.lint)
