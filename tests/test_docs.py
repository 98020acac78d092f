"""README.md's reference parts are generated from the code, and the rest says what the code does."""
from __future__ import annotations

import configparser
import json
import plistlib
import re
import shlex
from dataclasses import fields
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import typer
import yaml
from markdown_it import MarkdownIt

from vault_tools import cli, docs
from vault_tools.vault import CONFIG_DOC, Config, load_config

from .conftest import load_script

REPOSITORY = Path(__file__).resolve().parents[1]
README = REPOSITORY / "README.md"
UPDATE_SCRIPT = REPOSITORY / "scripts" / "update_readme.py"
HOOKS_MANIFEST = REPOSITORY / ".pre-commit-hooks.yaml"

# Arguments that have no help text. New ones fail `test_arguments_have_help`.
ARGUMENTS_WITHOUT_HELP: set[str] = set()


def readme() -> str:
    return README.read_text(encoding="utf-8")


def fences(text: str) -> list[tuple[str, str, int]]:
    """(info, content, first line number) of every fenced block."""
    return [(token.info.strip(), token.content, token.map[0] + 1 if token.map else 0)
            for token in MarkdownIt("commonmark").parse(text) if token.type == "fence"]


def _app_commands() -> dict[str, Any]:
    return dict(getattr(typer.main.get_command(cli.app), "commands", {}))


def load_update_script(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    return load_script(UPDATE_SCRIPT, "update_readme", monkeypatch)


# -- the generated sections ------------------------------------------------------------------

@pytest.mark.parametrize("name", list(docs.SECTIONS))
def test_generated_section_is_current(name: str) -> None:
    text = readme()
    start, end = docs.markers(name)
    assert docs.section(text, name) is not None, f"README.md lacks the markers {start.strip()} ... {end}"
    assert name not in docs.stale_sections(text, {name: docs.SECTIONS[name]}), (
        f"README.md's {name!r} section is out of date: run `.venv/bin/python scripts/update_readme.py`")


def test_generators_are_stable(monkeypatch: pytest.MonkeyPatch) -> None:
    first = {name: generate() for name, generate in docs.SECTIONS.items()}
    monkeypatch.setenv("COLUMNS", "37")
    monkeypatch.setenv("TERMINAL_WIDTH", "37")
    assert {name: generate() for name, generate in docs.SECTIONS.items()} == first


def test_update_script_rewrites_only_the_sections(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    script = load_update_script(monkeypatch)
    current = docs.render(readme())  # up to date even while README.md itself is not
    copy = tmp_path / "README.md"
    copy.write_text(current, encoding="utf-8")
    assert script.main(["--check", "--readme", str(copy)]) == 0

    stale = docs.replace_section(current, "commands", "| command | does |\n|---|---|\n| `gone` | old |\n")
    stale = docs.replace_section(stale, "config", "")
    copy.write_text(stale, encoding="utf-8")
    assert script.main(["--check", "--readme", str(copy)]) == 1
    err = capsys.readouterr().err
    assert "'commands' is out of date" in err and "'config' is out of date" in err and "lint-rules" not in err
    assert copy.read_text(encoding="utf-8") == stale  # --check writes nothing

    assert script.main(["--readme", str(copy)]) == 0
    assert copy.read_text(encoding="utf-8") == current
    assert script.main(["--readme", str(copy)]) == 0
    assert "up to date" in capsys.readouterr().out


def test_update_script_refuses_a_readme_without_markers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    script = load_update_script(monkeypatch)
    copy = tmp_path / "README.md"
    copy.write_text(readme().replace("<!-- config:end -->", ""), encoding="utf-8")
    assert script.main(["--readme", str(copy)]) == 2
    assert "config:end" in capsys.readouterr().err


# -- commands ----------------------------------------------------------------------------------

def test_every_command_is_in_the_readme_with_help() -> None:
    text = readme()
    found = docs.commands()
    assert {command.name for command in found} == set(_app_commands())  # none is hidden
    for command in found:
        assert command.help, f"`vault-tools {command.name}` has no help text (its docstring in cli.py)"
        assert f"#### `vault-tools {command.name}`" in text, f"README.md does not document {command.name}"


def test_every_option_has_help() -> None:
    missing = [f"{command.name} {param.flags[0]}" for command in docs.commands()
               for param in command.params if param.kind == "option" and not param.help]
    assert not missing, f"options without a help text in cli.py: {missing}"


def test_arguments_have_help() -> None:
    missing = {f"{command.name} {param.usage()}" for command in docs.commands()
               for param in command.params if param.kind == "argument" and not param.help}
    assert missing <= ARGUMENTS_WITHOUT_HELP, f"arguments without a help text in cli.py: {missing - ARGUMENTS_WITHOUT_HELP}"


def test_usage_lines_are_what_the_commands_accept() -> None:
    usage = {command.name: command.usage() for command in docs.commands()}
    assert usage["ask"] == "vault-tools ask SUMMARY --topic TOPIC [OPTIONS]"
    assert usage["seal"] == "vault-tools seal [ID...] [OPTIONS]"
    assert usage["lookup"] == "vault-tools lookup TOPIC... [OPTIONS]"
    assert usage["version"] == "vault-tools version"


# -- configuration -------------------------------------------------------------------------------

def test_every_config_key_is_documented() -> None:
    names = [f.name for f in fields(Config)]
    assert set(CONFIG_DOC) == set(names), "vault.CONFIG_DOC and vault.Config list different keys"
    section = docs.section(readme(), "config") or ""
    for name in names:
        assert CONFIG_DOC[name].strip(), f"config key {name} has no description in vault.CONFIG_DOC"
        assert f"| `{docs.config_key(name)}` |" in section, f"README.md does not document {docs.config_key(name)}"


def test_the_documented_config_file_loads_to_the_defaults(tmp_path: Path) -> None:
    (tmp_path / ".vault-tools").mkdir()
    (tmp_path / ".vault-tools" / "config.yaml").write_text(docs.config_yaml(), encoding="utf-8")
    assert load_config(tmp_path) == Config()


def _other_value(name: str, default: Any) -> Any:
    if name == "timezone":
        return "Europe/Lisbon"
    if isinstance(default, dict):
        return {"VT043": "off"}
    if isinstance(default, bool):
        return not default
    if isinstance(default, (int, float)):
        return default + 1
    return f"{default}-other"


@pytest.mark.parametrize("name", [f.name for f in fields(Config)])
def test_each_config_key_is_spelt_as_config_yaml_reads_it(tmp_path: Path, name: str) -> None:
    """Setting the key as the README spells it changes that setting and no other."""
    default = getattr(Config(), name)
    value = _other_value(name, default)
    key = docs.config_key(name)
    if "." in key:
        parent, child = key.split(".", 1)
        data: dict[str, Any] = {parent: {child: value}}
    else:
        data = {key: value}
    (tmp_path / ".vault-tools").mkdir()
    (tmp_path / ".vault-tools" / "config.yaml").write_text(yaml.safe_dump(data), encoding="utf-8")
    loaded = load_config(tmp_path)
    assert getattr(loaded, name) == value
    assert [f.name for f in fields(Config) if getattr(loaded, f.name) != getattr(Config(), f.name)] == [name]


# -- the hand-written parts that repeat what the code says ---------------------------------------

def _init_snippet(heading: str) -> list[str]:
    """The indented lines under one heading of what `vault-tools init` prints."""
    lines = cli.INIT_SNIPPETS.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(heading))
    block = []
    for line in lines[start + 1:]:
        if not line.startswith("  "):
            break
        block.append(line[2:])
    assert block, f"`vault-tools init` prints nothing under {heading!r}"
    return block


def test_agent_instructions_are_what_init_prints() -> None:
    blocks = [content for info, content, _ in fences(readme()) if info == "markdown"]
    expected = "\n".join(_init_snippet("Add to CLAUDE.md")) + "\n"
    assert expected in blocks, "README.md's CLAUDE.md / AGENTS.md snippet differs from what `vault-tools init` prints"


def test_session_start_hook_is_what_init_prints() -> None:
    printed = json.loads("\n".join(_init_snippet("Or load it at every session start")))
    shown = [json.loads(content) for info, content, _ in fences(readme()) if info == "json"]
    assert printed in shown, "README.md's SessionStart hook differs from what `vault-tools init` prints"


def _precommit_configs() -> list[dict[str, Any]]:
    configs = []
    for info, content, _ in fences(readme()):
        if info == "yaml" and content.startswith("repos:"):
            configs.append(yaml.safe_load(content))
    return configs


def test_precommit_hooks_of_the_manifest_are_documented() -> None:
    manifest = yaml.safe_load(HOOKS_MANIFEST.read_text(encoding="utf-8"))
    configs = _precommit_configs()
    remote = [repo for config in configs for repo in config["repos"] if repo["repo"] != "local"]
    local = [repo for config in configs for repo in config["repos"] if repo["repo"] == "local"]
    assert remote and local, "README.md should show both a hook-repository and a `repo: local` configuration"
    remote_ids = {hook["id"] for repo in remote for hook in repo["hooks"]}
    assert remote_ids == {hook["id"] for hook in manifest}
    local_hooks = {hook["id"]: hook for repo in local for hook in repo["hooks"]}
    for hook in manifest:
        shown = local_hooks.get(hook["id"])
        assert shown is not None, f"the repo: local example lacks {hook['id']}"
        assert shown["entry"] == hook["entry"] and shown["language"] == "system"
        assert shown["pass_filenames"] is hook["pass_filenames"]


def test_local_hook_printed_by_init_is_in_the_readme() -> None:
    printed = yaml.safe_load("\n".join(_init_snippet("Add to .pre-commit-config.yaml")))
    local_hooks = [hook for config in _precommit_configs() for repo in config["repos"] if repo["repo"] == "local"
                   for hook in repo["hooks"]]
    for hook in printed[0]["hooks"]:
        assert any(hook.items() <= shown.items() for shown in local_hooks), (
            f"`vault-tools init` prints a local hook README.md does not show: {hook}")


def test_readme_precommit_configs_are_valid() -> None:
    from cfgv import validate
    from pre_commit.clientlib import CONFIG_SCHEMA

    for config in _precommit_configs():
        validate(config, CONFIG_SCHEMA)


def _parses(argv: list[str]) -> None:
    """`vault-tools ARGV` names a real command with options it takes (parsed, not run)."""
    assert Path(argv[0]).name in ("vault-tools", "vault-tools.exe"), argv
    command = _app_commands().get(argv[1])
    assert command is not None, f"no command {argv[1]!r}: {argv}"
    command.make_context(argv[1], list(argv[2:]))


def test_commands_in_the_setup_examples_are_real() -> None:
    """The systemd unit, the launchd plist, the SessionStart hook and the local pre-commit hooks."""
    blocks = fences(readme())
    unit = configparser.RawConfigParser(strict=False)
    unit.optionxform = str  # type: ignore[assignment,method-assign]
    unit.read_string(next(content for info, content, _ in blocks if info == "ini"))
    _parses(shlex.split(unit["Service"]["ExecStart"]))
    plist = plistlib.loads(next(content for info, content, _ in blocks if info == "xml").encode("utf-8"))
    _parses(plist["ProgramArguments"])
    for info, content, _ in blocks:
        if info == "json":
            for group in json.loads(content)["hooks"]["SessionStart"]:
                for hook in group["hooks"]:
                    _parses(shlex.split(hook["command"]))
    for config in _precommit_configs():
        for repo in config["repos"]:
            for hook in repo["hooks"]:
                if "entry" in hook:
                    _parses([*shlex.split(hook["entry"]), *hook.get("args", [])])


EXCERPT_SOURCE = re.compile(r"`(example-vault/[^`]+\.md)`")
ELISION = {"...", "…"}


def _excerpts() -> list[tuple[str, str, int]]:
    """(source file, excerpt, README line) of each block introduced by a line naming an example-vault file."""
    text = readme()
    lines = text.splitlines()
    found = []
    for info, content, line in fences(text):
        if info not in ("markdown", "yaml"):
            continue
        before = next((lines[i] for i in range(line - 2, -1, -1) if lines[i].strip()), "")
        match = EXCERPT_SOURCE.search(before)
        if match:
            found.append((match.group(1), content, line))
    return found


def test_readme_quotes_the_example_vault() -> None:
    sources = {source for source, _, _ in _excerpts()}
    assert {f"example-vault/Pinned/{name}.md" for name in ("Open questions", "Decisions log", "Decisions archive")} <= sources


@pytest.mark.parametrize("source, excerpt, line", _excerpts(), ids=lambda value: str(value)[:60])
def test_excerpts_are_real(source: str, excerpt: str, line: int) -> None:
    """Every line of the excerpt is in the file, in the same order ("..." marks what was left out)."""
    actual = [text.rstrip() for text in (REPOSITORY / source).read_text(encoding="utf-8").splitlines()]
    position = 0
    for shown in excerpt.splitlines():
        shown = shown.rstrip()
        if not shown or shown in ELISION:
            continue
        try:
            position = actual.index(shown, position) + 1
        except ValueError:
            pytest.fail(f"README.md line {line}: the excerpt of {source} has a line the file lacks "
                        f"(or has out of order): {shown!r}")


def test_performance_section_quotes_a_benchmark_run() -> None:
    """The figures come from `make bench`: the section names the machine and has its tables."""
    text = readme()
    assert "\n## Performance\n" in text
    section = docs.section(text, "benchmark")
    assert section is not None, "README.md lacks the benchmark markers"
    assert "make bench" in section and "2 cores" in section
    assert "| measurement | seconds | x floor | x baseline | peak RSS MB |" in section
    for row in ("floor: read every note", "baseline: frontmatter.load loop", "build, warm, nothing changed",
                "watcher: save to page, after debounce: median"):
        assert f"| {row} |" in section, row


def test_the_set_up_commands_come_first() -> None:
    text = readme()
    first_heading = text.index("\n## ")
    assert "make demo" in text[:first_heading] and "make test" in text[:first_heading]


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading's text."""
    text = heading.replace("`", "").strip().lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def test_links_inside_the_readme_lead_somewhere() -> None:
    tokens = MarkdownIt("commonmark").parse(readme())
    anchors: set[str] = set()
    for token, following in zip(tokens, tokens[1:]):
        if token.type == "heading_open":
            slug = _slug(following.content)
            anchor, count = slug, 0
            while anchor in anchors:
                count += 1
                anchor = f"{slug}-{count}"
            anchors.add(anchor)
    links = set(re.findall(r"\]\(#([^)]+)\)", readme()))
    assert links, "README.md has no table of contents"
    assert not links - anchors, f"README.md links to headings that do not exist: {sorted(links - anchors)}"
