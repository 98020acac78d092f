"""Commands that run beside the owner's work: the agent hooks, the MCP server, the watcher, the checks."""
from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from .. import console
from ..shapes import decision_json

if TYPE_CHECKING:
    pass

from ..agents import HOOK_AGENTS, hook_module
from ..commands import service
from ..commands.govern import check_changed, governed
from ..errors import Unfinished
from ..record_files import WATCH_LOG
from .common import (
    JsonOption,
    TodayOption,
    VaultOption,
    app,
    decision_line,
    out,
    print_json,
    stderr,
    today_from,
    usage_error,
    workspace,
)


@app.command()
def hook(agent: Annotated[str, typer.Argument(metavar="AGENT", help="The agent: claude, codex or gemini.")],
         event: Annotated[str, typer.Argument(metavar="EVENT", help="claude and codex: session-start, pre-tool-use or "
                                              "user-prompt-submit; gemini: session-start, before-agent or before-tool.")],
         vault: VaultOption = None) -> None:
    """An agent hook: the event's JSON on stdin, the answer's JSON on stdout (nothing when the call may pass)."""
    if agent not in HOOK_AGENTS:
        raise usage_error(f"unknown agent {agent!r}: hooks exist for {', '.join(HOOK_AGENTS)} (cursor is set up by "
                     "`init --agent` through its rules file and MCP)")
    module = hook_module(agent)
    if event not in module.EVENTS:
        raise usage_error(f"unknown event {event!r} for {agent} (expected one of: {', '.join(module.EVENTS)})")
    text = module.run(event, sys.stdin.read(), vault)
    if text:
        out(text)


@app.command()
def mcp(vault: VaultOption = None) -> None:
    """An MCP server on stdio (needs the mcp extra: pipx install --force '.[mcp]' in a clone of vault-tools)."""
    try:
        from ..agents.mcp_server import serve  # the MCP SDK takes a second to load: only for `mcp`
    except ImportError as error:
        raise usage_error(f"the MCP server needs the mcp extra (the official SDK): pipx install --force '.[mcp]' in a clone of vault-tools, or pip install '.[mcp]' in your own environment ({error})") from None
    serve(workspace(vault).vault.root)


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
    ws = workspace(vault)
    found = governed(ws, ws.state(), paths, Path.cwd())
    if json_:
        print_json([{"path": item.path, "scoped_path": item.scoped,
                "rulings": [{**decision_json(ruling), "glob": glob} for ruling, glob in item.rulings]}
               for item in found])
        return
    for item in found:
        if item.scoped is None:
            stderr.print(f"{item.path}: outside the folder scopes are relative to", markup=False)
            continue
        out(f"{item.path}: {len(item.rulings)} ruling(s)")
        for ruling, glob in item.rulings:
            out(f"  {decision_line(ruling, ws)}  (scope {glob})")


@app.command("check")
def check_command(changed: Annotated[str, typer.Option("--changed", metavar="REV", help="A git revision: check "
                                                                                      "the files changed since it.")],
                  strict: Annotated[bool, typer.Option("--strict", help="Exit 1 when a changed file is governed by a "
                                                                        "ruling past its revisit_by date, or by two "
                                                                        "rulings that have not said which stands.")] = False,
                  today: TodayOption = None, vault: VaultOption = None, json_: JsonOption = False) -> None:
    """For CI: the current rulings that govern the files changed since REV."""
    ws = workspace(vault)
    result = check_changed(ws, changed, today_from(today))
    if json_:
        print_json({"files": [{"path": item.path, "rulings": [{**decision_json(ruling), "glob": glob}
                                                         for ruling, glob in item.rulings]}
                         for item in result.governed],
               "problems": result.problems})
    else:
        for item in result.governed:
            out(f"{item.path}")
            for ruling, glob in item.rulings:
                out(f"  {decision_line(ruling, ws)}  (scope {glob})")
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
        fix: Annotated[bool, typer.Option("--fix", help="Seal rulings past their sealing delay, cut off a torn "
                                                         "last ledger line and rebuild stale pages first; never "
                                                         "edits what the owner wrote.")] = False,
        strict: Annotated[bool, typer.Option("--strict", help="Exit 1 on warnings too.")] = False,
        format_: Annotated[str, typer.Option("--format", help="text, json or github (Actions annotations).")] = "text",
        explain: Annotated[str | None, typer.Option("--explain", metavar="CODE",
                                                       help="Print what a rule checks and how to fix it.")] = None,
        today: TodayOption = None, vault: VaultOption = None, json_: JsonOption = False) -> None:
    """Check the vault against every rule (VT001...); exit 1 on errors. For pre-commit and CI."""
    console.lint(paths, fix, strict, format_, explain, today, vault, json_)


SERVICE_ACTIONS = ("install", "remove", "status")


@app.command("service")
def service_command(action: Annotated[str, typer.Argument(metavar="ACTION", help="install, remove or status.")],
            no_start: Annotated[bool, typer.Option("--no-start", help="install: write the unit but neither enable "
                                                                     "nor start it.")] = False,
            vault: VaultOption = None, json_: JsonOption = False) -> None:
    """The watcher started at login for this vault: a per-user systemd unit (Linux) or launchd agent (macOS).

    `install` writes the unit (named after a hash of the vault's path, running this Python's
    `-m vault_tools watch --vault PATH`, restarted when it fails), then enables and starts it; run again, it
    rewrites the unit only when it differs. `remove` stops and disables it, then deletes its file. `status` says
    whether it is installed, up to date and running. See docs/owner-guide.md, "Running the watcher at login".
    """
    if action not in SERVICE_ACTIONS:
        raise usage_error(f"unknown action {action!r} (expected one of: {', '.join(SERVICE_ACTIONS)})")
    if no_start and action != "install":
        raise usage_error("--no-start goes with install only")
    service.unit_kind(sys.platform)  # first: on another platform nothing is looked at or written
    ws = workspace(vault)
    unit = service.this_vaults_unit(ws.vault.root, ws.vault.state_dir / WATCH_LOG)
    about: dict[str, object] = {"kind": unit.kind, "name": unit.name, "unit": str(unit.path),
                                "vault": str(unit.vault), "logs": list(unit.logs)}
    if action == "install":
        _service_install(service.install(unit, start=not no_start), about, json_)
    elif action == "remove":
        _service_remove(service.remove(unit), about, json_)
    else:
        _service_status(service.status(unit), about, json_)


def _service_install(done: service.Installed, about: dict[str, object], json_: bool) -> None:
    unit = done.unit
    if json_:
        print_json({**about, "written": done.written, "started": done.started, "problem": done.problem or None,
                    "start_command": unit.start_line()})
    else:
        said = {"created": "wrote", "rewritten": "rewrote", "unchanged": "unchanged:"}[done.written]
        why = " (it differed from what install writes now)" if done.written == "rewritten" else ""
        out(f"{said} {unit.path}{why}")
        if done.started:
            out(f"started {unit.name}; it starts at every login")
        elif done.started is None:
            out(f"not started (--no-start); to start it now and at every login: {unit.start_line()}")
        out(f"log: {'; '.join(unit.logs)}")
    if done.started is False:
        raise Unfinished(f"could not start {unit.name}: {done.problem}; the unit is written: run "
                         f"`{unit.start_line()}`")


def _service_remove(done: service.Removed, about: dict[str, object], json_: bool) -> None:
    unit = done.unit
    if json_:
        print_json({**about, "removed": done.removed, "stopped": done.stopped, "problem": done.problem or None})
    elif not done.removed:
        out(f"nothing to remove: no unit for {unit.vault} at {unit.path}")
    else:
        out(f"removed {unit.path}")
        if done.stopped:
            out(f"stopped {unit.name}; it no longer starts at login")
    if done.problem:
        stderr.print(f"warning: could not stop {unit.name}: {done.problem}; if it still runs, run "
                     f"`{unit.stop_line()}`", markup=False)


def _service_status(found: service.Status, about: dict[str, object], json_: bool) -> None:
    unit = found.unit
    if json_:
        print_json({**about, "installed": found.installed, "up_to_date": found.up_to_date,
                    "running": found.running, "state": found.state or None})
        return
    if not found.installed:
        out(f"not installed: no unit for {unit.vault} at {unit.path} (vault-tools service install writes it)")
    elif found.up_to_date:
        out(f"installed: {unit.path} (up to date)")
    else:
        out(f"installed: {unit.path} (out of date: vault-tools service install rewrites it)")
    if found.running is None:
        out(f"running: unknown ({found.state})")
    else:
        out(f"running: {'yes' if found.running else 'no'} ({found.state})")
    if found.installed:
        out(f"log: {'; '.join(unit.logs)}")
