"""Commands that record: set up a vault, ask, rule, withdraw, retract, relate, seal."""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from .. import console, recording
from ..errors import VaultToolsError
from ..model import Decision
from ..shapes import decision_json

if TYPE_CHECKING:
    pass

from ..commands.agent_setup import init_agent
from ..commands.amend import relate
from ..commands.close import retract, withdraw
from ..commands.migrate import migrate
from ..commands.seal import seal
from ..commands.setup import carriers_note, init_vault, make_vault_folder
from ..config import load_config
from ..record_files import CONFIG_FILE, WATCH_LOG, find_vault
from ..starter import install_base, install_templates
from ..vault import Vault
from .common import (
    ByOption,
    JsonOption,
    ReasonOption,
    VaultOption,
    app,
    out,
    print_json,
    refresh_pages,
    stderr,
    workspace,
)


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
    """Set up the record in a vault (safe to run again; --vault: made if missing); --agent wires an agent in."""

    if vault is not None:  # exactly the folder named: made when missing, never another one
        root = make_vault_folder(vault)
    else:
        try:
            root = find_vault(None)
        except VaultToolsError:
            root = Path.cwd().resolve()
    console.at_vault(root)
    if remove and agent is None:
        raise typer.BadParameter("--remove goes with --agent", param_hint="--remove")
    changed = [] if remove else init_vault(root, timezone)
    load_config(root)  # reads the config back: a bad one fails here, not later
    if templates:
        changed += install_templates(root)
    if not remove and (templates or any(name.endswith(CONFIG_FILE) for name in changed)):  # a new vault, or asked
        base, written = install_base(root)
        if written:
            changed.append(base)
        else:
            stderr.print(f"{base} is yours: left as it is (for a fresh copy, rename or delete it and run "
                         "`vault-tools init --templates`)", markup=False)
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
        from ..commands.service import watcher_unit_missing  # here: the other commands of this family never ask

        if not remove and watcher_unit_missing(root, Vault(root).state_dir / WATCH_LOG):
            stderr.print(WATCHER_TIP, markup=False)
        return
    if not changed:
        stderr.print(f"{root} is already set up", markup=False)
    out(carriers_note(root) + INIT_SNIPPETS)


# Said once the agent is wired in, where the watcher is not set up to run at login: the agent's commands are
# answered by the process it keeps (docs/agents.md, "A session"), about twice as fast as in one of their own.
WATCHER_TIP = ("The agent's commands answer about twice as fast while the watcher runs on this vault: "
               "`vault-tools service install` starts it at every login (or run `vault-tools watch`).")


@app.command("migrate")
def migrate_command(vault: VaultOption = None, json_: JsonOption = False) -> None:
    """Move the record from .vault-tools/ to vault-tools/, where every sync engine carries it (byte for byte; safe to run again)."""
    root = find_vault(vault)
    done = migrate(root)
    if json_:
        print_json({"already": done.already, "moved": done.moved, "ledger_lines": done.lines, "ledger": done.ledger,
               "changed": done.changed})
        return
    if done.already:
        out(f"{root} already keeps its record in vault-tools/: nothing to move")
        return
    for line in done.moved:
        out(f"moved {line}")
    for name in done.changed:
        stderr.print(f"created or updated {name}", markup=False)
    out(carriers_note(root))


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


@app.command("ask")
def ask_command(summary: Annotated[str, typer.Argument(help="The question, one line of at least 20 characters.")],
        topic: Annotated[list[str], typer.Option("--topic", "-t", metavar="TOPIC", help="Topic key (kebab-case); repeatable.")],
        body: Annotated[str | None, typer.Option(help="Context for the owner; - reads stdin.")] = None,
        due: Annotated[str | None, typer.Option(metavar="DATE", help="Date an answer is needed by (2026-07-17).")] = None,
        reask_reason: Annotated[str | None, typer.Option(
            help="What changed since the ruling on this topic (at least 20 characters).")] = None,
        not_the_same: Annotated[list[str], typer.Option(
            "--not-the-same", metavar="ID", help="A decision the refusal named that you read and found to be a "
            "different matter; recorded in the ledger. Repeatable.")] = [],  # noqa: B006
        by: ByOption = None, vault: VaultOption = None, json_: JsonOption = False) -> None:
    """Register a question for the owner; refused when its topic is already settled, open or withdrawn, or when its
    words say the same matter as a current ruling, an open or a withdrawn question under other topics. When they
    may say it, the nearest decisions are shown with their text: if none is the matter, ask again with
    --not-the-same for each."""
    recording.ask(summary, topic, body=body, due=due, reask_reason=reask_reason, not_the_same=not_the_same, by=by,
                vault=vault, json_=json_)


@app.command("rule")
def rule_command(decision_id: Annotated[str | None, typer.Argument(metavar="[ID]",
                                                                help="The question being answered.")] = None,
         summary: Annotated[str, typer.Option(help="The ruling, one line of at least 20 characters.")] = ...,  # type: ignore[assignment]
         topic: Annotated[list[str], typer.Option("--topic", "-t", metavar="TOPIC", help="Topic of a ruling given directly; repeatable.")] = [],  # noqa: B006
         source: Annotated[str | None, typer.Option(help="Where the ruling came from.")] = None,
         ruled_at: Annotated[str | None, typer.Option(metavar="DATETIME", help="When the owner decided, like 2026-07-17T08:30:00 (default: now); never in the future, nor before a ruling it supersedes.")] = None,
         supersedes: Annotated[list[str], typer.Option(metavar="ID", help="Id of a current ruling this replaces; repeatable.")] = [],  # noqa: B006
         alongside: Annotated[list[str], typer.Option(metavar="ID", help="Id of a current ruling on the topic that still stands beside this one; repeatable.")] = [],  # noqa: B006
         alongside_all: Annotated[bool, typer.Option("--alongside-all", help="Every current ruling on the topic still stands beside this one, whatever their number (routine rulings of one kind).")] = False,
         reason: Annotated[str | None, typer.Option(help="Why it supersedes (at least 20 characters).")] = None,
         body: Annotated[str | None, typer.Option(help="Text of the ruling section; - reads stdin.")] = None,
         revisit_if: Annotated[str | None, typer.Option(help="When revisiting is legitimate.")] = None,
         revisit_by: Annotated[str | None, typer.Option(metavar="DATE", help="Date to review the ruling by (2026-07-17).")] = None,
         term: Annotated[list[str], typer.Option("--term", metavar="KEY=VALUE", help="A term the ruling grants, for `gate` (written as the property term_KEY); repeatable.")] = [],  # noqa: B006
         scope: Annotated[list[str], typer.Option("--scope", metavar="GLOB", help="Files the ruling governs, relative to the vault or project_root (Articles/**); repeatable.")] = [],  # noqa: B006
         not_the_same: Annotated[list[str], typer.Option(
             "--not-the-same", metavar="ID", help="A decision the refusal named that you read and found to be a "
             "different matter; recorded in the ledger. Repeatable.")] = [],  # noqa: B006
         by: ByOption = None, vault: VaultOption = None, json_: JsonOption = False) -> None:
    """Record the owner's ruling: on a question (ID) or given directly (--topic).

    On a topic that already has a current ruling, say whether this one replaces it (--supersedes ID
    --reason ...) or stands beside it (--alongside ID, or --alongside-all for every one); otherwise it is
    refused. So is one given directly whose words are, or may be, the matter of a current ruling or an open
    question under other topics: all of them are listed with their text and the words matched (look-alikes
    grouped); say which way it goes, or --not-the-same for each entry."""
    recording.rule(decision_id, summary, topic=topic, source=source, ruled_at=ruled_at, supersedes=supersedes,
                 alongside=alongside, alongside_all=alongside_all, reason=reason, body=body, revisit_if=revisit_if,
                 revisit_by=revisit_by, term=term, scope=scope, not_the_same=not_the_same, by=by, vault=vault,
                 json_=json_)


@app.command("withdraw")
def withdraw_command(decision_id: Annotated[str, typer.Argument(metavar="ID", help="The open question to drop.")],
             reason: ReasonOption,
             by: ByOption = None, vault: VaultOption = None) -> None:
    """Drop an open question that will not be answered."""
    ws = workspace(vault)
    decision = withdraw(ws, decision_id, reason, by)
    refresh_pages(ws)
    out(f"{decision.id} withdrawn")


@app.command("retract")
def retract_command(decision_id: Annotated[str, typer.Argument(metavar="ID", help="The ruling recorded in error.")],
            reason: ReasonOption,
            by: ByOption = None, vault: VaultOption = None) -> None:
    """Declare a ruling wrong (recorded in error), with no replacement."""
    ws = workspace(vault)
    decision = retract(ws, decision_id, reason, by)
    refresh_pages(ws)
    out(f"{decision.id} retracted")


@app.command("relate")
def relate_command(decision_id: Annotated[str, typer.Argument(metavar="ID", help="A current, sealed ruling.")],
           alongside: Annotated[list[str], typer.Option(metavar="ID", help="A current ruling that stands beside it; repeatable.")] = [],  # noqa: B006
           supersedes: Annotated[list[str], typer.Option(metavar="ID", help="A current ruling it replaces; repeatable.")] = [],  # noqa: B006
           reason: Annotated[str | None, typer.Option(help="Why it supersedes (at least 20 characters).")] = None,
           vault: VaultOption = None, json_: JsonOption = False) -> None:
    """Say how a ruling stands to other current rulings on its topic: it replaces them, or they stand beside it."""
    ws = workspace(vault)
    decision = relate(ws, decision_id, alongside=alongside, supersedes=supersedes, reason=reason)
    refresh_pages(ws)
    if json_:
        print_json(decision_json(decision))
        return
    for link in supersedes:
        out(f"{decision.id} supersedes {link}")
    for link in alongside:
        out(f"{decision.id} stands alongside {link}")


@app.command("seal")
def seal_command(decision_ids: Annotated[list[str] | None, typer.Argument(
        metavar="[ID]...", help="Only these rulings (default: every ruled note not sealed yet).")] = None,
         vault: VaultOption = None, json_: JsonOption = False) -> None:
    """Seal ruled notes now instead of waiting for the sealing delay."""
    ws = workspace(vault)
    not_sealed: list[tuple[Decision, VaultToolsError]] = []
    sealed = seal(ws, decision_ids or [], not_sealed)
    refresh_pages(ws)
    if json_:
        print_json([decision_json(d) for d in sealed])
    else:
        for decision in sealed:
            out(f"{decision.id} sealed")
        if not sealed and not not_sealed:
            stderr.print("nothing to seal", markup=False)
    for decision, error in not_sealed:
        stderr.print(f"{error.path or decision.path}:{error.line or 1}: {decision.id} not sealed: {error.message}",
                     markup=False)
    if not_sealed:
        raise typer.Exit(1)
