"""Commands that bring decisions in and keep the record in shape: import, harvest, stats, review, settle, renumber, the notes merge driver."""
from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from .. import console

if TYPE_CHECKING:
    pass

from ..commands import review
from ..commands.gitmerge import merge_note
from ..commands.harvest import harvest
from ..commands.import_ import import_records, parse_source
from ..commands.renumber import renumber
from ..commands.settle import settle, settle_copy
from ..commands.stats import stats, write_stats_page
from ..figures import summary_lines
from .common import (
    ByOption,
    JsonOption,
    TodayOption,
    VaultOption,
    app,
    day_option,
    out,
    print_json,
    refresh_pages,
    stderr,
    today_from,
    workspace,
)


@app.command("import")
def import_command(
        kind: Annotated[str, typer.Argument(metavar="KIND", help="owner-ask (a JSONL rulings and asks ledger) or adr "
                                                                  "(adr-tools, MADR, log4brains).")],
        folder: Annotated[Path, typer.Argument(metavar="DIR", help="The folder holding the records (for owner-ask, "
                                                                    "the one with state/; for adr, any folder above the ADRs).")],
        dry_run: Annotated[bool, typer.Option("--dry-run", help="Show what would be imported; write nothing.")] = False,
        vault: VaultOption = None, json_: JsonOption = False) -> None:
    """Bring decisions in from another record; run again, it imports nothing twice."""
    ws = workspace(vault)
    parsed = parse_source(kind, folder)
    with console.Progress(f"importing {kind}", not json_) as progress:
        result = import_records(ws, parsed, dry_run=dry_run, progress=progress)
    if json_:
        print_json(result.as_json())
        return
    verb = "would import" if dry_run else "imported"
    for outcome in result.created:
        out(f"{verb} {outcome.label} as {outcome.id or 'a new note'} ({outcome.status}): {outcome.summary}")
        for remark in outcome.remarks:
            out(f"  {remark}")
    for outcome in result.reviews:
        out(f"{'would ask' if dry_run else 'asked'} {outcome.id or ''} for review: {outcome.summary}".replace("  ", " "))
    for skipped in result.skipped:
        stderr.print(f"skipped {skipped.file}: {skipped.why}", markup=False)
    for warning in result.warnings:
        stderr.print(f"warning: {warning}", markup=False)
    stderr.print(f"{result.files_read} file(s) read; {verb} {len(result.created)}, {len(result.reviews)} for review, "
                 f"{len(result.already)} imported before, {len(result.skipped)} skipped", markup=False)


@app.command("harvest")
def harvest_command(
        paths: Annotated[list[Path] | None, typer.Argument(metavar="[PATH]...", help="Notes or folders to read "
                                                                                    "(default: the whole vault).")] = None,
        dry_run: Annotated[bool, typer.Option("--dry-run", help="Show what would be proposed; write nothing.")] = False,
        link_back: Annotated[bool, typer.Option("--link-back", help="Add a block id (^d-0012) to the source note, so the "
                                                                    "decision note links to the very line.")] = False,
        confirm: Annotated[list[str], typer.Option("--confirm", metavar="ID", help="Record this harvested question as "
                                                                                    "ruled, in its own words; repeatable.")] = [],  # noqa: B006
        vault: VaultOption = None, json_: JsonOption = False) -> None:
    """Propose a decision note for each decision written in passing (#decision, > [!decision], decision::)."""
    ws = workspace(vault)
    interactive = not json_ and not dry_run and sys.stdin.isatty() and stderr.console.is_terminal

    progress = console.Progress("harvesting", not json_)

    def ask_owner(outcome: Any) -> bool:
        with progress.paused():
            return bool(typer.confirm(f"{outcome.id} reads as a decision already made: \"{outcome.summary}\". "
                                      "Record it as ruled?", default=False, err=True))

    with progress:
        result = harvest(ws, paths or [], dry_run=dry_run, link_back=link_back, confirm_ids=confirm,
                               confirm=ask_owner if interactive else None, progress=progress)
    if json_:
        print_json(result.as_json())
        return
    verb = "would propose" if dry_run else "proposed"
    for outcome in result.created:
        out(f"{verb} {outcome.id or ''} from {outcome.label}: {outcome.summary}".replace("  ", " "))
    for outcome in result.confirmed:
        out(f"{outcome.id} ruled: {outcome.summary}")
    for outcome in result.to_confirm:
        hint = f"; confirm with `vault-tools harvest --confirm {outcome.id}`" if outcome.id else ""
        out(f"  {outcome.id or outcome.label} reads as already decided{hint}")
    for rel in result.linked_back:
        out(f"linked back from {rel}")
    for skipped in result.skipped:
        stderr.print(f"skipped {skipped.file}: {skipped.why}", markup=False)
    stderr.print(f"{result.notes_read} note(s) read; {verb} {len(result.created) + (len(result.to_confirm) if dry_run else 0)}, "
                 f"{len(result.already)} harvested before, {len(result.skipped)} skipped", markup=False)


@app.command("stats")
def stats_command(since: Annotated[str | None, typer.Option(metavar="DATE", help="Count only questions asked and rulings "
                                                                         "ruled on or after this day (2026-07-01).")] = None,
          write: Annotated[bool, typer.Option("--write", help="Also write the Pinned/Stats.md page, with charts.")] = False,
          today: TodayOption = None, vault: VaultOption = None, json_: JsonOption = False) -> None:
    """The record's own figures: rulings, questions, time to answer, re-asks, supersessions, topics, who recorded what."""
    ws = workspace(vault)
    figures = stats(ws, day_option("--since", since), today_from(today))
    if write:
        written, kept = write_stats_page(ws, figures)
        stderr.print(f"wrote {written}", markup=False)
        if kept:
            stderr.print(f"the page was edited by hand; the edited copy is kept in {kept}", markup=False)
    if json_:
        print_json(figures.as_json())
        return
    for line in summary_lines(figures):
        out(line)
    if figures.topics:
        out("per topic (questions, rulings, current):")
        for item in figures.topics:
            out(f"  {item.topic}: {item.questions}, {item.rulings}, {item.current}")
    if figures.recorded_by:
        out("who recorded what:")
        for actor, counts in figures.recorded_by.items():
            out(f"  {actor}: " + ", ".join(f"{kind} {count}" for kind, count in counts.items()))


@app.command("review")
def review_command(apply: Annotated[bool, typer.Option("--apply", help="Do what the owner ticked in the waiting review, "
                                                                "each through its command, and mark it applied.")] = False,
           today: TodayOption = None, vault: VaultOption = None, json_: JsonOption = False) -> None:
    """Write proposals for the owner to tick (topics to merge, rulings to relate, stale questions); never changes a decision."""
    ws = workspace(vault)
    if apply:
        applied = review.apply_review(ws)
        refresh_pages(ws)
        if json_:
            print_json({"note": applied.note, "done": applied.done, "not_done": applied.not_done})
        else:
            for line in applied.done:
                out(f"applied: {line}")
            for line in applied.not_done:
                stderr.print(f"not applied: {line}", markup=False)
            if not applied.done and not applied.not_done:
                stderr.print(f"nothing was ticked in {applied.note}", markup=False)
        if applied.not_done:
            raise typer.Exit(1)
        return
    written = review.write_review(ws, today_from(today))
    if written.written:
        refresh_pages(ws)  # the open-questions page says a review is waiting
    if json_:
        print_json({"note": written.path if written.proposals or written.written else None, "written": written.written,
               "proposals": [{"section": p.section, "action": p.action, "args": list(p.args), "text": p.text}
                             for p in written.proposals]})
        return
    if not written.proposals:
        stderr.print("nothing to review", markup=False)
        return
    out(f"{'wrote' if written.written else 'unchanged'} {written.path}: {len(written.proposals)} proposal(s); "
         "tick what you accept, then run `vault-tools review --apply`")


@app.command("settle")
def settle_command(decision_id: Annotated[str, typer.Argument(metavar="ID", help="The decision in conflict.")],
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
    ws = workspace(vault)
    if copy is not None:
        settled = settle_copy(ws, decision_id, copy, keep.strip())
        refresh_pages(ws)  # the conflict leaves the open-questions page
        if json_:
            print_json({"original": settled.original, "removed": settled.removed, "kept": settled.kept,
                   "kept_copy": settled.kept_copy})
            return
        out(f"{settled.original}: kept the {settled.kept}; removed {settled.removed}")
        stderr.print(f"the text not kept is in {settled.kept_copy}", markup=False)
        return
    done = settle(ws, decision_id, keep, reason, by)
    refresh_pages(ws)
    if json_:
        print_json({"id": done.decision.id, "kept": done.kept, "retracted": done.retracted, "kept_copy": done.kept_copy})
        return
    out(f"{done.decision.id} settled: kept {done.kept}")
    for other in done.retracted:
        out(f"  {other} retracted")
    if done.kept_copy:
        stderr.print(f"the note's previous text is kept in {done.kept_copy}", markup=False)


@app.command("renumber")
def renumber_command(decision_id: Annotated[str, typer.Argument(metavar="ID", help="An id two notes share.")],
             path: Annotated[str | None, typer.Option("--path", metavar="NOTE", help="The note to give a new id "
                                                      "(default: the one the ledger has no record of).")] = None,
             by: ByOption = None, vault: VaultOption = None, json_: JsonOption = False) -> None:
    """Give one of two notes that share an id a new id: its file name and the links to it follow."""
    ws = workspace(vault)
    done = renumber(ws, decision_id, path, by)
    refresh_pages(ws)
    if json_:
        print_json({"old_id": done.old_id, "new_id": done.new_id, "path": done.path, "old_path": done.old_path,
               "relinked": done.relinked})
        return
    out(f"{done.old_id} -> {done.new_id}: {done.path}")
    for relinked in done.relinked:
        out(f"  links rewritten in {relinked}")


@app.command("merge-note")
def merge_note_command(base: Annotated[Path, typer.Argument(help="The common ancestor (git's %O).")],
               ours: Annotated[Path, typer.Argument(help="This clone's version, merged in place (%A).")],
               theirs: Annotated[Path, typer.Argument(help="The other clone's version (%B).")],
               shown: Annotated[str, typer.Argument(help="The note's path in the repository (%P).")]) -> None:
    """git's merge driver for decision notes (set up by init); not for use by hand."""
    code = merge_note(base, ours, theirs, shown)
    if code:
        raise typer.Exit(code)
