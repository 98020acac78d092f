"""The `vault-tools` command line: parse, call the commands, print, map errors to exit codes.

Only this module prints. Data goes to stdout, messages to stderr; `--json`
output is one JSON document on stdout and nothing else.
"""
from __future__ import annotations

import datetime as dt
import errno
import functools
import json
import os
import platform
import sys
import tempfile
import traceback
from pathlib import Path
from typing import Annotated, Any

import typer

from . import __version__
from .commands.workspace import Workspace
from .dates import local_date
from .errors import InconsistentVault, VaultToolsError
from .ledger import History
from .model import Decision
from .vault import STATE_DIR, Vault, find_vault, load_config

app = typer.Typer(
    name="vault-tools",
    help="Keep an owner's decisions in an Obsidian vault, so agents stop re-asking settled questions.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)



class _Stderr:
    """rich's console for messages, made on first use: most runs print no message."""

    @functools.cached_property
    def console(self) -> Any:
        from rich.console import Console
        return Console(stderr=True, highlight=False, soft_wrap=True)

    def print(self, text: str, **options: Any) -> None:
        self.console.print(text, **options)


stderr = _Stderr()
_vault_root: Path | None = None  # for the crash log

VaultOption = Annotated[Path | None, typer.Option("--vault", metavar="PATH", help="The vault (default: the nearest folder up "
                                                     "from here with .vault-tools/ or .obsidian/).")]
JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON on stdout.")]
ByOption = Annotated[str | None, typer.Option("--by", metavar="NAME", help="Who is recording this (default from config).")]


def _workspace(vault: Path | None) -> Workspace:
    global _vault_root
    found = Vault.find(vault)
    _vault_root = found.root  # where a crash is logged
    return Workspace(found)


def _out(text: str = "") -> None:
    typer.echo(text)


def _json(data: Any) -> None:
    typer.echo(json.dumps(data, indent=2, ensure_ascii=False, default=str))


def _read_body(body: str | None) -> str | None:
    if body == "-":
        return sys.stdin.read()
    return body


def _when(value: dt.date | None) -> str | None:
    if value is None:
        return None
    return value.isoformat() if not isinstance(value, dt.datetime) else value.isoformat(timespec="seconds")


def decision_json(decision: Decision) -> dict[str, Any]:
    return {
        "id": decision.id, "status": decision.status.value, "topics": list(decision.topics),
        "summary": decision.summary, "path": decision.path,
        "asked_at": _when(decision.asked_at), "asked_by": decision.asked_by,
        "ruled_at": _when(decision.ruled_at), "ruled_by": decision.ruled_by,
        "source": decision.source, "supersedes": list(decision.supersedes),
        "superseded_by": decision.superseded_by, "reason": decision.reason,
        "reask_reason": decision.reask_reason, "revisit_if": decision.revisit_if,
        "revisit_by": _when(decision.revisit_by), "due": _when(decision.due),
    }


def _line(decision: Decision, ws: Workspace) -> str:
    when = decision.ruled_at or decision.asked_at
    day = local_date(when, ws.tz).isoformat() if when else "undated"
    return f"{decision.id}  {decision.status.value:<10} {day}  [{', '.join(decision.topics)}]  {decision.summary}"


# -- commands -----------------------------------------------------------------------

@app.command()
def init(vault: VaultOption = None,
         timezone: Annotated[str | None, typer.Option(metavar="ZONE", help="IANA time zone, like Europe/Paris (default: this machine's).")] = None,
         templates: Annotated[bool, typer.Option(
             "--templates", help="Also copy the Decision and Question templates into Obsidian's templates folder.")] = False,
         ) -> None:
    """Set up .vault-tools/ in a vault (safe to run again); --vault names the folder, made if missing."""
    global _vault_root
    if vault is not None:  # exactly the folder named: made when missing, never another one
        from .commands.setup import make_vault_folder
        root = make_vault_folder(vault)
    else:
        try:
            root = find_vault(None)
        except VaultToolsError:
            root = Path.cwd().resolve()
    _vault_root = root
    from .commands.setup import init_vault
    changed = init_vault(root, timezone)
    load_config(root)  # reads the config back: a bad one fails here, not later
    if templates:
        from .starter import install_templates
        changed += install_templates(root)
    for name in changed:
        stderr.print(f"created or updated {name}", markup=False)
    if not changed:
        stderr.print(f"{root} is already set up", markup=False)
    _out(INIT_SNIPPETS)


INIT_SNIPPETS = """\
Add to .pre-commit-config.yaml:
  - repo: local
    hooks:
      - id: vault-tools-build
        name: vault-tools build
        entry: vault-tools build
        language: system
        pass_filenames: false
        always_run: true
      - id: vault-tools-lint
        name: vault-tools lint
        entry: vault-tools lint
        language: system
        pass_filenames: false
        always_run: true

Add to CLAUDE.md / AGENTS.md:
  At the start of every session run `vault-tools context` and follow it.
  Before asking the owner anything, run `vault-tools ask "<question>" --topic <topic>`;
  if it is refused, the answer is in the ruling it names.

Or load it at every session start (Claude Code, .claude/settings.json):
  {"hooks": {"SessionStart": [{"hooks": [{"type": "command", "command": "vault-tools context"}]}]}}"""


@app.command()
def ask(summary: Annotated[str, typer.Argument(help="The question, one line of at least 20 characters.")],
        topic: Annotated[list[str], typer.Option("--topic", "-t", metavar="TOPIC", help="Topic key (kebab-case); repeatable.")],
        body: Annotated[str | None, typer.Option(help="Context for the owner; - reads stdin.")] = None,
        due: Annotated[str | None, typer.Option(metavar="DATE", help="Date an answer is needed by (2026-07-17).")] = None,
        reask_reason: Annotated[str | None, typer.Option(
            help="What changed since the ruling on this topic (at least 20 characters).")] = None,
        by: ByOption = None, vault: VaultOption = None, json_: JsonOption = False) -> None:
    """Register a question for the owner; refused when its topic is already settled or open."""
    from .commands.ask import ask as ask_question
    decision = ask_question(_workspace(vault), summary, topic, body=_read_body(body), due=due, reask_reason=reask_reason, asked_by=by)
    if json_:
        _json(decision_json(decision))
    else:
        _out(f"{decision.id} asked: {decision.path}")


@app.command()
def rule(decision_id: Annotated[str | None, typer.Argument(metavar="[ID]",
                                                                help="The question being answered.")] = None,
         summary: Annotated[str, typer.Option(help="The ruling, one line of at least 20 characters.")] = ...,  # type: ignore[assignment]
         topic: Annotated[list[str], typer.Option("--topic", "-t", metavar="TOPIC", help="Topic of a ruling given directly; repeatable.")] = [],  # noqa: B006
         source: Annotated[str | None, typer.Option(help="Where the ruling came from.")] = None,
         ruled_at: Annotated[str | None, typer.Option(metavar="DATETIME", help="When the owner decided, like 2026-07-17T08:30:00 (default: now).")] = None,
         supersedes: Annotated[list[str], typer.Option(metavar="ID", help="Id of a current ruling this replaces; repeatable.")] = [],  # noqa: B006
         reason: Annotated[str | None, typer.Option(help="Why it supersedes (at least 20 characters).")] = None,
         body: Annotated[str | None, typer.Option(help="Text of the ruling section; - reads stdin.")] = None,
         revisit_if: Annotated[str | None, typer.Option(help="When revisiting is legitimate.")] = None,
         revisit_by: Annotated[str | None, typer.Option(metavar="DATE", help="Date to review the ruling by (2026-07-17).")] = None,
         by: ByOption = None, vault: VaultOption = None, json_: JsonOption = False) -> None:
    """Record the owner's ruling: on a question (ID) or given directly (--topic)."""
    from .commands.rule import rule as record_ruling
    decision = record_ruling(_workspace(vault), decision_id, summary, topics=topic, source=source, ruled_at=ruled_at, ruled_by=by,
                            supersedes=supersedes, reason=reason, body=_read_body(body),
                            revisit_if=revisit_if, revisit_by=revisit_by)
    if json_:
        _json(decision_json(decision))
    else:
        _out(f"{decision.id} ruled and sealed: {decision.path}")
        for link in decision.supersedes:
            _out(f"  supersedes {link}")


ReasonOption = Annotated[str, typer.Option(help="Why (at least 20 characters).")]


@app.command()
def withdraw(decision_id: Annotated[str, typer.Argument(metavar="ID", help="The open question to drop.")],
             reason: ReasonOption,
             by: ByOption = None, vault: VaultOption = None) -> None:
    """Drop an open question that will not be answered."""
    from .commands.close import withdraw as withdraw_question
    decision = withdraw_question(_workspace(vault), decision_id, reason, by)
    _out(f"{decision.id} withdrawn")


@app.command()
def retract(decision_id: Annotated[str, typer.Argument(metavar="ID", help="The ruling recorded in error.")],
            reason: ReasonOption,
            by: ByOption = None, vault: VaultOption = None) -> None:
    """Declare a ruling wrong (recorded in error), with no replacement."""
    from .commands.close import retract as retract_ruling
    decision = retract_ruling(_workspace(vault), decision_id, reason, by)
    _out(f"{decision.id} retracted")


@app.command()
def seal(decision_ids: Annotated[list[str] | None, typer.Argument(
        metavar="[ID]...", help="Only these rulings (default: every ruled note not sealed yet).")] = None,
         vault: VaultOption = None, json_: JsonOption = False) -> None:
    """Seal ruled notes now instead of waiting for the settle window."""
    from .commands.seal import seal as seal_rulings
    sealed = seal_rulings(_workspace(vault), decision_ids or [])
    if json_:
        _json([decision_json(d) for d in sealed])
        return
    for decision in sealed:
        _out(f"{decision.id} sealed")
    if not sealed:
        stderr.print("nothing to seal", markup=False)


@app.command()
def show(decision_id: Annotated[str, typer.Argument(metavar="ID", help="A decision id, like D-0007.")],
         vault: VaultOption = None,
         json_: JsonOption = False) -> None:
    """One decision note, with its ledger history."""
    from .commands.read import show as show_decision
    ws = _workspace(vault)
    decision, history, problems = show_decision(ws, decision_id)
    if json_:
        data = decision_json(decision)
        data["history"] = [{"event": e.event, "at": e.at, "actor": e.actor} for e in history.events]
        data["sealed"] = history.sealed
        data["problems"] = [{"field": p.field, "line": p.line, "message": p.message} for p in problems]
        _json(data)
    else:
        _show(ws, decision, history)
    if problems:
        for problem in problems:
            stderr.print(f"{decision.path}:{problem.line or 1}: {problem}", markup=False)
        raise typer.Exit(3)


def _show(ws: Workspace, decision: Decision, history: History) -> None:
    _out(_line(decision, ws))
    _out(f"  file: {decision.path}")
    for name in ("source", "reask_reason", "revisit_if", "superseded_by", "reason"):
        value = getattr(decision, name)
        if value:
            _out(f"  {name}: {value}")
    for link in decision.supersedes:
        _out(f"  supersedes: {link}")
    _out(f"  sealed: {'yes' if history.sealed else 'no'}")
    for event in history.events:
        _out(f"  {event.at}  {event.event} by {event.actor}")


@app.command("list")
def list_(status: Annotated[str | None, typer.Option(metavar="STATUS", help="open, ruled, superseded, withdrawn or retracted.")] = None,
          topic: Annotated[str | None, typer.Option(metavar="TOPIC", help="Only this topic (near matches count).")] = None,
          vault: VaultOption = None, json_: JsonOption = False) -> None:
    """Decision notes, filtered by status and topic."""
    from .commands.read import list_decisions
    ws = _workspace(vault)
    found, problems = list_decisions(ws, status, topic)
    if json_:
        _json([decision_json(d) for d in found])
    else:
        for decision in found:
            _out(_line(decision, ws))
    _unreadable(problems)


def _unreadable(problems: list[Any]) -> None:
    """Warn of decision notes that cannot be read, and exit 3: the answer may be incomplete."""
    if not problems:
        return
    for problem in problems:
        where = f"{problem.path}:{problem.line}" if problem.line else problem.path
        stderr.print(f"warning: {where}: {problem.message}", markup=False)
    stderr.print(f"error: {len(problems)} decision note(s) cannot be read; the answer may be incomplete",
                 style="red", markup=False)
    raise typer.Exit(3)


@app.command()
def lookup(topics: Annotated[list[str], typer.Argument(metavar="TOPIC...", help="Topic keys; near spellings count.")],
           vault: VaultOption = None,
           json_: JsonOption = False) -> None:
    """Current rulings on these topics, newest first, each with what it superseded."""
    from .commands.read import lookup as lookup_topics
    ws = _workspace(vault)
    found, problems = lookup_topics(ws, topics)
    if json_:
        _json([_lookup_json(item) for item in found])
    else:
        if not found:
            stderr.print(f"no current ruling on {', '.join(topics)}", markup=False)
        for item in found:
            _out(_line(item.ruling, ws))
            for _key, chain in item.via.values():
                if chain:
                    _out(f"    settles it because {chain}")
            for old in item.chain:
                _out(f"    superseded {_line(old, ws)}")
                if old.reason:
                    _out(f"      because: {old.reason}")
    _unreadable(problems)  # a ruling on these topics may be hiding in a note that cannot be read


def _lookup_json(item: Any) -> dict[str, Any]:
    data = decision_json(item.ruling)
    data["matched_topics"] = item.matched
    data["settled_through"] = {topic: {"topic": key, "chain": chain} for topic, (key, chain) in item.via.items() if chain}
    data["chain"] = [decision_json(old) for old in item.chain]
    return data


TodayOption = Annotated[str | None, typer.Option(
    "--today", metavar="DATE", help="Compute ages and due dates against this date (default: today in the vault's time zone).")]


def _today(value: str | None) -> dt.date | None:
    from .dates import parse_day_option
    return parse_day_option("--today", value)


@app.command()
def build(check: Annotated[bool, typer.Option("--check", help="Write nothing; exit 1 if a page is stale.")] = False,
          today: TodayOption = None, vault: VaultOption = None, json_: JsonOption = False) -> None:
    """Regenerate the pinned pages (open questions, decisions log, archive)."""
    from .commands.build import build as build_pages
    result = build_pages(_workspace(vault), _today(today), check=check)
    pages = result.pages
    if json_:
        _json({"written": result.written, "stale": result.stale, "kept": result.kept, "over_budget": pages.over_budget,
               **_budget_json(pages)})
    else:
        for path in result.stale:
            _out(f"{'stale' if check else 'wrote'} {path}")
    for kept in result.kept:
        stderr.print(f"a pinned page was edited by hand; the edited copy is kept in {kept}", markup=False)
    if check and result.stale:
        stderr.print(f"error: {len(result.stale)} pinned page(s) are stale: {', '.join(result.stale)}; "
                     "run `vault-tools build`", style="red", markup=False)
        raise typer.Exit(1)
    if pages.over_budget:
        stderr.print(f"error: {pages.budget_message()}", style="red", markup=False)
        raise typer.Exit(1)


def _budget_json(pages: Any) -> dict[str, Any]:
    return {"budget": {"lines": pages.settings.budget_lines, "bytes": pages.settings.budget_bytes,
                       "used_lines": pages.used_lines, "used_bytes": pages.used_bytes,
                       "rulings_shown": pages.rulings_shown, "rulings_left_out": pages.rulings_left_out}}


@app.command()
def context(today: TodayOption = None, vault: VaultOption = None, json_: JsonOption = False) -> None:
    """What an agent loads at session start: the open questions and the decisions log."""
    from .commands.build import page_problems
    from .commands.build import pages as agent_pages
    ws = _workspace(vault)
    state = ws.state()
    pages = agent_pages(ws, _today(today), state)
    if json_:
        _json({"open_questions": [decision_json(d) for d in pages.open_questions],
               "rulings": [decision_json(d) for d in pages.current[:pages.rulings_shown]],
               "problems": [{"path": p.path, "line": p.line, "message": p.message}
                            for p in page_problems(state)],
               **_budget_json(pages)})
    else:
        typer.echo(pages.agent_text, nl=False)
    if pages.over_budget:
        stderr.print(f"warning: {pages.budget_message()}", markup=False)


@app.command()
def watch(once: Annotated[bool, typer.Option("--once", help="Reconcile the vault once and exit.")] = False,
          vault: VaultOption = None, json_: Annotated[bool, typer.Option("--json", help="Log JSON lines.")] = False) -> None:
    """Watch the vault while the owner works: seal rulings, restore edited sealed notes, rebuild pages."""
    import signal

    from .watch import Watcher
    ws = _workspace(vault)
    log = _watch_log(ws.vault.state_dir, json_)
    watcher = Watcher(ws, on_action=log)
    if once:
        watcher.acquire()
        try:
            watcher.process(everything=True)
        finally:
            watcher.release()
        if watcher.last_error is not None:
            raise watcher.last_error  # already logged; the exit code says what kind of trouble
        return
    previous = {sig: signal.signal(sig, lambda *_: watcher.stop()) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        watcher.start()
        log_line = f"watching {ws.vault.root} (debounce {watcher.debounce:g} s, settle {watcher.settle:g} s)"
        stderr.print(log_line, markup=False)
        watcher.run()
    finally:
        watcher.release()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    stderr.print("stopped", markup=False)


def _watch_log(state_dir: Path, as_json: bool) -> Any:
    """One line per action, to stderr and to the rotated `.vault-tools/watch.log`."""
    from .watch import format_action, open_log

    logger = open_log(state_dir)

    def log(action: Any) -> None:
        line = format_action(action, as_json)
        logger.info(line)
        stderr.print(line, markup=False, style="red" if action.kind == "invalid" else None)

    return log


@app.command("lint")
def lint_command(
        paths: Annotated[list[Path] | None, typer.Argument(
            metavar="PATH", help="Report only findings in these files or folders (the whole vault is "
                                 "still checked for consistency).")] = None,
        fix: Annotated[bool, typer.Option("--fix", help="Seal rulings past their settle window and rebuild stale "
                                                         "pages first; never edits what the owner wrote.")] = False,
        strict: Annotated[bool, typer.Option("--strict", help="Exit 1 on warnings too.")] = False,
        format_: Annotated[str, typer.Option("--format", help="text, json or github (Actions annotations).")] = "text",
        explain: Annotated[str | None, typer.Option("--explain", metavar="CODE",
                                                       help="Print what a rule checks and how to fix it.")] = None,
        today: TodayOption = None, vault: VaultOption = None, json_: JsonOption = False) -> None:
    """Check the vault against every rule (VT001...); exit 1 on errors. For pre-commit and CI."""
    from . import lint as lint_rules  # imported here: the other commands start faster without it
    if explain is not None:
        _out(lint_rules.explain(explain).rstrip("\n"))
        return
    output = "json" if json_ else lint_rules.check_format(format_)
    ws = _workspace(vault)
    result = lint_rules.run_lint(ws.vault, paths=paths or [], fix=fix, strict=strict, today=_today(today),
                                 output_format=output)
    if output == "json":
        _json(result.as_json())
    else:
        for line in result.fix_lines:
            stderr.print(line, markup=False)
        for line in result.lines:
            _out(line)
        stderr.print(result.summary(), markup=False)
    if result.failed:
        raise typer.Exit(1)


@app.command()
def version() -> None:
    """Print the version."""
    _out(__version__)


# -- running ------------------------------------------------------------------------

def _crash_log(error: BaseException) -> Path:
    folder = (_vault_root / STATE_DIR) if _vault_root and (_vault_root / STATE_DIR).is_dir() else Path(tempfile.gettempdir())
    path = folder / ("crash.log" if folder.name == STATE_DIR else "vault-tools-crash.log")
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(f"--- {dt.datetime.now().isoformat()} vault-tools {__version__} "
                     f"python {platform.python_version()} {platform.platform()}\n")
        handle.write(f"argv: {sys.argv}\n")
        handle.write("".join(traceback.format_exception(error)))
    return path


def report(error: VaultToolsError) -> None:
    if error.path and _vault_root is not None and Path(error.path).is_absolute():
        try:  # name files as the vault does
            error.path = Path(error.path).relative_to(_vault_root).as_posix()
        except ValueError:
            pass
    stderr.print(f"error: {error}", style="red", markup=False)
    for line in error.details:
        stderr.print(f"  {line}", markup=False)


def run(argv: list[str] | None = None) -> int:
    """Run the command line and return its exit code; never exits the process."""
    command = typer.main.get_command(app)
    try:
        # standalone mode lets typer report usage errors (exit 2) its own way;
        # every other exception comes through to the handlers below.
        command.main(args=argv, prog_name="vault-tools", standalone_mode=True)
        return 0
    except SystemExit as exit_:
        return exit_.code if isinstance(exit_.code, int) else (0 if exit_.code is None else 2)
    except KeyboardInterrupt:
        stderr.print("interrupted", markup=False)
        return 130
    except VaultToolsError as error:
        report(error)
        return error.exit_code
    except OSError as error:
        if error.errno not in EXPECTED_OS_ERRORS:
            return _internal_error(error)
        # A full disk or a folder that may not be written is the machine's state, not a bug.
        what = os.strerror(error.errno).lower() if error.errno else str(error)
        report(InconsistentVault(f"cannot write: {what}; nothing more was written. Fix that, then run "
                                 "`vault-tools lint --fix` to finish what was begun", path=error.filename))
        return InconsistentVault.exit_code
    except Exception as error:  # a bug: keep the traceback, say where
        return _internal_error(error)


# What the file system says when the disk is full or a file may not be written.
EXPECTED_OS_ERRORS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EACCES, errno.EPERM, errno.EROFS, errno.EFBIG})


def _internal_error(error: BaseException) -> int:
    try:
        where = f"with the traceback saved in {_crash_log(error)}"
    except OSError as log_error:  # the disk may be the trouble: say so rather than fail again
        where = f"(the traceback could not be saved: {log_error.strerror})"
    stderr.print(f"internal error: {type(error).__name__}: {error}. This is a bug; please report it {where}",
                 style="red", markup=False)
    return 4


def main() -> None:
    sys.exit(run())
