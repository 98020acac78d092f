"""`lint --fix`: the safe, mechanical repairs and nothing else. It never edits what the owner wrote."""
from __future__ import annotations

import datetime as dt
import time

from ..commands.amend import apply_owner_steps
from ..commands.build import build
from ..commands.held import Held, hold_agent_changes
from ..commands.ids import Given, give_ids
from ..commands.repair import finish_interrupted
from ..commands.restore import describe, restore_missing
from ..commands.seal import lost_seal, seal
from ..commands.twins import merge_twin_notes
from ..errors import VaultToolsError
from ..history import histories
from ..model import CONFIRMED, Status
from ..record_files import agent_calls
from ..record_ties import tie_notes
from ..services.workspace import Workspace
from ..tripwire import PutBack, put_back_ledgers
from ..vault import Vault
from .facts import damaged_ledger


def _due_to_seal(ws: Workspace, moment: float, given_paths: set[str], not_done: list[str]) -> list[str]:
    """The ids of rulings not sealed yet whose quiet window has passed (or that were just given their id, having
    been left alone already); one whose `sealed` line is lost is named in `not_done` instead."""
    vault = ws.vault
    state = vault.load()
    try:
        events = vault.ledger.read()
    except VaultToolsError:  # damaged (reported by VT024): what can be read
        events = damaged_ledger(vault)[0]
    known = histories(events)
    ties = tie_notes(state.decisions, known.values(), lambda d: ws.seal_hash_of(state, d))
    due = []
    calls = agent_calls(vault.root)
    for decision in sorted(state.decisions, key=lambda d: d.order):
        history = ties.get(decision.path)
        if decision.status is not Status.RULED or (history is not None and history.sealed):
            continue
        if decision.held or calls.changed_during(vault.path_of(decision)):
            continue  # held for the owner (`commands.held`), or the agent's call looks at it first
        if lost_seal(ws, state, decision, history) is not None:
            not_done.append(f"could not seal {decision.id}: its `sealed` line is missing from the ledger (VT027)")
            continue
        try:
            age = moment - vault.path_of(decision).stat().st_mtime
        except OSError:
            continue
        if age >= vault.config.seal_delay_seconds or decision.path in given_paths:
            due.append(decision.id)
    return due


def _said_first(vault: Vault, given: list[Given], put_back: list[PutBack], held: list[Held]) -> list[str]:
    """What `fix` did before recording the owner's steps, as it says it."""
    return [f"cut off the torn last line of the ledger (an append a kill cut short), kept as {vault.relative(kept)}"
            for kept in vault.ledger.torn_lines_kept] + [
        f"gave {item.was} the id {item.id}" + (f" ({item.path})" if item.path != item.was else "") for item in given] + [
        f"put back {item.lines} ledger line(s) of {item.shown} another program took out" for item in put_back] + [
        f"held {item.id} ({item.step}, {item.path}): changed during an agent's command, it waits for the owner's "
        f"tick of `{CONFIRMED}`" for item in held]


def fix(vault: Vault, *, today: dt.date | None = None, now: float | None = None) -> tuple[list[str], list[str]]:
    """Record retractions and relations the owner typed into sealed rulings, finish operations a kill or a
    full disk interrupted, seal rulings past their sealing delay, write back sealed rulings whose note is
    gone, then rebuild stale pages. Returns (done, not done)."""
    ws = Workspace(vault)
    moment = time.time() if now is None else now
    put_back = put_back_ledgers(vault.ledger)  # lines another program took out, before anything reads them
    try:
        held = hold_agent_changes(ws)  # what an agent's call changed as only the owner may, before anything seals
    except VaultToolsError:
        held = []
    try:
        with vault.ledger.locked():
            given = give_ids(ws, quiet_before=moment - vault.config.seal_delay_seconds)
    except VaultToolsError:
        given = []
    not_done: list[str] = []
    due = _due_to_seal(ws, moment, {item.path for item in given}, not_done)
    try:
        done, unrecorded = apply_owner_steps(ws)
        done = _said_first(vault, given, put_back, held) + done
        not_done += unrecorded
    except VaultToolsError as error:  # a damaged ledger: lint reports it; nothing can be recorded
        done = []
        not_done.append(f"could not record steps taken in Obsidian: {error}")
    try:
        with vault.ledger.locked():
            done += [f"closed {closed}: the same note as {kept}, given an id on two devices"
                     for closed, _, kept in merge_twin_notes(ws, ws.state(), ws.histories())]
    except VaultToolsError as error:
        not_done.append(f"could not keep one record of notes given two ids: {error}")
    try:
        finished, unfinished = finish_interrupted(ws)
        done += finished
        not_done += unfinished
    except VaultToolsError as error:
        not_done.append(f"could not finish interrupted operations: {error}")
    if due:
        try:
            done += [f"sealed {d.id}" for d in seal(ws, due)]
        except VaultToolsError:
            for decision_id in due:  # seal what can be sealed, say why the rest cannot
                try:
                    done += [f"sealed {d.id}" for d in seal(ws, [decision_id])]
                except VaultToolsError as error:
                    not_done.append(f"could not seal {decision_id}: {error}")
    try:
        restoring = restore_missing(ws, ws.state())
        done += [describe(item) for item in restoring.done]
        not_done += restoring.failed
    except VaultToolsError as error:
        not_done.append(f"could not write back sealed rulings whose note is gone: {error}")
    built = build(ws)
    done += [f"rebuilt {path}" for path in built.written]
    return done, not_done
