"""The front door: `build`, `context` and `lint` answered without importing the parser, exactly as the parser
would answer them."""
from __future__ import annotations

import io
import json
import os
import re
import shutil
import subprocess
import sys

import pytest
import typer

from vault_tools import cli
from vault_tools.launch import QUICK, REPEATABLE, REQUIRED_OPTIONS, quick_arguments

from .helpers import decision, ledger_events, ledger_file, snapshot, vt, write

FOOTER_R = "Every article footer carries the newsletter link and the author bio."


@pytest.mark.parametrize("name", sorted(QUICK))
def test_the_quick_commands_take_exactly_the_parameters_the_parser_declares(name):
    command = typer.main.get_command(cli.app).commands[name]  # type: ignore[attr-defined]
    flags, options, positional = QUICK[name]
    options_declared = [p for p in command.params if p.param_type_name == "option"]
    assert not any(p.secondary_opts for p in options_declared)  # no --x/--no-x pairs: the table has none
    declared_flags = {opt: p.name for p in options_declared if p.is_flag for opt in p.opts}
    declared_options = {opt: p.name for p in options_declared if not p.is_flag for opt in p.opts}
    arguments = [p.name for p in command.params if p.param_type_name == "argument"]
    assert flags == declared_flags and options == declared_options
    assert arguments == ([positional] if positional else [])
    assert {p.name for p in options_declared if p.multiple} == REPEATABLE & set(options.values())
    assert {p.name for p in options_declared if p.required} == REQUIRED_OPTIONS.get(name, set())


@pytest.mark.parametrize("args", [
    ["build", "--help"], ["build", "--vault"], ["build", "--vault", ""], ["build", "--vault", "--json"],
    ["build", "--json", "--json"], ["build", "--vault", "a", "--vault", "b"], ["build", "extra"],
    ["build", "--check=yes"], ["context", "--budget="], ["lint", "--", "note.md"], ["lint", "-h"],
    ["version"], ["lookup"], ["lookup", "--full", "--full", "x"], ["show"], ["show", "D-0001", "D-0002"],
    ["search", "x", "--limit", "many"], ["search", "x", "--limit=-3"], ["search", "--limit", "3"], [],
    ["ask", "--topic", "t"], ["ask", "Should we?"], ["ask", "Q?", "-t=t"], ["ask", "Q?", "R?", "-t", "t"],
    ["ask", "Q?", "-t", "t", "--by", "a", "--by", "b"], ["rule", "--topic", "t"], ["rule", "A", "B", "--summary", "S"],
    ["rule", "--summary", "S", "--alongside-all=yes"], ["rule", "--summary", "--json"],
])
def test_anything_not_plainly_theirs_goes_to_the_parser(args):
    assert quick_arguments(args) is None


def test_plain_arguments_are_read_as_the_parser_reads_them():
    assert quick_arguments(["lint", "a.md", "--strict", "--format=github", "Notes/b.md", "--vault", "V"]) == (
        "lint", {"paths": ["a.md", "Notes/b.md"], "strict": True, "format_": "github", "vault": "V"})
    assert quick_arguments(["context", "--hook", "--budget", "claude-hook"]) == (
        "context", {"hook": True, "budget": "claude-hook"})
    assert quick_arguments(["show", "D-0007", "--json"]) == ("show", {"decision_id": "D-0007", "json_": True})
    assert quick_arguments(["lookup", "article-footer", "pricing", "--full"]) == (
        "lookup", {"topics": ["article-footer", "pricing"], "full": True})
    assert quick_arguments(["search", "footer", "link", "--limit", "3", "--history"]) == (
        "search", {"query": ["footer", "link"], "limit": 3, "history": True})
    assert quick_arguments(["ask", "Should we?", "-t", "a", "--topic=b", "--not-the-same", "D-0001", "--body", "-"]) == (
        "ask", {"summary": "Should we?", "topic": ["a", "b"], "not_the_same": ["D-0001"], "body": "-"})
    assert quick_arguments(["rule", "D-0002", "--summary", "S", "--supersedes", "D-0001", "--alongside-all"]) == (
        "rule", {"decision_id": "D-0002", "summary": "S", "supersedes": ["D-0001"], "alongside_all": True})


@pytest.mark.parametrize("command", [["context"], ["show", "D-0001"], ["lookup", "article-footer"],
                                     ["search", "footer"], ["ask", "Should the blog keep its comments open?", "-t",
                                                            "blog-comments"],
                                     ["rule", "--topic", "blog-images", "--summary", "Articles use only our own "
                                      "images.", "--source", "chat"]])
def test_a_quick_command_never_imports_the_parser(vault, command):
    assert vt("rule", "--topic", "article-footer", "--summary", FOOTER_R, "--source", "chat", cwd=vault).code == 0
    code = (f"import sys\nfrom vault_tools.launch import main\nsys.argv = ['vault-tools', *{command!r}, '--vault', "
            f"{str(vault)!r}]\ntry:\n    main()\nexcept SystemExit as exit_:\n    assert exit_.code == 0, exit_.code\n"
            "print(sorted(name for name in sys.modules if name.split('.')[0] in ('typer', 'click', 'rich')))")
    found = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert found.returncode == 0, found.stderr
    assert found.stdout.splitlines()[-1] == "[]"


@pytest.mark.parametrize("command", [["version"], ["hook", "claude", "pre-tool-use"]])
def test_version_and_a_hook_load_nothing_that_looks_for_a_resident_process(vault, command):
    """Only the agent's commands may be answered by the watcher's resident process: `version` (the start-up every
    figure is compared with) and the hooks (every tool call) load nothing that looks for one."""
    code = (f"import sys\nfrom vault_tools.launch import main\nsys.argv = ['vault-tools', *{command!r}]\ntry:\n"
            f"    main()\nexcept SystemExit as exit_:\n    assert exit_.code == 0, exit_.code\n"
            f"print(sorted(name for name in ('vault_tools.resident_address', 'vault_tools.resident') "
            f"if name in sys.modules))")
    call = json.dumps({"cwd": str(vault), "tool_name": "Bash", "tool_input": {"command": "ls"}})
    found = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, input=call,
                           cwd=vault)
    assert found.returncode == 0, found.stderr
    assert found.stdout.splitlines()[-1] == "[]"


@pytest.mark.parametrize("command", [["show", "D-0001"], ["lookup", "article-footer"], ["search", "footer"]])
def test_a_reading_command_loads_neither_the_recording_commands_nor_the_page_builder(vault, command):
    """What a reader started on its own imports is what it reads with: not `ask` and `rule` (`recording`), nor the
    page builder with the agent's view and the held answers (`commands/page_inputs` holds what readers share)."""
    assert vt("rule", "--topic", "article-footer", "--summary", FOOTER_R, "--source", "chat", cwd=vault).code == 0
    heavy = ("vault_tools.commands.ask", "vault_tools.commands.rule", "vault_tools.commands.build",
             "vault_tools.agent_view", "vault_tools.commands.held", "filelock")
    code = (f"import sys\nfrom vault_tools.launch import main\nsys.argv = ['vault-tools', *{command!r}, '--vault', "
            f"{str(vault)!r}]\ntry:\n    main()\nexcept SystemExit as exit_:\n    assert exit_.code == 0, exit_.code\n"
            f"print(sorted(name for name in {heavy!r} if name in sys.modules))")
    found = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                           env={**os.environ, "VAULT_TOOLS_NO_RESIDENT": "1"})
    assert found.returncode == 0, found.stderr
    assert found.stdout.splitlines()[-1] == "[]"


def test_the_quick_answers_are_the_parsers_answers(cli, vault, monkeypatch):
    """The same commands, through the front door (a process of their own) and through the parser (in this one)."""
    monkeypatch.chdir(vault)  # paths in `--format github` are relative to where the command runs
    assert cli("rule", "--topic", "article-footer", "--summary", FOOTER_R, "--source", "chat").code == 0
    decision(vault, 2, "ruled", ("newsletter-footer",))  # not sealed, and lacking a source: findings to report
    for args in (["context", "--json"], ["context", "--budget", "memory-file"], ["build", "--check"],
                 ["lint", "--format", "github"], ["lint", "--json", "--strict"], ["build", "--today", "someday"],
                 ["show", "D-0001"], ["show", "D-0001", "--json", "--all"], ["show", "D-0099"], ["show", "nonsense"],
                 ["lookup", "article-footer"], ["lookup", "article-footer", "newsletter-footer", "--json", "--full"],
                 ["lookup", "nothing-here"], ["lookup", "footer", "link"], ["search", "footer"],
                 ["search", "footer", "--history", "--limit", "1", "--json"], ["search", "zzzz"]):
        parsed = cli(*args)
        quick = vt(*args, cwd=vault)
        assert (quick.code, quick.out, quick.err) == (parsed.code, parsed.out, parsed.err), args


def test_ask_and_rule_without_the_parser_answer_and_write_as_through_it(cli, vault, tmp_path, monkeypatch):
    """Each `ask` and `rule` run on two copies of one vault, through the parser (in this process) on one and the
    front door (a process of its own) on the other: the same exit code, output and notes written (but for the
    clock's seconds)."""
    def same(text: str) -> str:  # the copy is another device's folder: in the shared layout its tag is its own
        text = re.sub(r"\b(D-\d+)-[0-9a-z]{4}\b", r"\1", text.replace(str(twin), str(vault)))
        text = re.sub(r"\b(D\d+)[0-9a-z]{4}\b", r"\1", text)  # the id as a mermaid node is named
        return re.sub(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d", "<time>", text)

    assert cli("rule", "--topic", "article-footer", "--summary", FOOTER_R, "--source", "chat").code == 0
    twin = tmp_path / "twin"
    shutil.copytree(vault, twin)
    body = "The readers asked twice this month.\n"
    for args in (
            ["ask", "Should the blog keep its comments open for readers?", "-t", "blog-comments", "--due",
             "2026-12-31", "--body", "-"],
            ["ask", "Should every article footer carry the newsletter link?", "--topic", "article-footer"],
            ["ask", "Should the articles footers carry the newsletter link?", "--topic", "newsletter", "--json"],
            ["rule", "D-0002", "--summary", "Blog comments stay closed; readers reply by email.", "--source", "chat",
             "--ruled-at", "2026-05-02T10:00:00", "--json"],
            ["rule", "--topic", "article-footer", "--summary", "Article footers carry only the newsletter link.",
             "--source", "chat"],
            ["rule", "--topic", "article-footer", "--topic=footer", "--summary", "Article footers carry only the "
             "newsletter link.", "--supersedes", "D-0001", "--reason", "The author bio moved to the header.",
             "--source", "chat", "--term", "link=newsletter", "--by", "owner"],
            ["rule", "--summary", "Too short"]):
        monkeypatch.setattr("sys.stdin", io.StringIO(body))
        parsed = cli(*args, root=vault)
        quick = vt(*args, "--vault", str(twin), cwd=twin, stdin=body)
        assert (quick.code, same(quick.out), same(quick.err)) == (parsed.code, same(parsed.out), same(parsed.err)), args
    written = {same(path): same(text.decode()) for path, text in snapshot(vault).items()
               if not path.startswith((".vault-tools/", "vault-tools/"))}
    assert written == {same(path): same(text.decode()) for path, text in snapshot(twin).items()
                       if not path.startswith((".vault-tools/", "vault-tools/"))}
    recorded = sorted((event["event"], same(event["id"])) for event in ledger_events(vault))
    assert recorded == sorted((event["event"], same(event["id"])) for event in ledger_events(twin))
    assert "D-0003" in written["Pinned/Decisions log.md"] and "The readers asked twice" in "".join(written.values())


def test_the_console_script_leaves_with_every_exit_code_and_all_its_output(vault):
    """The script leaves without tearing the interpreter down: what it printed still arrives whole through a
    pipe, and each kind of ending keeps its exit code."""
    for number in range(1, 301):
        decision(vault, number, "open", (f"topic-{number}",), summary=f"Question number {number} for the owner?")
    listed = vt("list", "--json", cwd=vault)
    assert listed.code == 0 and len(__import__("json").loads(listed.out)) == 300
    assert vt("version", cwd=vault).out.strip() == __import__("vault_tools").__version__
    assert vt("build", "--check", cwd=vault).code == 1  # stale pages: exit 1, said on stderr
    missing = vt("show", "D-9999", cwd=vault)
    assert missing.code == 1 and "D-9999" in missing.err
    write(vault / "Decisions" / "D-0400 Torn.md", "---\ntype: decision\nid: D-0400\nstatus: [open\n---\n")
    ledger_file(vault).write_text('{"torn": ')
    assert vt("ask", "Should the blog keep comments?", "--topic", "blog-comments", cwd=vault).code == 3
    ledger_file(vault).write_text("")
    usage = vt("lint", "--no-such-option", cwd=vault)
    assert usage.code == 2 and "--no-such-option" in usage.err
    written = vt("build", cwd=vault)
    assert written.code == 1 and "over budget" in written.err and (vault / "Pinned" / "Open questions.md").exists()


def test_a_profiled_run_still_writes_its_profile(vault, tmp_path):
    """Under a profiler (or coverage) the script takes the ordinary way out, so the report gets written."""
    report = tmp_path / "build.prof"
    done = subprocess.run([sys.executable, "-m", "cProfile", "-o", str(report), "-m", "vault_tools", "build"],
                          cwd=vault, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and report.stat().st_size > 0


def _run_with(args, *, stdout=None, closing=()):
    """The console script as a shell starts it, with the streams `closing` (1, 2) closed (`>&-`, `2>&-`)."""
    import os

    return subprocess.run([sys.executable, "-m", "vault_tools", *args], stdout=stdout, text=True, timeout=60,
                          stderr=None if 2 in closing else subprocess.PIPE,
                          preexec_fn=lambda: [os.close(fd) for fd in closing])


def test_a_closed_output_is_no_error_and_a_pipe_no_longer_read_ends_it_as_sigpipe_would(vault):
    """`vault-tools build >&-` and `2>&-` do their work and exit 0; `vault-tools lint | head -1` (the reader
    gone) and `vault-tools version | true` end quietly with 141, as a shell tool ended by SIGPIPE, no crash."""
    import os

    decision(vault, 1, "ruled", summary="Comments stay closed on every post, always.")  # unsealed: lint says so
    assert vt("build", cwd=vault).code == 0
    for closing in ((1,), (2,), (1, 2)):
        assert _run_with(["build", "--vault", str(vault)], closing=closing).returncode == 0, closing
    for args in (["lint", "--vault", str(vault)], ["version"]):
        reading, writing = os.pipe()
        os.close(reading)  # the reader went away before the first line
        try:
            done = _run_with(args, stdout=writing)
        finally:
            os.close(writing)
        assert (done.returncode, done.stderr) == (141, ""), args
    assert not (vault / ".vault-tools" / "crash.log").exists()


def test_the_version_has_one_source_and_both_spellings_print_it(tmp_path):
    import importlib.metadata

    import vault_tools

    installed = importlib.metadata.version("vault-tools-decisions")  # pyproject reads it from vault_tools
    assert installed == vault_tools.__version__
    for spelling in ("--version", "version"):
        done = vt(spelling, cwd=tmp_path)
        assert (done.code, done.out, done.err) == (0, installed + "\n", "")
    assert "--version" in vt("--help", cwd=tmp_path).out
