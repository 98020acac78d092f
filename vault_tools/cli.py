"""The `vault-tools` command line: parse, call the commands, print, map errors to exit codes.

Only this module and `console` (what it prints, how errors become exit codes, and the commands `launch`
answers without the parser) print. Data goes to stdout, messages to stderr; `--json` output is one JSON
document on stdout and nothing else.

Start-up time counts (hooks and pre-commit run a command on every call), so this module imports
only typer at the top: each command imports what it needs in its own body, and `run` builds the
parser of the one command asked for rather than of all of them.
"""
from __future__ import annotations

import datetime as dt
import functools
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from . import __version__, console
from .bodies import LOOKUP_FULL_LIMIT, SHOW_LIMIT
from .errors import UsageError, VaultToolsError
from .shapes import decision_json, gate_json, lookup_json, show_json, when

if TYPE_CHECKING:
    from .commands.workspace import Workspace
    from .history import History
    from .model import Decision

APP_SETTINGS: dict[str, Any] = {
    "name": "vault-tools",
    "help": "Keep an owner's decisions in an Obsidian vault, so agents stop re-asking settled questions.",
    "no_args_is_help": True,
    "add_completion": False,
    "pretty_exceptions_enable": False,
    "rich_markup_mode": None,
}
app = typer.Typer(**APP_SETTINGS)


stderr = console.stderr

VaultOption = Annotated[Path | None, typer.Option("--vault", metavar="PATH", help="The vault (default: the nearest folder up "
                                                     "from here with .vault-tools/ or .obsidian/).")]
JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON on stdout.")]
ByOption = Annotated[str | None, typer.Option("--by", metavar="NAME", help="Who is recording this (default from config).")]


_workspace = console.workspace
_out = console.out
_json = console.print_json


def _read_body(body: str | None) -> str | None:
    if body == "-":
        return sys.stdin.read()
    return body





def _line(decision: Decision, ws: Workspace) -> str:
    from .dates import local_date

    when = decision.ruled_at or decision.asked_at
    day = local_date(when, ws.tz).isoformat() if when else "undated"
    return f"{decision.id}  {decision.status.value:<10} {day}  [{', '.join(decision.topics)}]  {decision.summary}"


# -- commands -----------------------------------------------------------------------

@app.command()
def init(vault: VaultOption = None,
         timezone: Annotated[str | None, typer.Option(metavar="ZONE", help="IANA time zone, like Europe/Paris (default: this machine's).")] = None,
         templates: Annotated[bool, typer.Option(
             "--templates", help="Also copy the Decision and Question templates into Obsidian's templates folder.")] = False,
         agent: Annotated[str | None, typer.Option(
             "--agent", metavar="AGENT", help="Wire an agent into the project: claude, codex, gemini or cursor (its "
                                              "instructions section, hooks and MCP entry).")] = None,
         remove: Annotated[bool, typer.Option("--remove", help="With --agent: take out exactly what --agent added.")] = False,
         project: Annotated[Path | None, typer.Option(
             "--project", metavar="DIR", help="With --agent: the project the agent works in (default: this folder).")] = None,
         ) -> None:
    """Set up .vault-tools/ in a vault (safe to run again; --vault: made if missing); --agent wires an agent in."""
    from .config import load_config
    from .vault import find_vault

    if vault is not None:  # exactly the folder named: made when missing, never another one
        from .commands.setup import make_vault_folder
        root = make_vault_folder(vault)
    else:
        try:
            root = find_vault(None)
        except VaultToolsError:
            root = Path.cwd().resolve()
    console.at_vault(root)
    from .commands.setup import init_agent, init_vault
    if remove and agent is None:
        raise typer.BadParameter("--remove goes with --agent", param_hint="--remove")
    changed = [] if remove else init_vault(root, timezone)
    load_config(root)  # reads the config back: a bad one fails here, not later
    if templates:
        from .starter import install_templates
        changed += install_templates(root)
    for name in changed:
        stderr.print(f"created or updated {name}", markup=False)
    if agent is not None:
        where = (project or Path.cwd()).resolve()
        touched = init_agent(where, root, agent, remove=remove)
        for name in touched:
            verb = "updated" if (where / name).exists() else "removed"
            stderr.print(f"{verb} {name}" if remove else f"created or updated {name}", markup=False)
        if not touched:
            stderr.print(f"{agent} is {'not wired in' if remove else 'already wired in'}: nothing changed", markup=False)
        return
    if not changed:
        stderr.print(f"{root} is already set up", markup=False)
    from .commands.setup import carriers_note
    _out(carriers_note(root) + INIT_SNIPPETS)


@app.command()
def migrate(vault: VaultOption = None, json_: JsonOption = False) -> None:
    """Move the record from .vault-tools/ to vault-tools/, where every sync engine carries it (byte for byte; safe to run again)."""
    from .commands.migrate import migrate as move
    from .commands.setup import carriers_note
    from .vault import find_vault
    root = find_vault(vault)
    done = move(root)
    if json_:
        _json({"already": done.already, "moved": done.moved, "ledger_lines": done.lines, "ledger": done.ledger,
               "changed": done.changed})
        return
    if done.already:
        _out(f"{root} already keeps its record in vault-tools/: nothing to move")
        return
    for line in done.moved:
        _out(f"moved {line}")
    for name in done.changed:
        stderr.print(f"created or updated {name}", markup=False)
    _out(carriers_note(root))


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

Wire your agent in (its instructions, hooks and MCP server), from the project it works in:
  vault-tools init --agent claude      # or codex, gemini, cursor; --remove takes it out again"""


@app.command()
def ask(summary: Annotated[str, typer.Argument(help="The question, one line of at least 20 characters.")],
        topic: Annotated[list[str], typer.Option("--topic", "-t", metavar="TOPIC", help="Topic key (kebab-case); repeatable.")],
        body: Annotated[str | None, typer.Option(help="Context for the owner; - reads stdin.")] = None,
        due: Annotated[str | None, typer.Option(metavar="DATE", help="Date an answer is needed by (2026-07-17).")] = None,
        reask_reason: Annotated[str | None, typer.Option(
            help="What changed since the ruling on this topic (at least 20 characters).")] = None,
        not_the_same: Annotated[list[str], typer.Option(
            "--not-the-same", metavar="ID", help="A decision the refusal named that you read and found to be a "
            "different matter; recorded in the ledger. Repeatable.")] = [],  # noqa: B006
        by: ByOption = None, vault: VaultOption = None, json_: JsonOption = False) -> None:
    """Register a question for the owner; refused when its topic is already settled or open, or when its words
    say the same matter as a current ruling or open question under other topics."""
    from .commands.ask import ask as ask_question
    ws = _workspace(vault)
    decision = ask_question(ws, summary, topic, body=_read_body(body), due=due, reask_reason=reask_reason, asked_by=by,
                            not_the_same=not_the_same)
    _refresh_pages(ws)
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
         alongside: Annotated[list[str], typer.Option(metavar="ID", help="Id of a current ruling on the topic that still stands beside this one; repeatable.")] = [],  # noqa: B006
         reason: Annotated[str | None, typer.Option(help="Why it supersedes (at least 20 characters).")] = None,
         body: Annotated[str | None, typer.Option(help="Text of the ruling section; - reads stdin.")] = None,
         revisit_if: Annotated[str | None, typer.Option(help="When revisiting is legitimate.")] = None,
         revisit_by: Annotated[str | None, typer.Option(metavar="DATE", help="Date to review the ruling by (2026-07-17).")] = None,
         term: Annotated[list[str], typer.Option("--term", metavar="KEY=VALUE", help="A term the ruling grants, for `gate` (written as the property term_KEY); repeatable.")] = [],  # noqa: B006
         scope: Annotated[list[str], typer.Option("--scope", metavar="GLOB", help="Files the ruling governs, relative to the vault or project_root (Articles/**); repeatable.")] = [],  # noqa: B006
         by: ByOption = None, vault: VaultOption = None, json_: JsonOption = False) -> None:
    """Record the owner's ruling: on a question (ID) or given directly (--topic).

    On a topic that already has a current ruling, say whether this one replaces it (--supersedes ID
    --reason ...) or stands beside it (--alongside ID); otherwise it is refused."""
    from .commands.rule import rule as record_ruling
    ws = _workspace(vault)
    decision = record_ruling(ws, decision_id, summary, topics=topic, source=source, ruled_at=ruled_at, ruled_by=by,
                            supersedes=supersedes, alongside=alongside, reason=reason, body=_read_body(body),
                            revisit_if=revisit_if, revisit_by=revisit_by, terms=term, scope=scope)
    _refresh_pages(ws)
    if json_:
        _json(decision_json(decision))
    else:
        _out(f"{decision.id} ruled and sealed: {decision.path}")
        for link in decision.supersedes:
            _out(f"  supersedes {link}")


def _refresh_pages(ws: Workspace) -> None:
    """After a command changed a decision: the pinned pages rebuilt (`commands.build.refresh_pages`), what
    could not be done said as a warning."""
    from .commands.build import refresh_pages  # the build loads the pages' modules
    for line in refresh_pages(ws):
        stderr.print(line, markup=False)


ReasonOption = Annotated[str, typer.Option(help="Why (at least 20 characters).")]


@app.command()
def withdraw(decision_id: Annotated[str, typer.Argument(metavar="ID", help="The open question to drop.")],
             reason: ReasonOption,
             by: ByOption = None, vault: VaultOption = None) -> None:
    """Drop an open question that will not be answered."""
    from .commands.close import withdraw as withdraw_question
    ws = _workspace(vault)
    decision = withdraw_question(ws, decision_id, reason, by)
    _refresh_pages(ws)
    _out(f"{decision.id} withdrawn")


@app.command()
def retract(decision_id: Annotated[str, typer.Argument(metavar="ID", help="The ruling recorded in error.")],
            reason: ReasonOption,
            by: ByOption = None, vault: VaultOption = None) -> None:
    """Declare a ruling wrong (recorded in error), with no replacement."""
    from .commands.close import retract as retract_ruling
    ws = _workspace(vault)
    decision = retract_ruling(ws, decision_id, reason, by)
    _refresh_pages(ws)
    _out(f"{decision.id} retracted")


@app.command()
def relate(decision_id: Annotated[str, typer.Argument(metavar="ID", help="A current, sealed ruling.")],
           alongside: Annotated[list[str], typer.Option(metavar="ID", help="A current ruling that stands beside it; repeatable.")] = [],  # noqa: B006
           supersedes: Annotated[list[str], typer.Option(metavar="ID", help="A current ruling it replaces; repeatable.")] = [],  # noqa: B006
           reason: Annotated[str | None, typer.Option(help="Why it supersedes (at least 20 characters).")] = None,
           vault: VaultOption = None, json_: JsonOption = False) -> None:
    """Say how a ruling stands to other current rulings on its topic: it replaces them, or they stand beside it."""
    from .commands.amend import relate as relate_rulings
    ws = _workspace(vault)
    decision = relate_rulings(ws, decision_id, alongside=alongside, supersedes=supersedes, reason=reason)
    _refresh_pages(ws)
    if json_:
        _json(decision_json(decision))
        return
    for link in supersedes:
        _out(f"{decision.id} supersedes {link}")
    for link in alongside:
        _out(f"{decision.id} stands alongside {link}")


@app.command()
def seal(decision_ids: Annotated[list[str] | None, typer.Argument(
        metavar="[ID]...", help="Only these rulings (default: every ruled note not sealed yet).")] = None,
         vault: VaultOption = None, json_: JsonOption = False) -> None:
    """Seal ruled notes now instead of waiting for the settle window."""
    from .commands.seal import seal as seal_rulings
    ws = _workspace(vault)
    sealed = seal_rulings(ws, decision_ids or [])
    _refresh_pages(ws)
    if json_:
        _json([decision_json(d) for d in sealed])
        return
    for decision in sealed:
        _out(f"{decision.id} sealed")
    if not sealed:
        stderr.print("nothing to seal", markup=False)


@app.command()
def show(decision_id: Annotated[str, typer.Argument(metavar="ID", help="A decision id, like D-0007.")],
         all_: Annotated[bool, typer.Option("--all", help="The whole body, however long (default: cut at "
                                                          f"{SHOW_LIMIT:,} characters, saying so).")] = False,
         vault: VaultOption = None,
         json_: JsonOption = False) -> None:
    """One decision note: its properties, its body (Obsidian comments left out) and its ledger history."""
    from .commands.read import body_view
    from .commands.read import show as show_decision
    ws = _workspace(vault)
    decision, history, problems = show_decision(ws, decision_id)
    body = body_view(decision, None if all_ else SHOW_LIMIT)
    if json_:
        _json(show_json(decision, history, problems, body))
    else:
        _show(ws, decision, history, body.text)
    if problems:
        for problem in problems:
            stderr.print(f"{decision.path}:{problem.line or 1}: {problem}", markup=False)
        raise typer.Exit(3)


def _show(ws: Workspace, decision: Decision, history: History, body: str) -> None:
    _out(_line(decision, ws))
    _out(f"  file: {decision.path}")
    for name in ("source", "reask_reason", "revisit_if", "superseded_by", "reason"):
        value = getattr(decision, name)
        if value:
            _out(f"  {name}: {value}")
    for link in decision.supersedes:
        _out(f"  supersedes: {link}")
    for link in decision.alongside:
        _out(f"  alongside: {link}")
    _out(f"  sealed: {'yes' if history.sealed else 'no'}")
    for event in history.events:
        _out(f"  {event.at}  {event.event} by {event.actor}")
    if body:
        _out("")
        _out(body)


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
def lookup(topics: Annotated[list[str], typer.Argument(metavar="TOPIC...", help="Topic keys (near spellings count), "
                                                                              "or free text, searched when no topic matches.")],
           full: Annotated[bool, typer.Option("--full", help="Each ruling's whole body (cut at "
                                                              f"{LOOKUP_FULL_LIMIT:,} characters, saying so).")] = False,
           vault: VaultOption = None,
           json_: JsonOption = False) -> None:
    """Current rulings on these topics, newest first, each with the start of its ruling and what it superseded."""
    from .commands.read import body_view, is_topic_key, ruling_preview
    from .commands.read import lookup as lookup_topics
    ws = _workspace(vault)
    found, problems = lookup_topics(ws, topics) if all(map(is_topic_key, topics)) else ([], [])
    if not found and not problems:
        _search_fallback(ws, " ".join(topics), json_)
        return
    if json_:
        _json(lookup_json(found, full))
    else:
        if not found:
            stderr.print(f"no current ruling on {', '.join(topics)}", markup=False)
        for item in found:
            _out(_line(item.ruling, ws))
            if full:
                _out("")
                _out("\n".join("    " + line if line else "" for line in
                               body_view(item.ruling, LOOKUP_FULL_LIMIT).text.split("\n")))
                _out("")
            else:
                for line in ruling_preview(item.ruling):
                    _out(f"    | {line}")
            for _key, chain in item.via.values():
                if chain:
                    _out(f"    settles it because {chain}")
            for other in item.alongside:
                _out(f"    stands alongside {_line(other, ws)}")
            for other in item.not_said:
                _out(f"    NOT SAID whether one replaces the other: {_line(other, ws)}")
            for old in item.chain:
                _out(f"    superseded {_line(old, ws)}")
                if old.reason:
                    _out(f"      because: {old.reason}")
    _unreadable(problems)  # a ruling on these topics may be hiding in a note that cannot be read


def _search_fallback(ws: Workspace, text: str, json_: bool) -> None:
    """`lookup` with no topic matching: the decisions whose words match, best first."""
    from .commands.read import search as search_decisions
    from .commands.same import rank_hits
    result = search_decisions(ws, text.replace("-", " "), limit=20)
    result.hits = rank_hits(ws, text, result.hits)[:5]
    for notice in result.notices:
        stderr.print(f"note: {notice}", markup=False)
    if json_:
        _json([hit.as_json() | {"matched_by": "words"} for hit in result.hits])
        return
    if not result.hits:
        stderr.print(f"no current ruling on {text}, and no decision mentions it", markup=False)
        return
    stderr.print(f"no topic matches {text!r}; decisions whose words match:", markup=False)
    _print_hits(result.hits)


def _print_hits(hits: list[Any]) -> None:
    for hit in hits:
        mark = f" [{hit.status.value.upper()}]" if hit.historical else ""
        _out(f"{hit.id}  {hit.status.value:<10} [{', '.join(hit.topics)}]  {hit.summary}{mark}")
        _out(f"    | {' '.join(hit.snippet.split())}")


@app.command()
def search(query: Annotated[list[str], typer.Argument(metavar="QUERY...", help="Words to look for (any of them; "
                                                                               "accents and word endings do not matter).")],
           history: Annotated[bool, typer.Option("--history", help="Also superseded, withdrawn and retracted "
                                                                    "decisions, marked as such.")] = False,
           limit: Annotated[int, typer.Option("--limit", metavar="N", help="At most this many results.")] = 20,
           vault: VaultOption = None, json_: JsonOption = False) -> None:
    """Find decisions by their words: current rulings and open questions, best match first, with the matching passage."""
    from .commands.read import search as search_decisions
    result = search_decisions(_workspace(vault), " ".join(query), history=history, limit=limit)
    for notice in result.notices:
        stderr.print(f"note: {notice}", markup=False)
    if json_:
        _json([hit.as_json() for hit in result.hits])
        return
    if not result.hits:
        stderr.print("no decision matches", markup=False)
    _print_hits(result.hits)


TodayOption = Annotated[str | None, typer.Option(
    "--today", metavar="DATE", help="Compute ages and due dates against this date (default: today in the vault's time zone).")]


_today = console.today_option


@app.command()
def build(check: Annotated[bool, typer.Option("--check", help="Write nothing; exit 1 if a page is stale.")] = False,
          today: Annotated[str | None, typer.Option("--today", metavar="DATE", hidden=True,
                                                    help="Accepted for older scripts; the pages do not depend on the date.")] = None,
          vault: VaultOption = None, json_: JsonOption = False) -> None:
    """Regenerate the pinned pages (open questions, decisions log, archive)."""
    console.build(check, today, vault, json_)


@app.command()
def context(budget: Annotated[str, typer.Option(
                "--budget", metavar="BUDGET",
                help="What the consumer loads without cutting: claude-hook (9,500 characters), codex-hook (2,400 "
                     "tokens, counted as 1 per 3 ASCII characters and 1 per other character), memory-file (200 lines, "
                     "25,000 bytes), config (the vault's budget.lines and budget.bytes; the default) or a number of "
                     "characters.")] = "config",
            hook: Annotated[bool, typer.Option(
                "--hook", help="For an agent hook, which must not fail: if the open questions alone overflow the "
                               "budget, print the most urgent that fit and a line counting the rest, warn on "
                               "stderr, and exit 0.")] = False,
            today: TodayOption = None, vault: VaultOption = None, json_: JsonOption = False) -> None:
    """What an agent reads at session start: open questions, settled topics and rulings, within a budget."""
    console.context(budget, hook, today, vault, json_)


@app.command()
def gate(decision_id: Annotated[str, typer.Argument(metavar="ID", help="The ruling a script relies on, like D-0007.")],
         require: Annotated[list[str], typer.Option("--require", metavar="KEY=VALUE", help="A term the ruling must grant "
                                                    "exactly (its property term_KEY); repeatable.")] = [],  # noqa: B006
         vault: VaultOption = None, json_: JsonOption = False) -> None:
    """For scripts: exit 0 only if ID is a current, sealed ruling granting every --require exactly; else exit 1 saying why."""
    from .commands.gate import gate as check_gate
    result = check_gate(_workspace(vault), decision_id, require)
    if json_:
        _json(gate_json(result))
    elif result.passed:
        _out(f"{result.ruling.id} grants it: {result.ruling.summary}")
    for failure in result.failures:
        stderr.print(f"refused: {failure}", markup=False)
    if not result.passed:
        raise typer.Exit(1)


@app.command()
def hook(agent: Annotated[str, typer.Argument(metavar="AGENT", help="The agent: claude, codex or gemini.")],
         event: Annotated[str, typer.Argument(metavar="EVENT", help="claude and codex: session-start, pre-tool-use or "
                                              "user-prompt-submit; gemini: session-start, before-agent or before-tool.")],
         vault: VaultOption = None) -> None:
    """An agent hook: the event's JSON on stdin, the answer's JSON on stdout (nothing when the call may pass)."""
    from .agents import HOOK_AGENTS, hook_module
    if agent not in HOOK_AGENTS:
        raise _usage(f"unknown agent {agent!r}: hooks exist for {', '.join(HOOK_AGENTS)} (cursor is set up by "
                     "`init --agent` through its rules file and MCP)")
    module = hook_module(agent)
    if event not in module.EVENTS:
        raise _usage(f"unknown event {event!r} for {agent} (expected one of: {', '.join(module.EVENTS)})")
    text = module.run(event, sys.stdin.read(), vault)
    if text:
        _out(text)


def _usage(message: str) -> VaultToolsError:
    from .errors import UsageError
    return UsageError(message)


@app.command()
def mcp(vault: VaultOption = None) -> None:
    """An MCP server on stdio (needs the mcp extra: pip install 'vault-tools[mcp]')."""
    try:
        from .agents.mcp_server import serve
    except ImportError as error:
        raise _usage(f"the MCP server needs the official SDK: pip install 'vault-tools[mcp]' ({error})") from None
    serve(_workspace(vault).vault.root)


@app.command()
def watch(once: Annotated[bool, typer.Option("--once", help="Reconcile the vault once and exit (1, naming them, when "
                                                         "notes were left for later).")] = False,
          vault: VaultOption = None, json_: Annotated[bool, typer.Option("--json", help="Log JSON lines.")] = False) -> None:
    """Watch the vault while the owner works: seal rulings, restore edited sealed notes, rebuild pages."""
    console.watch(once, vault, json_)


@app.command("for")
def for_paths(paths: Annotated[list[str], typer.Argument(metavar="PATH...", help="Files: absolute, relative to here, or "
                                                                                  "(from outside it) to the scope root.")],
              vault: VaultOption = None, json_: JsonOption = False) -> None:
    """The current rulings that govern these files through their `scope`, most specific glob first."""
    from .commands.govern import governed
    ws = _workspace(vault)
    found = governed(ws, ws.state(), paths, Path.cwd())
    if json_:
        _json([{"path": item.path, "scoped_path": item.scoped,
                "rulings": [{**decision_json(ruling), "glob": glob} for ruling, glob in item.rulings]}
               for item in found])
        return
    for item in found:
        if item.scoped is None:
            stderr.print(f"{item.path}: outside the folder scopes are relative to", markup=False)
            continue
        _out(f"{item.path}: {len(item.rulings)} ruling(s)")
        for ruling, glob in item.rulings:
            _out(f"  {_line(ruling, ws)}  (scope {glob})")


@app.command("check")
def check_command(changed: Annotated[str, typer.Option("--changed", metavar="REV", help="A git revision: check "
                                                                                      "the files changed since it.")],
                  strict: Annotated[bool, typer.Option("--strict", help="Exit 1 when a changed file is governed by a "
                                                                        "ruling past its revisit_by date, or by two "
                                                                        "rulings that have not said which stands.")] = False,
                  today: TodayOption = None, vault: VaultOption = None, json_: JsonOption = False) -> None:
    """For CI: the current rulings that govern the files changed since REV."""
    from .commands.govern import check_changed
    ws = _workspace(vault)
    result = check_changed(ws, changed, _today(today))
    if json_:
        _json({"files": [{"path": item.path, "rulings": [{**decision_json(ruling), "glob": glob}
                                                         for ruling, glob in item.rulings]}
                         for item in result.governed],
               "problems": result.problems})
    else:
        for item in result.governed:
            _out(f"{item.path}")
            for ruling, glob in item.rulings:
                _out(f"  {_line(ruling, ws)}  (scope {glob})")
        if not result.governed:
            stderr.print(f"no file changed since {changed} is governed by a ruling", markup=False)
    for problem in result.problems:
        stderr.print(f"{'error' if strict else 'warning'}: {problem}", markup=False)
    if strict and result.problems:
        raise typer.Exit(1)


@app.command("lint")
def lint_command(
        paths: Annotated[list[Path] | None, typer.Argument(
            metavar="PATH", help="Report only findings in these files or folders (the whole vault is "
                                 "still checked for consistency).")] = None,
        fix: Annotated[bool, typer.Option("--fix", help="Seal rulings past their settle window, cut off a torn "
                                                         "last ledger line and rebuild stale pages first; never "
                                                         "edits what the owner wrote.")] = False,
        strict: Annotated[bool, typer.Option("--strict", help="Exit 1 on warnings too.")] = False,
        format_: Annotated[str, typer.Option("--format", help="text, json or github (Actions annotations).")] = "text",
        explain: Annotated[str | None, typer.Option("--explain", metavar="CODE",
                                                       help="Print what a rule checks and how to fix it.")] = None,
        today: TodayOption = None, vault: VaultOption = None, json_: JsonOption = False) -> None:
    """Check the vault against every rule (VT001...); exit 1 on errors. For pre-commit and CI."""
    console.lint(paths, fix, strict, format_, explain, today, vault, json_)


@app.command("import")
def import_command(
        kind: Annotated[str, typer.Argument(metavar="KIND", help="owner-ask (a JSONL rulings and asks ledger) or adr "
                                                                  "(adr-tools, MADR, log4brains).")],
        folder: Annotated[Path, typer.Argument(metavar="DIR", help="The folder holding the records (for owner-ask, "
                                                                    "the one with state/; for adr, any folder above the ADRs).")],
        dry_run: Annotated[bool, typer.Option("--dry-run", help="Show what would be imported; write nothing.")] = False,
        vault: VaultOption = None, json_: JsonOption = False) -> None:
    """Bring decisions in from another record; run again, it imports nothing twice."""
    from .commands.import_ import import_records, parse_source
    ws = _workspace(vault)
    parsed = parse_source(kind, folder)
    with console.Progress(f"importing {kind}", not json_) as progress:
        result = import_records(ws, parsed, dry_run=dry_run, progress=progress)
    if json_:
        _json(result.as_json())
        return
    verb = "would import" if dry_run else "imported"
    for outcome in result.created:
        _out(f"{verb} {outcome.label} as {outcome.id or 'a new note'} ({outcome.status}): {outcome.summary}")
        for remark in outcome.remarks:
            _out(f"  {remark}")
    for outcome in result.reviews:
        _out(f"{'would ask' if dry_run else 'asked'} {outcome.id or ''} for review: {outcome.summary}".replace("  ", " "))
    for skipped in result.skipped:
        stderr.print(f"skipped {skipped.file}: {skipped.why}", markup=False)
    for warning in result.warnings:
        stderr.print(f"warning: {warning}", markup=False)
    stderr.print(f"{result.files_read} file(s) read; {verb} {len(result.created)}, {len(result.reviews)} for review, "
                 f"{len(result.already)} imported before, {len(result.skipped)} skipped", markup=False)


@app.command()
def harvest(
        paths: Annotated[list[Path] | None, typer.Argument(metavar="[PATH]...", help="Notes or folders to read "
                                                                                    "(default: the whole vault).")] = None,
        dry_run: Annotated[bool, typer.Option("--dry-run", help="Show what would be proposed; write nothing.")] = False,
        link_back: Annotated[bool, typer.Option("--link-back", help="Add a block id (^d-0012) to the source note, so the "
                                                                    "decision note links to the very line.")] = False,
        confirm: Annotated[list[str], typer.Option("--confirm", metavar="ID", help="Record this harvested question as "
                                                                                    "ruled, in its own words; repeatable.")] = [],  # noqa: B006
        vault: VaultOption = None, json_: JsonOption = False) -> None:
    """Propose a decision note for each decision written in passing (#decision, > [!decision], decision::)."""
    from .commands.import_ import harvest as harvest_notes
    ws = _workspace(vault)
    interactive = not json_ and not dry_run and sys.stdin.isatty() and stderr.console.is_terminal

    progress = console.Progress("harvesting", not json_)

    def ask_owner(outcome: Any) -> bool:
        with progress.paused():
            return bool(typer.confirm(f"{outcome.id} reads as a decision already made: \"{outcome.summary}\". "
                                      "Record it as ruled?", default=False, err=True))

    with progress:
        result = harvest_notes(ws, paths or [], dry_run=dry_run, link_back=link_back, confirm_ids=confirm,
                               confirm=ask_owner if interactive else None, progress=progress)
    if json_:
        _json(result.as_json())
        return
    verb = "would propose" if dry_run else "proposed"
    for outcome in result.created:
        _out(f"{verb} {outcome.id or ''} from {outcome.label}: {outcome.summary}".replace("  ", " "))
    for outcome in result.confirmed:
        _out(f"{outcome.id} ruled: {outcome.summary}")
    for outcome in result.to_confirm:
        hint = f"; confirm with `vault-tools harvest --confirm {outcome.id}`" if outcome.id else ""
        _out(f"  {outcome.id or outcome.label} reads as already decided{hint}")
    for rel in result.linked_back:
        _out(f"linked back from {rel}")
    for skipped in result.skipped:
        stderr.print(f"skipped {skipped.file}: {skipped.why}", markup=False)
    stderr.print(f"{result.notes_read} note(s) read; {verb} {len(result.created) + (len(result.to_confirm) if dry_run else 0)}, "
                 f"{len(result.already)} harvested before, {len(result.skipped)} skipped", markup=False)


@app.command()
def stats(since: Annotated[str | None, typer.Option(metavar="DATE", help="Count only questions asked and rulings "
                                                                         "ruled on or after this day (2026-07-01).")] = None,
          write: Annotated[bool, typer.Option("--write", help="Also write the Pinned/Stats.md page, with charts.")] = False,
          today: TodayOption = None, vault: VaultOption = None, json_: JsonOption = False) -> None:
    """The record's own figures: rulings, questions, time to answer, re-asks, supersessions, topics, who recorded what."""
    from .commands.stats import stats as compute_stats
    from .commands.stats import write_stats_page
    from .figures import summary_lines
    ws = _workspace(vault)
    figures = compute_stats(ws, _day("--since", since), _today(today))
    if write:
        written, kept = write_stats_page(ws, figures)
        stderr.print(f"wrote {written}", markup=False)
        if kept:
            stderr.print(f"the page was edited by hand; the edited copy is kept in {kept}", markup=False)
    if json_:
        _json(figures.as_json())
        return
    for line in summary_lines(figures):
        _out(line)
    if figures.topics:
        _out("per topic (questions, rulings, current):")
        for item in figures.topics:
            _out(f"  {item.topic}: {item.questions}, {item.rulings}, {item.current}")
    if figures.recorded_by:
        _out("who recorded what:")
        for actor, counts in figures.recorded_by.items():
            _out(f"  {actor}: " + ", ".join(f"{kind} {count}" for kind, count in counts.items()))


def _day(name: str, value: str | None) -> dt.date | None:
    from .dates import parse_day_option
    return parse_day_option(name, value)


@app.command()
def review(apply: Annotated[bool, typer.Option("--apply", help="Do what the owner ticked in the waiting review, "
                                                                "each through its command, and mark it applied.")] = False,
           today: TodayOption = None, vault: VaultOption = None, json_: JsonOption = False) -> None:
    """Write proposals for the owner to tick (topics to merge, rulings to relate, stale questions); never changes a decision."""
    from .commands import review as reviews
    ws = _workspace(vault)
    if apply:
        applied = reviews.apply_review(ws)
        _refresh_pages(ws)
        if json_:
            _json({"note": applied.note, "done": applied.done, "not_done": applied.not_done})
        else:
            for line in applied.done:
                _out(f"applied: {line}")
            for line in applied.not_done:
                stderr.print(f"not applied: {line}", markup=False)
            if not applied.done and not applied.not_done:
                stderr.print(f"nothing was ticked in {applied.note}", markup=False)
        if applied.not_done:
            raise typer.Exit(1)
        return
    written = reviews.write_review(ws, _today(today))
    if written.written:
        _refresh_pages(ws)  # the open-questions page says a review is waiting
    if json_:
        _json({"note": written.path if written.proposals or written.written else None, "written": written.written,
               "proposals": [{"section": p.section, "action": p.action, "args": list(p.args), "text": p.text}
                             for p in written.proposals]})
        return
    if not written.proposals:
        stderr.print("nothing to review", markup=False)
        return
    _out(f"{'wrote' if written.written else 'unchanged'} {written.path}: {len(written.proposals)} proposal(s); "
         "tick what you accept, then run `vault-tools review --apply`")


@app.command()
def settle(decision_id: Annotated[str, typer.Argument(metavar="ID", help="The decision in conflict.")],
           keep: Annotated[str, typer.Option(metavar="OUTCOME", help="What stands: ruled or withdrawn (a question "
                                             "ruled on one clone and withdrawn on another), or the id of the ruling "
                                             "that stays its successor (a ruling superseded twice); with --copy: "
                                             "original or copy.")],
           reason: Annotated[str | None, typer.Option(help="Why (at least 20 characters; not with --copy).")] = None,
           copy: Annotated[str | None, typer.Option("--copy", metavar="NOTE", help="A conflict copy a sync engine "
                                                    "made of the note (lint VT052): keep its text or the original's.")] = None,
           by: ByOption = None, vault: VaultOption = None, json_: JsonOption = False) -> None:
    """Decide a conflict two clones recorded (lint VT026): keep one outcome; the other stays in the ledger. With
    --copy, settle a conflict copy a sync engine made (VT052): the text not kept goes under kept/."""
    if copy is not None:
        from .commands.settle import settle_copy
        settled = settle_copy(_workspace(vault), decision_id, copy, keep.strip())
        if json_:
            _json({"original": settled.original, "removed": settled.removed, "kept": settled.kept,
                   "kept_copy": settled.kept_copy})
            return
        _out(f"{settled.original}: kept the {settled.kept}; removed {settled.removed}")
        stderr.print(f"the text not kept is in {settled.kept_copy}", markup=False)
        return
    from .commands.settle import settle as settle_conflict
    done = settle_conflict(_workspace(vault), decision_id, keep, reason, by)
    if json_:
        _json({"id": done.decision.id, "kept": done.kept, "retracted": done.retracted, "kept_copy": done.kept_copy})
        return
    _out(f"{done.decision.id} settled: kept {done.kept}")
    for other in done.retracted:
        _out(f"  {other} retracted")
    if done.kept_copy:
        stderr.print(f"the note's previous text is kept in {done.kept_copy}", markup=False)


@app.command()
def renumber(decision_id: Annotated[str, typer.Argument(metavar="ID", help="An id two notes share.")],
             path: Annotated[str | None, typer.Option("--path", metavar="NOTE", help="The note to give a new id "
                                                      "(default: the one the ledger has no record of).")] = None,
             by: ByOption = None, vault: VaultOption = None, json_: JsonOption = False) -> None:
    """Give one of two notes that share an id a new id: its file name and the links to it follow."""
    from .commands.renumber import renumber as renumber_note
    done = renumber_note(_workspace(vault), decision_id, path, by)
    if json_:
        _json({"old_id": done.old_id, "new_id": done.new_id, "path": done.path, "old_path": done.old_path,
               "relinked": done.relinked})
        return
    _out(f"{done.old_id} -> {done.new_id}: {done.path}")
    for relinked in done.relinked:
        _out(f"  links rewritten in {relinked}")


@app.command("merge-note")
def merge_note(base: Annotated[Path, typer.Argument(help="The common ancestor (git's %O).")],
               ours: Annotated[Path, typer.Argument(help="This clone's version, merged in place (%A).")],
               theirs: Annotated[Path, typer.Argument(help="The other clone's version (%B).")],
               shown: Annotated[str, typer.Argument(help="The note's path in the repository (%P).")]) -> None:
    """git's merge driver for decision notes (set up by init); not for use by hand."""
    from .commands.gitmerge import merge_note as merge
    code = merge(base, ours, theirs, shown)
    if code:
        raise typer.Exit(code)


@app.command()
def history(decision_id: Annotated[str, typer.Argument(metavar="ID", help="A decision id, like D-0007.")],
            vault: VaultOption = None, json_: JsonOption = False) -> None:
    """Every version and lifecycle event of a decision, oldest first, with what each changed in its text."""
    from .commands.history import history as record_history
    from .commands.history import text_diff
    found = record_history(_workspace(vault), decision_id)
    if json_:
        items, before = [], None
        for version in found.versions:
            item: dict[str, Any] = {k: v for k, v in version.event.to_json().items() if k not in ("text", "hash")}
            item["status"] = version.decision.status.value if version.decision else None
            item["text"] = version.text
            item["taken_from"] = version.taken_from or "ledger"
            if version.text is not None:
                item["diff"] = text_diff(before, version)
                before = version
            items.append(item)
        _json({"id": found.id, "events": items, "remarks": found.remarks})
        return
    before = None
    for version in found.versions:
        event = version.event
        extra = [f"reason: {event.reason}"] if event.reason else []
        if event.successor:
            extra.append(f"{'revision' if event.event == 'edit-rejected' else 'successor'}: {event.successor}")
        if event.origin:
            extra.append(f"from {event.origin}")
        _out(f"{event.at}  {event.event} by {event.actor}  {event.path}")
        for line in extra:
            _out(f"  {line}")
        if version.text is not None:
            if version.taken_from:
                _out(f"  (text taken from {version.taken_from})")
            for line in text_diff(before, version):
                _out(f"  {line}")
            before = version
    for remark in found.remarks:
        stderr.print(f"note: {remark}", markup=False)


RecordedOption = Annotated[bool, typer.Option("--recorded", help="Go by when the vault recorded each step (the "
                                                                  "ledger's time) instead of when it was decided.")]


@app.command("as-of")
def as_of(date: Annotated[str, typer.Argument(metavar="DATE", help="A date (its end counts) or date and time, "
                                                                    "in the vault's time zone.")],
          topics: Annotated[list[str] | None, typer.Argument(metavar="[TOPIC]...", help="Only these topics "
                                                                                         "(near spellings count).")] = None,
          recorded: RecordedOption = False, vault: VaultOption = None, json_: JsonOption = False) -> None:
    """The rulings in force on DATE: by when they were decided (ruled_at), or what the vault knew then (--recorded)."""
    from .commands.history import rulings_as_of
    ws = _workspace(vault)
    found = rulings_as_of(ws, date, topics or [], recorded=recorded)
    if json_:
        _json([decision_json(s.decision) | {"in_force_since": s.since.isoformat() if s.since else None}
               for s in found])
        return
    if not found:
        stderr.print(f"no ruling in force on {date}" + (f" on {', '.join(topics)}" if topics else ""), markup=False)
    for standing in found:
        _out(_line(standing.decision, ws))


@app.command()
def changed(since: Annotated[str, typer.Option("--since", metavar="DATE", help="From this date (its start) or "
                                                                                "date and time.")],
            until: Annotated[str | None, typer.Option("--until", metavar="DATE", help="Up to this date (its end) "
                                                                                      "or date and time (default: now).")] = None,
            vault: VaultOption = None, json_: JsonOption = False) -> None:
    """What was asked, ruled, superseded, withdrawn or retracted in a period, by when the vault recorded it."""
    from .commands.history import changed as changes_between
    ws = _workspace(vault)
    found = changes_between(ws, since, until)
    if json_:
        _json([{"event": c.event.event, "id": c.event.id, "at": c.event.at, "actor": c.event.actor,
                "summary": c.summary, "reason": c.event.reason, "successor": c.event.successor,
                "ruled_at": when(c.ruled_at), "path": c.event.path} for c in found])
        return
    for change in found:
        event = change.event
        decided = f" (decided {when(change.ruled_at)})" if change.ruled_at is not None else ""
        _out(f"{event.at}  {event.event:<10} {event.id}{decided}  {change.summary or ''}".rstrip())
        if event.reason:
            _out(f"  because: {event.reason}")
        if event.successor and event.event == "superseded":
            _out(f"  by {event.successor}")
    if not found:
        stderr.print("nothing changed in that period", markup=False)


@app.command()
def export(format_: Annotated[str, typer.Option("--format", help="jsonl (one record a line, for `import export`) "
                                                                  "or md (a readable page).")] = "jsonl",
           as_of_: Annotated[str | None, typer.Option("--as-of", metavar="DATE", help="As the decisions stood on "
                                                                                      "this date (default: now).")] = None,
           recorded: RecordedOption = False, vault: VaultOption = None) -> None:
    """A snapshot of every decision, now or as of a date, as JSON lines or Markdown, on stdout."""
    from .commands.history import export_jsonl, export_markdown, export_records
    if format_ not in ("jsonl", "md"):
        raise UsageError(f"unknown --format {format_!r} (expected jsonl or md)")
    ws = _workspace(vault)
    rows = export_records(ws, as_of_, recorded=recorded)
    typer.echo(export_jsonl(ws, rows, as_of_) if format_ == "jsonl" else export_markdown(rows, as_of_), nl=False)


@app.command()
def version() -> None:
    """Print the version."""
    _out(__version__)


# -- running ------------------------------------------------------------------------

report = console.report


def _command_name(info: Any) -> str:
    return str(info.name or typer.main.get_command_name(info.callback.__name__))


def _parser(argv: list[str]) -> Any:
    """The click group for `argv`: holding only the command named first when it names one (typer reads
    every parameter of every command it builds, which costs more than most commands take to run), else
    all of them, for `--help` and for a mistyped name's suggestions."""
    return _group(argv[0] if argv else None)


@functools.cache
def _group(first: str | None) -> Any:
    """Built once per process and name: click parses each call into a context of its own."""
    named = [info for info in app.registered_commands if first == _command_name(info)]
    if not named:
        return typer.main.get_command(app)
    one = typer.Typer(**APP_SETTINGS)
    one.registered_commands = named
    return typer.main.get_group(one)


def run(argv: list[str] | None = None) -> int:
    """Run the command line and return its exit code; never exits the process."""
    command = _parser(sys.argv[1:] if argv is None else argv)
    # standalone mode lets typer report usage errors (exit 2) its own way; every other exception comes through
    return console.exit_code_of(lambda: command.main(args=argv, prog_name="vault-tools", standalone_mode=True))


def main() -> None:
    sys.exit(run())
