"""A vault's config (`config.yaml`): its keys and defaults, reading and checking it, and the checks that need the
vault's folders. Every key has a default; a bad value is refused by every command, naming the file and line.
"""
from __future__ import annotations

import datetime as dt
import hashlib
import json
import re
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from . import __version__, durable, notes
from .dates import zone
from .errors import ConfigError
from .layout import layout_of, relative
from .record_files import CONFIG_FILE, STATE_DIR
from .rule_codes import RULE_CODES

CONFIG_CACHE = "cache/config.json"  # in this device's own folder


@dataclass(frozen=True)
class Config:
    """Every key of `vault-tools/config.yaml`, with its default."""

    timezone: str = "UTC"
    decisions_folder: str = "Decisions"
    pinned_folder: str = "Pinned"
    templates_folder: str = "Templates"
    seal_delay_seconds: float = 120.0  # a float: `seal_delay_seconds: 0.5` is as valid as `120`
    debounce_ms: int = 2000
    stale_after_days: int = 14
    recent_days: int = 30
    reminder_days: int = 7
    budget_lines: int = 200
    budget_bytes: int = 25000
    default_asker: str = "agent"
    default_ruler: str = "owner"
    lint: dict[str, str] = field(default_factory=dict)
    harvest_on_change: bool = False
    review_every_days: int = 0
    project_root: str = ""
    scope_on_read: bool = False

    @property
    def tz(self) -> dt.tzinfo:
        return _zone(self.timezone)


CONFIG_DOC = {
    "timezone": "IANA time zone that dates in notes are written in (set by `init` from this machine)",
    "decisions_folder": "folder where new decision notes are created",
    "pinned_folder": "folder of the generated pages",
    "templates_folder": "Obsidian templates folder, skipped when scanning",
    "seal_delay_seconds": "the sealing delay: quiet time after a note becomes ruled before the watcher seals it "
                          "(`settle_seconds`, its former name, is read too)",
    "debounce_ms": "quiet time after a save before the watcher looks at a note",
    "stale_after_days": "a question open longer than this is marked stale",
    "recent_days": "how long a superseded ruling stays on the decisions log",
    "reminder_days": "a question due within this many days is listed as due soon",
    "budget_lines": "most lines an agent loads (open questions + decisions log)",
    "budget_bytes": "most bytes an agent loads (open questions + decisions log)",
    "default_asker": "`asked_by` when a command does not say",
    "default_ruler": "`ruled_by` when a command or the watcher does not say",
    "lint": "per-rule severity: a mapping of code to error, warning or off",
    "harvest_on_change": "the watcher harvests decisions written in passing from notes as they change",
    "review_every_days": "the watcher writes a review (`vault-tools review`) and the Stats page this often; 0 never",
    "project_root": "folder a ruling's `scope` globs are relative to (absolute, or relative to the vault; empty: the vault)",
    "scope_on_read": "the pre-tool-use hook also adds the rulings governing a file the agent reads",
}


def _zone(name: str) -> dt.tzinfo:
    try:
        return zone(name)
    except ValueError as error:
        raise ConfigError(str(error), path=f"{STATE_DIR}/{CONFIG_FILE}") from None  # (the shared layout's is named by load_config)


def load_config(root: Path) -> Config:
    """The vault's config; taken from the cache while config.yaml's bytes are those it was made from (every
    command reads it, and parsing it means importing a YAML library), else read, checked and cached."""
    layout = layout_of(root)
    path, shown = layout.config_path, layout.config_shown
    if layout.shared and not path.exists() and (root / STATE_DIR / CONFIG_FILE).exists():  # a move cut short
        path, shown = root / STATE_DIR / CONFIG_FILE, f"{STATE_DIR}/{CONFIG_FILE}"
    try:
        raw = path.read_bytes()
    except (FileNotFoundError, NotADirectoryError):
        return Config()
    except OSError as error:
        raise ConfigError(f"cannot read: {error.strerror}", path=shown) from None
    # Keyed by the bytes, not the file's times: an edit within the file system's clock tick is still seen.
    key = [shown, hashlib.sha256(raw).hexdigest()]
    remembered = _configs.get((key[0], key[1]))
    if remembered is not None:
        _zone(remembered.timezone)  # the machine's zone database may have changed since
        return remembered
    cache = root / STATE_DIR / CONFIG_CACHE
    try:
        kept = json.loads(cache.read_bytes())
        if kept["key"] == key and kept["version"] == __version__:
            config = Config(**kept["values"])
            _zone(config.timezone)
            _configs[(key[0], key[1])] = config
            return config
    except (OSError, ValueError, KeyError, TypeError):
        pass
    config = _read_config(raw, shown)
    _configs[(key[0], key[1])] = config
    try:
        durable.write_atomic(cache, json.dumps({"key": key, "version": __version__,
                                              "values": asdict(config)}).encode("utf-8"), derived=True)
    except OSError:
        pass  # derived data: a read-only vault reads its config every time
    return config


_configs: dict[tuple[str, str], Config] = {}  # this process's configs by where they are shown and their digest


# Plain scalars ruamel.yaml (YAML 1.2) may read as another type than text start with one of these.
_NOT_TEXT_FIRST = frozenset("-+.0123456789<=")


# Numbers written so that both parsers read the same value: ruamel.yaml also reads `1_000`, `0b1` or `.5E3`.
_SAME_NUMBER = re.compile(r"[-+]?[0-9]+(?:\.[0-9]+)?")


def _read_the_same(value: str, plain: bool, tag: str) -> bool:
    """Whether a config scalar, as PyYAML with YAML 1.2's core schema resolved it, is what ruamel.yaml makes of
    it: quoted text, text ruamel.yaml too can only read as text, or a number in the form both read alike."""
    if not plain or tag in ("tag:yaml.org,2002:bool", "tag:yaml.org,2002:null"):
        return True  # quoted; or the same words in both (YAML 1.2: `yes` and `on` are text)
    if tag == "tag:yaml.org,2002:str":
        return not value or value[0] not in _NOT_TEXT_FIRST
    return _SAME_NUMBER.fullmatch(value) is not None


def _parse_config(raw: bytes, shown: str) -> tuple[Any, Callable[[str], int]]:
    """The config's values and the line of each top-level key. A config of plain values (nearly every one) is
    read with libyaml, which every command imports anyway; whatever ruamel.yaml could read otherwise (see
    `_quick_config`) by ruamel.yaml, as it always was: importing it costs more than a whole config's read, on
    every command that finds no config in its cache."""
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"cannot read: {exc}", path=shown) from None
    quick = _quick_config(text)
    if quick is not None:
        data, lines = quick
        return data, lines.__getitem__
    return _parse_config_fully(text, shown)


# What libyaml and ruamel.yaml read differently: a `%YAML 1.1` directive changes what words mean; ruamel.yaml
# refuses a tab where libyaml takes it, and a block scalar's header running into a comment (`|# ...`); libyaml
# takes NEL, LS and PS (and a CR alone) for line breaks and skips a BOM anywhere, ruamel.yaml does not; a bare
# `!` tag on an empty value is text to one, nothing to the other.
_READ_OTHERWISE = re.compile("[%\t\x85\u2028\u2029\ufeff!]|[|>][-+0-9]*#|\r(?!\n)")


def _quick_config(text: str) -> tuple[Any, dict[str, int]] | None:
    """The config's values and each top-level key's line, read with libyaml; None where ruamel.yaml could read
    it otherwise (`_READ_OTHERWISE`, a value `_read_the_same` refuses, or a key that is not text, as `1:`,
    which is named by its value)."""
    if _READ_OTHERWISE.search(text):
        return None
    quick = notes.plain_yaml(text, 1, _read_the_same)
    if quick is None or (isinstance(quick[0], dict) and not all(isinstance(key, str) for key in quick[0])):
        return None
    return quick


def _parse_config_fully(text: str, shown: str) -> tuple[Any, Callable[[str], int]]:
    from ruamel.yaml import YAML  # ruamel.yaml only for a config the quick reader cannot read
    from ruamel.yaml.error import MarkedYAMLError, YAMLError

    try:
        data = YAML(typ="rt").load(text)
    except MarkedYAMLError as exc:
        line = exc.problem_mark.line + 1 if exc.problem_mark else None
        raise ConfigError(f"invalid YAML: {exc.problem}", path=shown, line=line) from None
    except YAMLError as exc:
        raise ConfigError(f"cannot read: {exc}", path=shown) from None
    return data, lambda key: int(data.lc.key(key)[0]) + 1


def _read_config(raw: bytes, shown: str) -> Config:
    data, line_of_key = _parse_config(raw, shown)
    if data is None:
        return Config()
    if not hasattr(data, "items"):
        raise ConfigError("must be a mapping of settings", path=shown)

    def line_of(key: str) -> int | None:
        if key in data:
            return line_of_key(key)
        former = next((name for name, now in FORMER_NAMES.items() if now == key and name in data), None)
        if former is not None:
            return line_of_key(former)
        if key.startswith("budget_") and "budget" in data:
            return line_of_key("budget")
        return None

    known = {f.name: f for f in fields(Config)}
    values: dict[str, Any] = {}
    for written, value in data.items():
        line = line_of_key(written)
        key = FORMER_NAMES.get(written, written) if isinstance(written, str) else written
        if key in values or (key != written and key in data):
            raise ConfigError(f"{written} is the former name of {key}: keep one of them", path=shown, line=line)
        if key == "budget" and hasattr(value, "items"):
            for sub, sub_value in value.items():
                if sub not in ("lines", "bytes"):
                    raise ConfigError(f"unknown key budget.{sub} (expected lines, bytes)", path=shown, line=line)
                values[f"budget_{sub}"] = _typed(f"budget.{sub}", sub_value, int, shown, line)
            continue
        if not isinstance(key, str) or key not in known or key.startswith("budget_"):
            raise ConfigError(f"unknown key {key!r} (known: {', '.join(sorted(CONFIG_DOC))}, budget)",
                              path=shown, line=line)
        default = getattr(Config(), key)
        if key == "lint":
            if not hasattr(value, "items") or not all(v in ("error", "warning", "off") for v in value.values()):
                raise ConfigError("lint must map rule codes to error, warning or off", path=shown, line=line)
            values[key] = {str(k): str(v) for k, v in value.items()}
            # every command refuses a code that names no rule, not only `lint`
            unknown = sorted(code for code in values[key] if code not in RULE_CODES)
            if unknown:
                raise ConfigError(f"lint: {unknown[0]!r} names no rule (known: {', '.join(RULE_CODES)})",
                                  path=shown, line=line)
        else:
            values[key] = _typed(key, value, type(default), shown, line)
    for key in FOLDER_KEYS:
        if key in values:
            values[key] = _folder(key, values[key], shown, line_of_key(key))
    for key in NUMBER_LIMITS:
        if key in values:
            _at_least(key, values[key], shown, line_of(key))
    config = Config(**values)
    _check_overlap(config, shown, line_of)
    _zone(config.timezone)  # refuses an unknown zone now, naming the config file
    return config


FOLDER_KEYS = ("decisions_folder", "pinned_folder", "templates_folder")

# Keys read under their former name, as configs written before were (docs/configuration.md says so).
FORMER_NAMES = {"settle_seconds": "seal_delay_seconds"}


# The least each number may be: a negative wait or a budget of nothing is a typo.
NUMBER_LIMITS = {"seal_delay_seconds": 0, "debounce_ms": 0, "stale_after_days": 0, "recent_days": 0,
                 "reminder_days": 0, "budget_lines": 1, "budget_bytes": 1}


def _at_least(key: str, value: float, shown: str, line: int | None) -> None:
    least = NUMBER_LIMITS[key]
    if value < least:
        name = key.replace("budget_", "budget.")
        raise ConfigError(f"{name} must be at least {least}, not {value!r}", path=shown, line=line)


def _folder(key: str, value: str, shown: str, line: int) -> str:
    """A configured folder as a clean vault-relative path; refuses one that leaves the vault or hides notes."""
    text = value.strip().replace("\\", "/")
    if text.startswith("/") or re.match(r"^[A-Za-z]:", text):
        raise ConfigError(f"{key} must be a folder inside the vault, relative to it, not {value!r}",
                          path=shown, line=line)
    parts = [part for part in text.split("/") if part not in ("", ".")]
    if any(part == ".." for part in parts):
        raise ConfigError(f"{key} must stay inside the vault; {value!r} leaves it", path=shown, line=line)
    if any(part.startswith(".") for part in parts):
        raise ConfigError(f"{key} {value!r} is a hidden folder, which vault-tools does not read", path=shown, line=line)
    if not parts and key != "decisions_folder":
        raise ConfigError(f"{key} must name a folder; the whole vault would be skipped", path=shown, line=line)
    return "/".join(parts)


def _inside(folder: str, other: str) -> bool:
    """`folder` is `other` or lies inside it."""
    return other == "" or folder == other or folder.startswith(other + "/")


def _check_overlap(config: Config, shown: str, line_of: Callable[[str], int | None]) -> None:
    """Folders that would hide rulings or mix generated pages with templates are refused."""
    decisions = config.decisions_folder
    for key in ("templates_folder", "pinned_folder"):
        skipped = getattr(config, key)
        if _inside(decisions, skipped):
            raise ConfigError(f"{key} {skipped!r} holds decisions_folder {decisions!r}: every ruling would be "
                              "skipped", path=shown, line=line_of(key) or line_of("decisions_folder"))
    pinned, templates = config.pinned_folder, config.templates_folder
    if _inside(pinned, templates) or _inside(templates, pinned):
        raise ConfigError(f"pinned_folder {pinned!r} and templates_folder {templates!r} overlap",
                          path=shown, line=line_of("pinned_folder") or line_of("templates_folder"))


def check_folders_on_disk(root: Path, config: Config) -> None:
    """A decisions folder reached through a symbolic link would be skipped by the walk (its rulings
    hidden), and a pinned folder linked out of the vault would be written outside it: both refused."""
    shown = f"{STATE_DIR}/{CONFIG_FILE}"
    folder = root
    for part in [p for p in config.decisions_folder.split("/") if p]:
        folder = folder / part
        if folder.is_symlink():
            raise ConfigError(f"decisions_folder {config.decisions_folder!r}: {relative(root, folder)} is a symbolic "
                              "link; vault-tools reads only real folders, so its rulings would be hidden", path=shown)
    pinned = root / config.pinned_folder
    if pinned.exists():
        try:
            pinned.resolve().relative_to(root.resolve())
        except ValueError:
            raise ConfigError(f"pinned_folder {config.pinned_folder!r} leads outside the vault", path=shown) from None


def _typed(key: str, value: Any, kind: type, shown: str, line: int) -> Any:
    if kind is float and isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    if kind is bool:
        if isinstance(value, bool):
            return value
    elif isinstance(value, kind) and not isinstance(value, bool):
        return value
    raise ConfigError(f"{key} must be {kind.__name__}, not {value!r}", path=shown, line=line)
