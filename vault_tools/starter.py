"""The starter kit: Obsidian templates for decision notes, installed into a vault.

The templates live in the repository's `templates/` folder, ship in the wheel as
`vault_tools.templates`, and are
written for Obsidian's core Templates plugin (`{{date}}`, `{{time}}`,
`{{title}}`). Every template value is quoted, so the frontmatter is valid YAML
before the plugin fills it in.

A template says `type: decision` but is not one, so it must live in the folder
the vault loader skips (`templates_folder` in `.vault-tools/config.yaml`).
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
from .record_files import CONFIG_FILE, STATE_DIR
from .vault import iter_markdown

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
