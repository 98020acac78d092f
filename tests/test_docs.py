"""The documentation (README.md and docs/*.md): the reference pages are generated from the code, the rest
says what the code does, and every link leads somewhere."""
from __future__ import annotations

import configparser
import itertools
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
from vault_tools.cli import record as cli_record
from vault_tools.config import CONFIG_DOC, Config, load_config

from .helpers import REPOSITORY, load_script, page_name

README = REPOSITORY / "README.md"
DOCS = REPOSITORY / "docs"
# Every page of the documentation.
PAGES = [README, *sorted(DOCS.glob("*.md"))]
UPDATE_SCRIPT = REPOSITORY / "scripts" / "update_docs.py"
HOOKS_MANIFEST = REPOSITORY / ".pre-commit-hooks.yaml"

# Arguments that have no help text. New ones fail `test_arguments_have_help`.
ARGUMENTS_WITHOUT_HELP: set[str] = set()


def readme() -> str:
    return README.read_text(encoding="utf-8")


def fences(text: str) -> list[tuple[str, str, int]]:
    """(info, content, first line number) of every fenced block."""
    return [(token.info.strip(), token.content, token.map[0] + 1 if token.map else 0)
            for token in MarkdownIt("commonmark").parse(text) if token.type == "fence"]


def all_fences() -> list[tuple[str, str, int]]:
    """(info, content, first line number) of every fenced block of every page."""
    return [block for path in PAGES for block in fences(path.read_text(encoding="utf-8"))]


def holders(name: str) -> list[Path]:
    """The pages that hold a generated section's start marker."""
    return [path for path in PAGES if name in docs.sections_in(path.read_text(encoding="utf-8"))]


def generated(name: str) -> str:
    """A generated section as the documentation holds it."""
    found = holders(name)
    assert len(found) == 1, f"section {name!r} should be in exactly one page, not {list(map(page_name, found))}"
    text = docs.section(found[0].read_text(encoding="utf-8"), name)
    assert text is not None, f"{page_name(found[0])} lacks the end marker of section {name!r}"
    return text


def _app_commands() -> dict[str, Any]:
    return dict(getattr(typer.main.get_command(cli.app), "commands", {}))


def load_update_script(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    return load_script(UPDATE_SCRIPT, "update_docs", monkeypatch)


# -- the generated sections ------------------------------------------------------------------

@pytest.mark.parametrize("name", list(docs.SECTIONS))
def test_generated_section_is_current(name: str) -> None:
    current = generated(name)
    assert current.strip("\n") == docs.SECTIONS[name]().strip("\n"), (
        f"the {name!r} section of {page_name(holders(name)[0])} is out of date: "
        "run `.venv/bin/python scripts/update_docs.py`")


def test_generators_are_stable(monkeypatch: pytest.MonkeyPatch) -> None:
    first = {name: generate() for name, generate in docs.SECTIONS.items()}
    monkeypatch.setenv("COLUMNS", "37")
    monkeypatch.setenv("TERMINAL_WIDTH", "37")
    assert {name: generate() for name, generate in docs.SECTIONS.items()} == first


def _current_copy(tmp_path: Path) -> dict[str, Path]:
    """Copies of every page, with the generated sections up to date even while the pages themselves are not."""
    copies = {}
    for path in PAGES:
        copy = tmp_path / page_name(path)
        copy.parent.mkdir(parents=True, exist_ok=True)
        text = path.read_text(encoding="utf-8")
        copy.write_text(docs.render(text, {name: docs.SECTIONS[name] for name in docs.sections_in(text)}),
                        encoding="utf-8")
        copies[page_name(path)] = copy
    return copies


def _snapshot(copies: dict[str, Path]) -> dict[str, str]:
    return {name: path.read_text(encoding="utf-8") for name, path in copies.items()}


def _holding(copies: dict[str, Path], name: str) -> Path:
    return next(path for path in copies.values() if name in docs.sections_in(path.read_text(encoding="utf-8")))


def test_update_script_rewrites_only_the_sections(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    script = load_update_script(monkeypatch)
    copies = _current_copy(tmp_path)
    files = [str(path) for path in copies.values()]
    current = _snapshot(copies)
    assert script.main(["--check", *files]) == 0

    commands_page, config_page = _holding(copies, "commands"), _holding(copies, "config")
    commands_page.write_text(docs.replace_section(commands_page.read_text(encoding="utf-8"), "commands",
                                                  "| command | does |\n|---|---|\n| `gone` | old |\n"),
                             encoding="utf-8")
    config_page.write_text(docs.replace_section(config_page.read_text(encoding="utf-8"), "config", ""),
                           encoding="utf-8")
    stale = _snapshot(copies)
    assert script.main(["--check", *files]) == 1
    err = capsys.readouterr().err
    assert f"{commands_page}: section 'commands' is out of date" in err
    assert f"{config_page}: section 'config' is out of date" in err and "lint-rules" not in err
    assert _snapshot(copies) == stale  # --check writes nothing

    assert script.main(files) == 0
    assert _snapshot(copies) == current  # everything outside the markers is kept byte for byte
    assert script.main(files) == 0
    assert "up to date" in capsys.readouterr().out


def test_update_script_refuses_a_page_with_half_a_section(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    script = load_update_script(monkeypatch)
    copies = _current_copy(tmp_path)
    commands_page, config_page = _holding(copies, "commands"), _holding(copies, "config")
    commands_page.write_text(docs.replace_section(commands_page.read_text(encoding="utf-8"), "commands", ""),
                             encoding="utf-8")
    config_page.write_text(config_page.read_text(encoding="utf-8").replace("<!-- config:end -->", ""),
                           encoding="utf-8")
    before = _snapshot(copies)
    assert script.main([str(path) for path in copies.values()]) == 2
    assert "config:end" in capsys.readouterr().err
    assert _snapshot(copies) == before  # not even the stale commands section is written


def test_update_script_wants_each_section_in_exactly_one_page(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    script = load_update_script(monkeypatch)
    copies = _current_copy(tmp_path)
    files = [str(path) for path in copies.values()]
    rules_page = _holding(copies, "lint-rules")
    start, end = docs.markers("lint-rules")
    rules_page.write_text(rules_page.read_text(encoding="utf-8").replace(start, "").replace(end, ""),
                          encoding="utf-8")
    assert script.main(["--check", *files]) == 2
    assert "no file holds the markers <!-- lint-rules:start -->" in capsys.readouterr().err

    copies = _current_copy(tmp_path / "again")
    config = docs.section(_holding(copies, "config").read_text(encoding="utf-8"), "config")
    start, end = docs.markers("config")
    readme_copy = copies["README.md"]
    readme_copy.write_text(f"{readme_copy.read_text(encoding='utf-8')}{start}{config}{end}\n", encoding="utf-8")
    assert script.main([str(path) for path in copies.values()]) == 2
    assert "section 'config' is in more than one file" in capsys.readouterr().err


# -- commands ----------------------------------------------------------------------------------

def test_every_command_is_documented_with_help() -> None:
    reference = "\n" + generated("commands")
    found = docs.commands()
    assert {command.name for command in found} == set(_app_commands())  # none is hidden
    for command in found:
        assert command.help, f"`vault-tools {command.name}` has no help text (its docstring in cli.py)"
        assert f"\n## `vault-tools {command.name}`\n" in reference, (
            f"the command reference does not document {command.name}")


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
    section = generated("config")
    for name in names:
        assert CONFIG_DOC[name].strip(), f"config key {name} has no description in vault.CONFIG_DOC"
        assert f"| `{docs.config_key(name)}` |" in section, (
            f"the configuration reference does not document {docs.config_key(name)}")


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
    """Setting the key as the reference spells it changes that setting and no other."""
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
    lines = cli_record.INIT_SNIPPETS.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(heading))
    block = []
    for line in lines[start + 1:]:
        if not line.startswith("  "):
            break
        block.append(line[2:])
    assert block, f"`vault-tools init` prints nothing under {heading!r}"
    return block


def test_the_readme_shows_the_one_command_per_agent() -> None:
    from vault_tools.agents.instructions import AGENTS
    commands = [content for info, content, _ in fences(readme()) if info == "sh"]
    for agent in AGENTS:
        assert any(f"vault-tools init --agent {agent}" in block for block in commands), agent
    assert "vault-tools init --agent" in cli_record.INIT_SNIPPETS


def _precommit_configs() -> list[dict[str, Any]]:
    configs = []
    for info, content, _ in all_fences():
        if info == "yaml" and content.startswith("repos:"):
            configs.append(yaml.safe_load(content))
    return configs


def test_precommit_hooks_of_the_manifest_are_documented() -> None:
    manifest = yaml.safe_load(HOOKS_MANIFEST.read_text(encoding="utf-8"))
    configs = _precommit_configs()
    remote = [repo for config in configs for repo in config["repos"] if repo["repo"] != "local"]
    local = [repo for config in configs for repo in config["repos"] if repo["repo"] == "local"]
    assert remote and local, "the pages should show both a hook-repository and a `repo: local` configuration"
    remote_ids = {hook["id"] for repo in remote for hook in repo["hooks"]}
    assert remote_ids == {hook["id"] for hook in manifest}
    local_hooks = {hook["id"]: hook for repo in local for hook in repo["hooks"]}
    for hook in manifest:
        shown = local_hooks.get(hook["id"])
        assert shown is not None, f"the repo: local example lacks {hook['id']}"
        assert shown["entry"] == hook["entry"] and shown["language"] == "system"
        assert shown["pass_filenames"] is hook["pass_filenames"]


def test_local_hook_printed_by_init_is_documented() -> None:
    printed = yaml.safe_load("\n".join(_init_snippet("Add to .pre-commit-config.yaml")))
    local_hooks = [hook for config in _precommit_configs() for repo in config["repos"] if repo["repo"] == "local"
                   for hook in repo["hooks"]]
    for hook in printed[0]["hooks"]:
        assert any(hook.items() <= shown.items() for shown in local_hooks), (
            f"`vault-tools init` prints a local hook the pages do not show: {hook}")


def test_documented_precommit_configs_are_valid() -> None:
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
    """The systemd unit, the launchd plist, any agent hook settings and the local pre-commit hooks."""
    blocks = all_fences()
    unit = configparser.RawConfigParser(strict=False)
    unit.optionxform = str  # type: ignore[assignment,method-assign]
    unit.read_string(next(content for info, content, _ in blocks if info == "ini"))
    _parses(shlex.split(unit["Service"]["ExecStart"]))
    plist = plistlib.loads(next(content for info, content, _ in blocks if info == "xml").encode("utf-8"))
    _parses(plist["ProgramArguments"])
    for info, content, _ in blocks:
        if info == "json" and "hooks" in json.loads(content):
            for groups in json.loads(content)["hooks"].values():
                for group in groups:
                    for hook in group["hooks"]:
                        _parses(shlex.split(hook["command"]))
    for config in _precommit_configs():
        for repo in config["repos"]:
            for hook in repo["hooks"]:
                if "entry" in hook:
                    _parses([*shlex.split(hook["entry"]), *hook.get("args", [])])


EXCERPT_SOURCE = re.compile(r"`(example-vault/[^`]+\.md)`")
ELISION = {"...", "…"}


def _excerpts() -> list[tuple[str, str, str]]:
    """(source file, excerpt, page and line) of each block introduced by a line naming an example-vault file."""
    found = []
    for path in PAGES:
        text = path.read_text(encoding="utf-8")
        lines = text.splitlines()
        for info, content, line in fences(text):
            if info not in ("markdown", "yaml"):
                continue
            before = next((lines[i] for i in range(line - 2, -1, -1) if lines[i].strip()), "")
            match = EXCERPT_SOURCE.search(before)
            if match:
                found.append((match.group(1), content, f"{page_name(path)} line {line}"))
    return found


def test_the_pages_quote_the_example_vault() -> None:
    sources = {source for source, _, _ in _excerpts()}
    assert {f"example-vault/Pinned/{name}.md" for name in ("Open questions", "Decisions log", "Decisions archive")} <= sources


@pytest.mark.parametrize("source, excerpt, where", _excerpts(), ids=lambda value: str(value)[:60])
def test_excerpts_are_real(source: str, excerpt: str, where: str) -> None:
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
            pytest.fail(f"{where}: the excerpt of {source} has a line the file lacks "
                        f"(or has out of order): {shown!r}")


def test_performance_section_quotes_a_benchmark_run() -> None:
    """The figures come from `make bench`: the section names the machine and has its tables."""
    found = [(path, docs.section(path.read_text(encoding="utf-8"), "benchmark")) for path in PAGES]
    found = [(path, section) for path, section in found if section is not None]
    assert len(found) == 1, "exactly one page should hold the benchmark markers"
    page, section = found[0]
    assert page.read_text(encoding="utf-8").startswith("# Performance\n")
    assert "make bench" in section and re.search(r"\b\d+ cores\b", section)
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


def anchors(path: Path) -> set[str]:
    """The anchors GitHub gives a page's headings (a repeated heading gets -1, -2...)."""
    tokens = MarkdownIt("commonmark").parse(path.read_text(encoding="utf-8"))
    found: set[str] = set()
    for token, following in itertools.pairwise(tokens):
        if token.type == "heading_open":
            slug = _slug(following.content)
            anchor, count = slug, 0
            while anchor in found:
                count += 1
                anchor = f"{slug}-{count}"
            found.add(anchor)
    return found


def links(path: Path) -> list[tuple[str, int]]:
    """(target, line) of every link and image of a page."""
    found = []
    for token in MarkdownIt("commonmark").parse(path.read_text(encoding="utf-8")):
        for child in token.children or []:
            target = child.attrs.get("href") if child.type == "link_open" else (
                child.attrs.get("src") if child.type == "image" else None)
            if target is not None:
                found.append((str(target), token.map[0] + 1 if token.map else 0))
    return found


EXTERNAL = re.compile(r"^[a-z][a-z0-9+.-]*:", re.IGNORECASE)  # https:, mailto:


def test_relative_links_lead_somewhere() -> None:
    """Every relative link of README.md and docs/*.md names a file that exists and, for a page, a heading it has."""
    broken = []
    for page in PAGES:
        for target, line in links(page):
            if EXTERNAL.match(target):
                continue
            file, _, anchor = target.partition("#")
            destination = (page.parent / file).resolve() if file else page
            if not destination.exists():
                broken.append(f"{page_name(page)} line {line}: {target} (no such file)")
            elif anchor and destination.suffix == ".md" and anchor not in anchors(destination):
                broken.append(f"{page_name(page)} line {line}: {target} (no such heading)")
    assert not broken, "links that lead nowhere:\n" + "\n".join(broken)


def test_every_page_is_linked_from_the_readme_or_the_index() -> None:
    index = DOCS / "README.md"
    linked = {(start.parent / target.partition("#")[0]).resolve() for start in (README, index)
              for target, _ in links(start) if not EXTERNAL.match(target) and not target.startswith("#")}
    assert index.resolve() in linked, "README.md does not link to the documentation index, docs/README.md"
    orphans = [page_name(page) for page in PAGES[1:] if page != index and page.resolve() not in linked]
    assert not orphans, f"pages no reader can find from README.md or docs/README.md: {orphans}"
