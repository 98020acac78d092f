"""Commands on the record's past: history, as-of, changed, export; and version."""
from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

from .. import __version__
from ..errors import UsageError
from ..shapes import decision_json, when

if TYPE_CHECKING:
    pass

from ..commands.history import changed, export_jsonl, export_markdown, export_records, history, rulings_as_of, text_diff
from ..history import MADE
from .common import JsonOption, RecordedOption, VaultOption, app, decision_line, out, print_json, stderr, workspace


@app.command("history")
def history_command(decision_id: Annotated[str, typer.Argument(metavar="ID", help="A decision id, like D-0007.")],
            vault: VaultOption = None, json_: JsonOption = False) -> None:
    """Every version and lifecycle event of a decision, oldest first, with what each changed in its text."""
    found = history(workspace(vault), decision_id)
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
        print_json({"id": found.id, "events": items, "remarks": found.remarks}
                   | ({"conflict": found.conflict} if found.conflict else {}))
        return
    if found.conflict:
        out(f"IN CONFLICT: {found.conflict}")
    before = None
    for version in found.versions:
        event = version.event
        extra = [f"reason: {event.reason}"] if event.reason else []
        if event.successor:
            extra.append(f"{'revision' if event.event == 'edit-rejected' else 'successor'}: {event.successor}")
        if event.origin and not event.origin.startswith(MADE):  # not the mark of a note as made (`twins`)
            extra.append(f"from {event.origin}")
        out(f"{event.at}  {event.event} by {event.actor}  {event.path}")
        for line in extra:
            out(f"  {line}")
        if version.text is not None:
            if version.taken_from:
                out(f"  (text taken from {version.taken_from})")
            for line in text_diff(before, version):
                out(f"  {line}")
            before = version
    for remark in found.remarks:
        stderr.print(f"note: {remark}", markup=False)


@app.command("as-of")
def as_of(date: Annotated[str, typer.Argument(metavar="DATE", help="A date (its end counts) or date and time, "
                                                                    "in the vault's time zone.")],
          topics: Annotated[list[str] | None, typer.Argument(metavar="[TOPIC]...", help="Only these topics "
                                                                                         "(near spellings count).")] = None,
          recorded: RecordedOption = False, vault: VaultOption = None, json_: JsonOption = False) -> None:
    """The rulings in force on DATE: by when they were decided (ruled_at), or what the vault knew then (--recorded)."""
    ws = workspace(vault)
    found = rulings_as_of(ws, date, topics or [], recorded=recorded)
    if json_:
        print_json([decision_json(s.decision) | {"in_force_since": s.since.isoformat() if s.since else None}
               for s in found])
        return
    if not found:
        stderr.print(f"no ruling in force on {date}" + (f" on {', '.join(topics)}" if topics else ""), markup=False)
    for standing in found:
        out(decision_line(standing.decision, ws))


@app.command("changed")
def changed_command(since: Annotated[str, typer.Option("--since", metavar="DATE", help="From this date (its start) or "
                                                                                "date and time.")],
            until: Annotated[str | None, typer.Option("--until", metavar="DATE", help="Up to this date (its end) "
                                                                                      "or date and time (default: now).")] = None,
            vault: VaultOption = None, json_: JsonOption = False) -> None:
    """What was asked, ruled, superseded, withdrawn or retracted in a period, by when the vault recorded it."""
    ws = workspace(vault)
    found = changed(ws, since, until)
    if json_:
        print_json([{"event": c.event.event, "id": c.event.id, "at": c.event.at, "actor": c.event.actor,
                "summary": c.summary, "reason": c.event.reason, "successor": c.event.successor,
                "ruled_at": when(c.ruled_at), "path": c.event.path} for c in found])
        return
    for change in found:
        event = change.event
        decided = f" (decided {when(change.ruled_at)})" if change.ruled_at is not None else ""
        out(f"{event.at}  {event.event:<10} {event.id}{decided}  {change.summary or ''}".rstrip())
        if event.reason:
            out(f"  because: {event.reason}")
        if event.successor and event.event == "superseded":
            out(f"  by {event.successor}")
    if not found:
        stderr.print("nothing changed in that period", markup=False)


@app.command()
def export(format_: Annotated[str, typer.Option("--format", help="jsonl (one record a line, for `import export`) "
                                                                  "or md (a readable page).")] = "jsonl",
           as_of_: Annotated[str | None, typer.Option("--as-of", metavar="DATE", help="As the decisions stood on "
                                                                                      "this date (default: now).")] = None,
           recorded: RecordedOption = False, vault: VaultOption = None) -> None:
    """A snapshot of every decision, now or as of a date, as JSON lines or Markdown, on stdout."""
    if format_ not in ("jsonl", "md"):
        raise UsageError(f"unknown --format {format_!r} (expected jsonl or md)")
    ws = workspace(vault)
    rows = export_records(ws, as_of_, recorded=recorded)
    typer.echo(export_jsonl(ws, rows, as_of_) if format_ == "jsonl" else export_markdown(rows, as_of_), nl=False)


@app.command()
def version() -> None:
    """Print the version."""
    out(__version__)


# -- running ------------------------------------------------------------------------
