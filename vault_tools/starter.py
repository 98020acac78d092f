"""The starter kit: Obsidian templates for decision notes, installed into a vault.

The templates live in the package (`vault_tools/templates/`), so the wheel carries them, and are
written for Obsidian's core Templates plugin (`{{date}}`, `{{time}}`,
`{{title}}`). Every template value is quoted, so the frontmatter is valid YAML
before the plugin fills it in.

A template says `type: decision` but is not one, so it must live in the folder
the vault loader skips (`templates_folder` in `vault-tools/config.yaml`).
Installing refuses to put templates anywhere the loader would read them as
decision notes.
"""
from __future__ import annotations

import json
import unicodedata
from importlib import resources
from pathlib import Path

from . import durable
from .config import load_config
from .errors import ConfigError
from .layout import relative
from .page_names import BASE_FILE, CURRENT_RULINGS_VIEW, HISTORY_VIEW, OPEN_QUESTIONS_VIEW, RECENT_VIEW
from .record_files import CONFIG_FILE, RECORD_DIR, STATE_DIR
from .vault_walk import iter_markdown

TEMPLATE_NAMES = ("Decision.md", "Question.md")
OBSIDIAN_TEMPLATES_SETTINGS = ".obsidian/templates.json"


def packaged_templates() -> dict[str, str]:
    """The templates shipped with vault-tools, by file name."""
    folder = resources.files("vault_tools.templates")
    return {name: (folder / name).read_text(encoding="utf-8") for name in TEMPLATE_NAMES}


def _clean_folder(value: str) -> str:
    return unicodedata.normalize("NFC", value.strip().replace("\\", "/").strip("/"))


def obsidian_templates_folder(root: Path) -> str | None:
    """The folder set in Obsidian's Templates plugin settings, or None when it is not set."""
    path = root / OBSIDIAN_TEMPLATES_SETTINGS
    try:
        data = json.loads(path.read_text(encoding="utf-8-sig"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as error:
        raise ConfigError(f"cannot read Obsidian's Templates settings: {error}",
                          path=OBSIDIAN_TEMPLATES_SETTINGS) from None
    folder = data.get("folder") if isinstance(data, dict) else None
    if not isinstance(folder, str) or not _clean_folder(folder):
        return None
    return _clean_folder(folder)


def templates_folder(root: Path) -> str:
    """Where templates go: Obsidian's Templates folder when set, else `templates_folder` from the config."""
    return obsidian_templates_folder(root) or _clean_folder(load_config(root).templates_folder)


def install_templates(root: Path) -> list[str]:
    """Copy the Decision and Question templates into the vault's templates folder.

    Never overwrites a file that exists. Returns the vault-relative paths it created.
    Raises ConfigError, writing nothing, when vault-tools would read the templates
    as decision notes there (Obsidian's folder is not the one the config skips).
    """
    config = load_config(root)
    folder_name = templates_folder(root)
    skipped = _clean_folder(config.templates_folder)
    if folder_name != skipped:
        raise ConfigError(
            f"Obsidian's templates folder is {folder_name!r}, but vault-tools skips {skipped!r}; set "
            f"`templates_folder: {folder_name}` in {STATE_DIR}/{CONFIG_FILE} so templates are not read as decisions",
            path=f"{STATE_DIR}/{CONFIG_FILE}")
    if ".." in Path(folder_name).parts:
        raise ConfigError(f"templates folder {folder_name!r} is outside the vault", path=OBSIDIAN_TEMPLATES_SETTINGS)
    folder = root / folder_name
    missing_folders = [p for p in (folder, *folder.parents) if p != root and root in p.parents and not p.exists()]
    created: list[Path] = []
    for name, text in packaged_templates().items():
        target = folder / name
        if target.exists():
            continue
        durable.create_note(target, text)
        created.append(target)
    scanned = {root / rel for rel, _ in iter_markdown(root, config)} if created else set()
    read_as_notes = set(created) & scanned
    if read_as_notes:
        _remove(created, missing_folders)
        raise ConfigError(
            f"vault-tools would read the templates in {folder_name!r} as decision notes; set "
            f"`templates_folder: {folder_name}` in {STATE_DIR}/{CONFIG_FILE}",
            path=OBSIDIAN_TEMPLATES_SETTINGS)
    return [relative(root, path) for path in created]


def _remove(files: list[Path], folders: list[Path]) -> None:
    for path in files:
        path.unlink(missing_ok=True)
    for folder in folders:  # innermost first
        try:
            folder.rmdir()
        except OSError:
            pass


def decisions_base(templates_folder: str, record_folders: tuple[str, ...]) -> str:
    """The Obsidian base (`.base`, Obsidian 1.9+) of the decision notes: YAML, in the documented syntax (filters,
    properties, views; see docs/obsidian-bases.md). Decision notes are chosen by their properties wherever they
    are; the templates folder and the record's own folders (kept copies) are left out, as the pages leave them."""

    def expression(text: str) -> str:  # a filter expression as a single-quoted YAML scalar
        return "'" + text.replace("'", "''") + "'"

    left_out = [f"file.inFolder({json.dumps(folder)})" for folder in (templates_folder, *record_folders) if folder]
    lines = [
        "# The decision record as live tables (Obsidian Bases, Obsidian 1.9 or later). Written once by",
        "# `vault-tools init`; yours from then on: vault-tools never writes it again. For a fresh copy, rename or",
        "# delete it and run `vault-tools init --templates`. A cell edited here is a property edited in the note.",
        "filters:", "  and:", "    - " + expression('type == "decision"'), "    - not:",
        *(f"        - {expression(item)}" for item in left_out),
        "properties:",
        *(f"  {name}:\n    displayName: {json.dumps(shown)}" for name, shown in (
            ("summary", "Summary"), ("status", "Status"), ("topics", "Topics"), ("due", "Due"),
            ("asked_at", "Asked"), ("ruled_at", "Ruled"), ("revisit_by", "Revisit by"), ("reason", "Reason"),
            ("superseded_by", "Superseded by"))),
        "views:",
    ]
    views = [
        (OPEN_QUESTIONS_VIEW, 'status == "open"', None, ["summary", "topics", "due", "asked_at"],
         [("note.due", "ASC"), ("note.asked_at", "ASC")], None),
        (CURRENT_RULINGS_VIEW, 'status == "ruled"', "note.topics", ["summary", "ruled_at", "revisit_by"],
         [("note.ruled_at", "DESC")], None),
        (RECENT_VIEW, 'status != "open"', None, ["status", "summary", "reason", "file.mtime"],
         [("file.mtime", "DESC")], 50),
        (HISTORY_VIEW, None, "note.status", ["summary", "topics", "ruled_at", "superseded_by", "reason"],
         [("file.name", "DESC")], None),
    ]
    for name, only, group, columns, sort, limit in views:
        lines += ["  - type: table", f"    name: {json.dumps(name)}"]
        if only:
            lines += ["    filters:", "      and:", f"        - {expression(only)}"]
        if group:
            lines += ["    groupBy:", f"      property: {group}", "      direction: ASC"]
        lines += ["    order:", "      - file.name",
                  *(f"      - {column if column.startswith('file.') else 'note.' + column}" for column in columns)]
        lines += ["    sort:", *(f"      - property: {prop}\n        direction: {way}" for prop, way in sort)]
        if limit:
            lines.append(f"    limit: {limit}")
    return "\n".join(lines) + "\n"


def install_base(root: Path) -> tuple[str, bool]:
    """Write the decisions base into the pinned folder unless a file is there: (its vault-relative path, whether
    it was written). The owner's once written, so never overwritten."""
    config = load_config(root)
    target = root / config.pinned_folder / BASE_FILE
    shown = relative(root, target)
    if target.exists() or target.is_symlink():
        return shown, False
    durable.write_atomic(target, decisions_base(_clean_folder(config.templates_folder),
                                                (RECORD_DIR, STATE_DIR)).encode("utf-8"))
    return shown, True
