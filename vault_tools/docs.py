"""The documentation's reference sections, generated from the code so they cannot drift.

Pure functions returning Markdown. `scripts/update_docs.py` writes them into the
pages under docs/ between `<!-- NAME:start -->` and `<!-- NAME:end -->` markers,
and `tests/test_docs.py` fails when a page differs from what they return.

- `commands_reference()`: every command of the typer app, its help and its
  arguments and options, read from the command objects (not from `--help`
  output, whose layout depends on the terminal and the typer version).
- `config_reference()`: every key of `vault-tools/config.yaml`, spelt as the
  file spells it (`budget.lines`), with its default from `config.Config` and its
  meaning from `vault.CONFIG_DOC`.
- `lint.rules_table()`: the lint rules, rendered from the rules' own docs.
"""
from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, get_args

import typer

from . import lint
from .cli import app
from .config import CONFIG_DOC, Config

PROGRAM = "vault-tools"
# Options taken, with the same help, by at least this share of the commands are
# described once at the top of the reference instead of under every command.
SHARED_OPTION_SHARE = 0.5
# Config fields that config.yaml nests under a parent key (see config.load_config).
NESTED_CONFIG_PREFIXES = ("budget",)


# -- commands ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class Param:
    """One argument or option of a command, as the reference shows it."""

    kind: str  # "argument" or "option"
    name: str
    flags: tuple[str, ...]  # option names, long first (`--topic`, `-t`); empty for an argument
    placeholder: str | None  # `TEXT`, `PATH`, `ID`...; None for a flag that takes no value
    help: str
    required: bool
    repeatable: bool
    default: str | None  # shown default, when there is a meaningful one

    @property
    def key(self) -> tuple[tuple[str, ...], str | None, str]:
        """What makes two commands' options the same option."""
        return self.flags, self.placeholder, self.help

    def usage(self) -> str:
        """The argument or option as written in a usage line: `SUMMARY`, `[ID...]`, `--topic TEXT`."""
        if self.kind == "argument":
            text = (self.placeholder or self.name.upper()) + ("..." if self.repeatable else "")
            return text if self.required else f"[{text}]"
        return self.flags[0] + (f" {self.placeholder}" if self.placeholder else "")

    def label(self) -> str:
        """The argument or option as its entry in a list: `` `--topic TEXT`, `-t` ``."""
        if self.kind == "argument":
            return f"`{self.usage()}`"
        value = f" {self.placeholder}" if self.placeholder else ""
        return ", ".join([f"`{self.flags[0]}{value}`", *(f"`{flag}`" for flag in self.flags[1:])])

    def notes(self) -> str:
        words = []
        if self.required:
            words.append("required")
        if self.repeatable and self.kind == "option" and "repeatable" not in self.help.lower():
            words.append("repeatable")
        if self.default is not None:
            words.append(f"default: `{self.default}`")
        return f" ({', '.join(words)})" if words else ""


@dataclass(frozen=True)
class Command:
    name: str
    help: str
    params: tuple[Param, ...]

    @property
    def summary(self) -> str:
        """The first paragraph of the help, on one line."""
        return _one_line(self.help.split("\n\n", 1)[0]) if self.help else ""

    @property
    def anchor(self) -> str:
        """GitHub's anchor for this command's heading (`## `vault-tools ask``)."""
        return f"{PROGRAM}-{self.name}"

    def usage(self) -> str:
        """`vault-tools ask SUMMARY --topic TEXT [OPTIONS]`: arguments, required options, then the rest."""
        words = [PROGRAM, self.name]
        words += [param.usage() for param in self.params if param.kind == "argument"]
        words += [param.usage() for param in self.params if param.kind == "option" and param.required]
        if any(param.kind == "option" and not param.required for param in self.params):
            words.append("[OPTIONS]")
        return " ".join(words)


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _cell(text: str) -> str:
    """Text that is safe inside a Markdown table cell."""
    return text.replace("|", "\\|")


def _annotation(param: Any) -> Any:
    descriptor = getattr(param, "type_descriptor", None)
    annotation = getattr(descriptor, "annotation", None)
    if annotation is not None:
        args = get_args(annotation)
        return args[0] if args else annotation
    return getattr(param, "type", None)


def _placeholder(param: Any) -> str | None:
    if getattr(param, "is_flag", False):
        return None
    metavar = getattr(param, "metavar", None)
    if metavar:
        return str(metavar).strip("[]").removesuffix("...").strip("[]")
    annotation = _annotation(param)
    is_path = annotation is Path or type(annotation).__name__ == "Path" or (
        isinstance(annotation, type) and issubclass(annotation, Path))
    if is_path:
        return "PATH"
    if param.param_type_name == "argument":
        return None  # its name, upper-cased
    return "TEXT"


def _default(param: Any) -> str | None:
    value = getattr(param, "default", None)
    if param.param_type_name != "option" or getattr(param, "is_flag", False):
        return None
    if value is None or value == [] or value == () or callable(value):
        return None
    return str(value)


def _param(param: Any) -> Param:
    kind = "argument" if param.param_type_name == "argument" else "option"
    flags: tuple[str, ...] = ()
    if kind == "option":
        flags = tuple(sorted([*param.opts, *param.secondary_opts], key=lambda flag: (not flag.startswith("--"), flag)))
    repeatable = bool(getattr(param, "multiple", False)) or getattr(param, "nargs", 1) == -1
    return Param(kind=kind, name=param.name, flags=flags, placeholder=_placeholder(param),
                 help=_one_line(getattr(param, "help", None) or ""), required=bool(param.required),
                 repeatable=repeatable, default=_default(param))


def commands() -> list[Command]:
    """Every visible command of the app, in the order `vault-tools --help` lists them."""
    group = typer.main.get_command(app)
    found = []
    for name, command in getattr(group, "commands", {}).items():
        if getattr(command, "hidden", False):
            continue
        params = tuple(_param(p) for p in command.params
                       if not getattr(p, "hidden", False) and p.name != "help")
        found.append(Command(name=name, help=inspect.cleandoc(command.help or ""), params=params))
    return found


def shared_options(found: list[Command]) -> list[Param]:
    """Options that at least half of the commands take with the same help, in first-seen order."""
    counts: dict[tuple[tuple[str, ...], str | None, str], int] = {}
    first: dict[tuple[tuple[str, ...], str | None, str], Param] = {}
    for command in found:
        for param in command.params:
            if param.kind == "option":
                counts[param.key] = counts.get(param.key, 0) + 1
                first.setdefault(param.key, param)
    return [first[key] for key, count in counts.items() if count >= SHARED_OPTION_SHARE * len(found)]


def _entry(param: Param) -> str:
    text = param.help or "(no help text)"
    return f"- {param.label()}{param.notes()}: {text}"


def commands_reference() -> str:
    """The command reference: a summary table, the shared options, then each command."""
    found = commands()
    shared = shared_options(found)
    shared_keys = {param.key for param in shared}
    lines = ["| command | does |", "|---|---|"]
    lines += [f"| [`{command.name}`](#{command.anchor}) | {_cell(command.summary)} |" for command in found]
    lines += ["", "Options that most commands take:", ""]
    lines += [_entry(param) for param in shared]
    lines += ["- `--help`: Show the command's own help and exit."]
    for command in found:
        own = [param for param in command.params if param.key not in shared_keys]
        also = [param for param in command.params if param.key in shared_keys]
        lines += ["", f"## `{PROGRAM} {command.name}`", "", f"`{command.usage()}`", ""]
        lines += [_one_line(paragraph) for paragraph in command.help.split("\n\n") if paragraph.strip()] or ["-"]
        entries = [_entry(param) for param in own if param.kind == "argument" and param.help]
        entries += [_entry(param) for param in own if param.kind == "option"]
        if entries:
            lines += ["", *entries]
        if also:
            lines += ["", f"Also takes {_join(f'`{param.flags[0]}`' for param in also)}."]
    return "\n".join(lines) + "\n"


def _join(items: Iterable[str]) -> str:
    words = list(items)
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


# -- configuration ----------------------------------------------------------------------------

def config_key(field_name: str) -> str:
    """How `vault-tools/config.yaml` spells a Config field: `budget_lines` is `budget.lines`."""
    for prefix in NESTED_CONFIG_PREFIXES:
        if field_name.startswith(prefix + "_"):
            return f"{prefix}.{field_name[len(prefix) + 1:]}"
    return field_name


def _yaml_value(value: Any) -> str:
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {v}" for k, v in value.items()) + "}"
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, bool):
        return str(value).lower()
    if value == "":
        return '""'
    return str(value)


def config_items() -> list[tuple[str, str, Any, str]]:
    """(field name, config.yaml key, default, meaning) of every setting, in Config's order."""
    defaults = Config()
    return [(f.name, config_key(f.name), getattr(defaults, f.name), CONFIG_DOC.get(f.name, ""))
            for f in fields(Config)]


def config_yaml() -> str:
    """A config.yaml holding every default, nested as the file spells it."""
    lines: list[str] = []
    parents: set[str] = set()
    for _, key, default, _ in config_items():
        if "." in key:
            parent, child = key.split(".", 1)
            if parent not in parents:
                parents.add(parent)
                lines.append(f"{parent}:")
            lines.append(f"  {child}: {_yaml_value(default)}")
        else:
            lines.append(f"{key}: {_yaml_value(default)}")
    return "\n".join(lines) + "\n"


def config_reference() -> str:
    """The configuration reference: a table of keys, then the defaults as a file."""
    lines = ["| key | default | sets |", "|---|---|---|"]
    for _, key, default, meaning in config_items():
        lines.append(f"| `{key}` | `{_yaml_value(default)}` | {_cell(meaning)} |")
    lines += ["", "The same defaults as `vault-tools/config.yaml` spells them:", "", "```yaml",
              config_yaml().rstrip("\n"), "```"]
    return "\n".join(lines) + "\n"


# -- generated sections -----------------------------------------------------------------------

SECTIONS: dict[str, Callable[[], str]] = {
    "commands": commands_reference,
    "config": config_reference,
    "lint-rules": lint.rules_table,
}


def markers(name: str) -> tuple[str, str]:
    return f"<!-- {name}:start -->\n", f"<!-- {name}:end -->"


def sections_in(text: str) -> list[str]:
    """Names of the generated sections whose start marker is in the text, in the order of SECTIONS."""
    return [name for name in SECTIONS if markers(name)[0] in text]


def section(text: str, name: str) -> str | None:
    """What a page's text holds between a section's markers, or None when a marker is missing."""
    start, end = markers(name)
    begin = text.find(start)
    finish = text.find(end, begin + len(start)) if begin >= 0 else -1
    if begin < 0 or finish < 0:
        return None
    return text[begin + len(start):finish]


def replace_section(text: str, name: str, content: str) -> str:
    """Text with a section's content replaced; raises KeyError when its markers are missing."""
    start, end = markers(name)
    begin = text.find(start)
    finish = text.find(end, begin + len(start)) if begin >= 0 else -1
    if begin < 0 or finish < 0:
        raise KeyError(f"lacks the markers {start.strip()} ... {end}")
    return text[:begin + len(start)] + content.rstrip("\n") + "\n" + text[finish:]


def render(text: str, generators: dict[str, Callable[[], str]] | None = None) -> str:
    """The text with every generated section (of `generators`, default all) brought up to date."""
    for name, generate in (SECTIONS if generators is None else generators).items():
        text = replace_section(text, name, generate())
    return text


def stale_sections(text: str, generators: dict[str, Callable[[], str]] | None = None) -> list[str]:
    """Names of the generated sections whose content in the text differs from the code (or is missing)."""
    stale = []
    for name, generate in (SECTIONS if generators is None else generators).items():
        current = section(text, name)
        if current is None or current.strip("\n") != generate().strip("\n"):
            stale.append(name)
    return stale

