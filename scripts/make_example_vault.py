"""Build example-vault/ from scratch: six months of a small publishing operation.

Low Tide is a weekly newsletter and a blog, run day to day by an agent for its
owner, Ines, who lives in Lisbon. Every decision note is made by the code the
command line and the watcher run (`ask`, `rule`, `withdraw`,
`retract`, `reconcile`), with a clock set to the moment each thing happened in
the story, so the notes, the ledger and the pinned pages agree. Daily notes and
other ordinary notes are written as files, the way the owner writes them in
Obsidian. Finally the pinned pages are built for "today", 2026-11-29, the date
the demo passes with `--today` to `context`, so that what the agent reads never ages
(the pages themselves do not depend on the date).

The vault is laid out as today's `vault-tools init` lays one out: the record in `vault-tools/` (its config,
and the ledger as one file per device, `vault-tools/ledger/k7q2.jsonl`), every id ending with the device's
tag (`D-0014-k7q2`). The tag is fixed, not drawn: before `init`, the device file that `layout.device_tag`
reads outside git (`.vault-tools/devices/`, named after the machine and folder; docs/several-machines.md)
is written with the tag `k7q2`, the one the documentation's examples use. `.vault-tools/` is this device's
own and is not part of the example vault: it is removed once the vault is made.

    .venv/bin/python scripts/make_example_vault.py               # rewrites example-vault/
    .venv/bin/python scripts/make_example_vault.py --out /tmp/v  # somewhere else

The same script gives the same bytes every time.
"""
from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import random
import shutil
import socket
import sys
import tempfile
import uuid
from collections.abc import Callable
from pathlib import Path

from vault_tools import durable, note_edits, notes
from vault_tools.commands.ask import ask
from vault_tools.commands.build import build
from vault_tools.commands.close import retract, withdraw
from vault_tools.commands.rule import rule
from vault_tools.commands.setup import init_vault
from vault_tools.errors import PossibleMatch
from vault_tools.layout import DEVICE_FOLDER, device_tag
from vault_tools.model import Decision, id_number
from vault_tools.reconcile import reconcile
from vault_tools.record_files import LEDGER_FOLDER, LEGACY_LEDGER, RECORD_DIR, STATE_DIR
from vault_tools.services.workspace import Workspace
from vault_tools.starter import install_base, install_templates
from vault_tools.vault import Vault

REPOSITORY = Path(__file__).resolve().parents[1]
DEFAULT_OUT = REPOSITORY / "example-vault"
TIMEZONE = "Europe/Lisbon"
TODAY = dt.date(2026, 11, 29)
DEVICE_TAG = "k7q2"  # the tag the documentation's examples show (`D-0012-k7q2`)

LinkTo = Callable[[str], str]  # decision id -> a wikilink to its note


class StoryClock:
    """The workspace's clock, moved by hand to each moment of the story (local time)."""

    def __init__(self, timezone: dt.tzinfo) -> None:
        self.timezone = timezone
        self.moment = dt.datetime(2026, 6, 1, 9, 0, tzinfo=timezone)

    def set(self, local: str) -> None:
        self.moment = dt.datetime.fromisoformat(local).replace(tzinfo=self.timezone)

    def __call__(self) -> dt.datetime:
        return self.moment.astimezone(dt.UTC)


# -- the vault's Obsidian settings ----------------------------------------------------------

OBSIDIAN_SETTINGS: dict[str, object] = {
    "app.json": {"alwaysUpdateLinks": True, "newLinkFormat": "shortest", "propertiesInDocument": "visible",
                 "readableLineLength": True, "showInlineTitle": True},
    "appearance.json": {"baseFontSize": 16},
    "core-plugins.json": ["file-explorer", "global-search", "switcher", "graph", "backlink", "outgoing-link",
                          "tag-pane", "properties", "page-preview", "daily-notes", "templates", "note-composer",
                          "command-palette", "editor-status", "bookmarks", "outline", "word-count",
                          "file-recovery"],
    "templates.json": {"folder": "Templates", "dateFormat": "YYYY-MM-DD", "timeFormat": "HH:mm"},
    "daily-notes.json": {"folder": "Daily", "format": "YYYY-MM-DD", "template": "Templates/Daily note"},
    "types.json": {"types": {"aliases": "aliases", "tags": "tags", "cssclasses": "multitext",
                             "topics": "multitext", "supersedes": "multitext", "asked_at": "datetime",
                             "ruled_at": "datetime", "due": "date", "revisit_by": "date", "created": "date",
                             "published": "date"}},
}


def judged(command: Callable[..., Decision], *args: object, **options: object) -> Decision:
    """`command` run as an agent runs it that reads the near decisions a refusal shows and finds each another
    matter (the story's questions and rulings each have a matter of their own): again with `not_the_same`."""
    seen: list[str] = []
    while True:
        try:
            return command(*args, **options, not_the_same=seen)
        except PossibleMatch as refusal:
            if set(refusal.nearest) <= set(seen):
                raise
            seen += refusal.nearest


def write_obsidian_settings(root: Path) -> None:
    for name, data in OBSIDIAN_SETTINGS.items():
        write_file(root / ".obsidian" / name, json.dumps(data, indent=2) + "\n")


def write_file(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text.encode("utf-8"))


# -- the decisions, in the order they happened ----------------------------------------------

def owner_rules_in_obsidian(ws: Workspace, decision_id: str, summary: str, ruling: str, source: str) -> None:
    """The owner opens a question in Obsidian, sets it to ruled and writes the answer (the watcher seals it)."""
    decision = ws.find(ws.state(), decision_id)
    note = notes.read_note(ws.vault.path_of(decision))
    text = note_edits.with_fields(note, {"status": "ruled", "summary": summary, "source": source})
    durable.write_note(note, text.rstrip("\n") + f"\n\n## Ruling\n\n{ruling}\n")


def owner_edits_sealed_note(ws: Workspace, decision_id: str, summary: str, addition: str) -> None:
    """The owner types into a sealed ruling in place, as if it were an ordinary note."""
    decision = ws.find(ws.state(), decision_id)
    note = notes.read_note(ws.vault.path_of(decision))
    text = note_edits.with_fields(note, {"summary": summary})
    durable.write_note(note, text.rstrip("\n") + f"\n\n{addition}\n")


def owner_adds_properties(ws: Workspace, decision_id: str, properties: dict[str, object]) -> None:
    """The owner adds their own properties (tags, aliases, pinned) in Obsidian: not an edit of the sealed meaning."""
    decision = ws.find(ws.state(), decision_id)
    note = notes.read_note(ws.vault.path_of(decision))
    durable.write_note(note, note_edits.with_fields(note, properties))


def watcher_pass(ws: Workspace) -> None:
    """What the watcher does once the owner has stopped typing and the sealing delay has passed."""
    reconcile(ws, quiet_before=float("inf"), seal_before=float("inf"))


def record_decisions(ws: Workspace, clock: StoryClock) -> None:
    clock.set("2026-06-02T09:12:00")
    judged(ask, ws, "Which day and time should the newsletter go out each week?", ["newsletter-schedule"], body=(
        "Low Tide's first issue goes out in June. About two thirds of the 1,400 subscribers are in Europe, "
        "most of the rest on the US east coast.\n\n"
        "## Options\n\n"
        "- Tuesday 07:00 Lisbon time\n"
        "- Thursday 07:00 Lisbon time\n"
        "- Sunday 09:00 Lisbon time (a weekend read)"))
    clock.set("2026-06-03T08:30:00")
    rule(ws, "D-0001", "The newsletter goes out every Thursday at 07:00 Lisbon time.",
                 source="[[2026-06-03]] chat with owner",
                 revisit_if="Open rates fall for four issues in a row.",
                 body="Thursday at 07:00: it is in European inboxes with breakfast and waits overnight for the "
                      "US east coast. Buttondown schedules it; the agent checks the draft on Wednesday evening.")

    clock.set("2026-06-03T21:00:00")
    owner_adds_properties(ws, "D-0001", {"tags": ["newsletter"]})
    watcher_pass(ws)

    clock.set("2026-06-04T10:05:00")
    judged(ask, ws, "Do private replies to readers need the owner's sign-off before they are sent?", ["reader-replies"],
                body="Readers answer the newsletter by email, five to fifteen a week. The agent can draft replies "
                     "in minutes; the question is whether Ines reads each one before it goes out.")
    clock.set("2026-06-05T08:45:00")
    rule(ws, "D-0002", "Yes: every private reply to a reader waits for the owner's sign-off.",
                 source="[[2026-06-05]] chat with owner",
                 body="Every reply is a draft until Ines approves it. The agent keeps drafts in [[Reader mail]].")

    clock.set("2026-06-10T14:20:00")
    judged(ask, ws, "Should the blog have a comment section?", ["blog-comments"],
                body="The blog theme offers comments through a hosted service that adds its own scripts.")
    clock.set("2026-06-11T09:10:00")
    rule(ws, "D-0003", "Blog comments stay closed; readers reply by email and the best replies are quoted.",
                 source="[[2026-06-11]] chat with owner",
                 body="No comment section. Each article ends with the reply address, and the best replies "
                      "(with permission) are quoted in the next issue.\n\n"
                      "## Consequences\n\n- No third-party comment scripts on the blog.")

    clock.set("2026-07-16T10:02:00")
    judged(ask, ws, "What should article footers contain?", ["article-footer"],
                body="Articles end abruptly. Other blogs close with a newsletter sign-up, an author bio, "
                     "related links or a sponsor line.")
    clock.set("2026-07-17T08:30:00")
    rule(ws, "D-0004", "Every article footer carries the newsletter link and the author bio.",
                 source="[[2026-07-17]] chat with owner",
                 revisit_if="Promotion policy changes, or readers complain about footers.",
                 body="Footer: one line inviting readers to subscribe, with the link, then the author bio "
                      "(two sentences, no photo).")

    clock.set("2026-07-20T16:40:00")
    judged(ask, ws, "Which images may articles use?", ["image-policy"],
                body="Stock photo sites are cheap but their licences differ, and the agent cannot check "
                     "every one.")
    clock.set("2026-07-21T09:00:00")
    rule(ws, "D-0005", "Articles use only our own photos or CC0 images, each with alt text.",
                 source="[[2026-07-21]] chat with owner",
                 body="Only photos Ines or a guest writer took, or CC0 images (note the source in the caption). "
                      "Every image gets alt text that says what it shows.")

    clock.set("2026-08-04T09:00:00")
    judged(rule, ws, None, "Private replies no longer need sign-off: the agent sends them and logs each in Reader mail.",
                 topics=["reader-replies"], source="[[2026-08-04]] chat with owner", supersedes=["D-0002"],
                 reason="sign-off held replies for up to four days while the owner travelled, and readers noticed.",
                 body="The agent sends replies itself, in the voice of the style guide, and logs each one in "
                      "[[Reader mail]] so Ines can read them later.")

    clock.set("2026-08-12T11:30:00")
    judged(ask, ws, "Should the newsletter accept a sponsor for the autumn issues?", ["sponsorship"],
                body="A notebook maker offered to sponsor six issues from September, one line each.")
    clock.set("2026-08-20T17:05:00")
    withdraw(ws, "D-0007", "The notebook maker withdrew its offer, so there is nothing to decide.",
                     actor="agent")

    clock.set("2026-08-25T10:15:00")
    judged(ask, ws, "How many long articles should the blog publish each month?", ["publishing-cadence"])
    clock.set("2026-08-26T08:50:00")
    rule(ws, "D-0008", "The blog publishes two long articles a month, on the first and third Tuesday.",
                 source="[[2026-08-26]] chat with owner", revisit_by="2027-02-26",
                 revisit_if="The newsletter goes paid, or an article slips twice in a row.")

    clock.set("2026-09-02T18:00:00")
    judged(rule, ws, None, "Typos in published articles are fixed silently; factual errors get a dated correction.",
                 topics=["corrections-policy"], source="chat")
    clock.set("2026-09-05T09:30:00")
    retract(ws, "D-0009", "Recorded in error: the owner was describing another publication's policy, not ours.")

    clock.set("2026-09-07T10:00:00")
    judged(ask, ws, "How do we correct mistakes in published articles?", ["corrections-policy"],
                body="D-0009 was retracted; there is no rule for corrections now.")
    clock.set("2026-09-08T08:40:00")
    rule(ws, "D-0010", "Every change to a published article, typo or fact, gets a dated note at its end.",
                 source="[[2026-09-08]] chat with owner",
                 body="Any change after publication gets a line at the end: *Corrected on DATE: what changed.* "
                      "Readers should never wonder whether a page was quietly rewritten.")
    clock.set("2026-09-08T09:10:00")  # after D-0009, the owner wants every agent to see this one, always
    owner_adds_properties(ws, "D-0010", {"pinned": True})
    watcher_pass(ws)

    clock.set("2026-09-14T09:25:00")
    judged(ask, ws, "Should private replies to readers need the owner's sign-off again?", ["reader-replies"],
                reask_reason="On 2026-09-12 a reply promised a refund the owner had never offered.",
                body="See [[2026-09-12]]. The agent apologised to the reader; no refund was paid.")
    clock.set("2026-09-15T08:35:00")
    rule(ws, "D-0011", "Private replies wait for the owner's sign-off again; a plain thank-you may go at once.",
                 source="[[2026-09-15]] chat with owner", supersedes=["D-0006"],
                 reason="a reply promised a refund the owner never offered, "
                        "so sign-off is back for anything but thanks.",
                 body="Drafts wait in [[Reader mail]] for Ines. A reply that only thanks a reader, with no promise, "
                      "offer or opinion, may go out at once.")

    clock.set("2026-10-13T15:00:00")
    judged(ask, ws, "Should past newsletter issues be published on the blog?", ["newsletter-archive"],
                body="Readers ask for links to old issues; today they exist only in Buttondown.")
    clock.set("2026-10-14T09:20:00")
    owner_rules_in_obsidian(ws, "D-0012", "Each issue goes on the blog archive one week after it is sent.",
                            "Yes, with a week's delay, so subscribers still read it first.",
                            source="[[2026-10-14]] answered in Obsidian")
    watcher_pass(ws)

    clock.set("2026-10-31T10:30:00")
    judged(ask, ws, "Should Low Tide start a paid tier for the newsletter?", ["paid-tier"],
                body="Three readers offered to pay. See [[Paid tier research]] for numbers.\n\n"
                     "## Options\n\n"
                     "- No paid tier\n"
                     "- Paid tier with one extra issue a month\n"
                     "- Voluntary support, everything stays free")

    clock.set("2026-11-05T08:30:00")
    judged(rule, ws, None, "No promotion inside articles: footers carry only the author bio.",
                 topics=["promotion", "article-footer"], source="[[2026-11-05]] chat with owner",
                 supersedes=["D-0004"], scope=["Drafts/**"],
                 reason="readers complained about the subscribe line, so the owner banned promotion inside articles.",
                 body="Articles carry no calls to subscribe, no sponsor lines and no product links. The footer "
                      "is the author bio and nothing else. The newsletter is promoted on its own page only.")

    clock.set("2026-11-05T19:10:00")
    owner_adds_properties(ws, "D-0014", {"aliases": ["Footer rule"], "tags": ["blog"]})
    watcher_pass(ws)

    clock.set("2026-11-10T17:45:00")
    judged(rule, ws, None, "No third-party trackers on the blog; page counts come from the server logs only.",
                 topics=["analytics"], source="[[2026-11-10]] chat with owner",
                 revisit_if="Hosting changes and server logs are no longer available.",
                 terms=["trackers=none", "analytics_budget=0"])

    clock.set("2026-11-20T11:00:00")
    judged(ask, ws, "Which guest essay should run in the December issue?", ["guest-posts"], due="2026-11-30", body=(
        "Two drafts are ready: [[Slow journalism (guest draft)]] by [[Priya Natarajan]], and a photo essay "
        "on the Tagus estuary. The December issue is scheduled for Thursday 3 December."))

    clock.set("2026-11-24T09:40:00")
    judged(ask, ws, "Should the newsletter move from Thursday to Tuesday?", ["newsletter-schedule"],
                reask_reason="Open rates on Thursdays fell from 48% to 39% since October.",
                body="See the open rates in [[Low Tide newsletter]].")

    clock.set("2026-11-26T21:14:00")
    owner_edits_sealed_note(ws, "D-0005", "Articles use our own photos, CC0 images or labelled AI illustrations.",
                            "AI illustrations are fine for abstract topics if the caption says so.")
    watcher_pass(ws)

    clock.set("2026-11-27T16:20:00")
    judged(ask, ws, "Should the agent cross-post new articles to Mastodon?", ["social-crossposting"],
                body="Mastodon brought 60 visits last month from links readers shared by hand.")


# -- ordinary notes, written by the owner ---------------------------------------------------

def ordinary_notes(titles: dict[str, str]) -> dict[str, str]:
    """Vault-relative path -> text of every note that is not a decision."""
    def d(decision_id: str) -> str:
        return f"[[{titles[decision_id]}|{decision_id}]]"


    return {
        "Home.md": """---
aliases:
  - Start here
tags:
  - index
---
# Low Tide

A weekly newsletter (Thursdays) and a blog, run by the agent for Ines.

> [!important] For the agent
> Read [[Open questions]] and [[Decisions log]] at the start of every session.
> Before asking Ines anything, run `vault-tools ask`: if the topic is settled, the answer is in the ruling it names.

## Projects

- [[Low Tide newsletter]]
- [[Blog]]
- [[Paid tier research]]

## Reference

- [[Style guide]]
- [[Reader mail]]
- [[How decisions work here]]
""",
        "Projects/Low Tide newsletter.md": f"""---
type: project
status: active
created: 2026-05-28
tags:
  - newsletter
aliases:
  - Newsletter
---
# Low Tide newsletter

Weekly, Thursday 07:00 Lisbon time ({d("D-0001")}), sent with Buttondown.

## Open rates

| month | issues | open rate |
|---|---:|---:|
| July | 5 | 51% |
| August | 4 | 49% |
| September | 4 | 48% |
| October | 5 | 42% |
| November | 4 | 39% |

> [!question] Moving the send day
> Falling open rates made the agent ask again about the send day: {d("D-0017")}.

## Archive

Issues go on the blog one week after sending ({d("D-0012")}).
""",
        "Projects/Blog.md": f"""---
type: project
status: active
created: 2026-05-28
tags:
  - blog
---
# Blog

Two long articles a month, first and third Tuesday ({d("D-0008")}).

- Comments are closed; replies come by email ({d("D-0003")}).
- Footers carry the author bio only ({d("D-0014")}).
- No third-party trackers ({d("D-0015")}).
- Corrections: a dated note at the end of the article ({d("D-0010")}).

> [!note] Up next
> The first December article is the guest essay, once {d("D-0016")} is answered.
""",
        "Projects/Paid tier research.md": f"""---
type: project
status: exploring
created: 2026-10-30
tags:
  - newsletter
  - money
---
# Paid tier research

Question for Ines: {d("D-0013")}.

- Three readers offered to pay (see [[Reader mail]]).
- Buttondown takes no cut beyond the payment processor's fee.
- A paid tier means a promise of extra issues: about four hours of work a month.

> [!warning] Not decided
> Nothing here is a decision. Do not mention a paid tier to readers until {d("D-0013")} is ruled.
""",
        "Reference/Style guide.md": f"""---
tags:
  - reference
created: 2026-06-01
---
# Style guide

- Plain words, short paragraphs, no exclamation marks.
- Images: our own photos or CC0, always with alt text ({d("D-0005")}).
- Footers: the author bio and nothing else ({d("D-0014")}). Older articles still carry the newsletter link from {d("D-0004")}; they are left as they were.
- Corrections: a dated line at the end ({d("D-0010")}).

> [!tip] Quoting readers
> Ask before quoting a reply, and quote the best replies in the next issue ({d("D-0003")}).
""",
        "Reference/Reader mail.md": f"""---
tags:
  - reference
  - readers
---
# Reader mail

Where the agent keeps reply drafts and the log of what was sent.

> [!important] Sign-off
> Replies wait for Ines, except a plain thank-you ({d("D-0011")}). The rule changed twice: {d("D-0002")}, then {d("D-0006")}.

## Waiting for sign-off

- Reply to M. about the Tagus photo essay (draft, 2026-11-27)

## Sent

- 2026-11-26 thank-you to a reader in Porto
- 2026-11-19 thank-you to a reader in Boston
""",
        "Reference/How decisions work here.md": f"""---
tags:
  - reference
  - meta
---
# How decisions work here

Every decision is one note in `Decisions/`, with a state: open, ruled, superseded, withdrawn or retracted.

- The agent asks with `vault-tools ask`. A settled topic is refused unless the agent says what changed.
- Ines answers in Obsidian (set `status: ruled`, write the Ruling) or in chat, and the agent records it with `vault-tools rule`.
- A ruling is sealed and never edited in place. To change one, write a new note that supersedes it; typing into a sealed note makes a proposed revision instead (like {d("D-0018")}).
- New notes: the **Decision** and **Question** templates in `Templates/`.

> [!info] Pinned pages
> [[Open questions]], [[Decisions log]] and [[Decisions archive]] are generated. Do not edit them.
""",
        "People/Priya Natarajan.md": """---
type: person
role: guest writer
tags:
  - people
---
# Priya Natarajan

Freelance journalist in Goa. Wrote [[Slow journalism (guest draft)]].
""",
        "Drafts/Slow journalism (guest draft).md": f"""---
type: draft
author: "[[Priya Natarajan]]"
status: ready
tags:
  - guest
---
# Slow journalism

*A guest essay for the December issue, waiting for {d("D-0016")}.*

Most news is written to be read within the hour. This essay is about the other kind.
""",
        "Templates/Daily note.md": """---
tags:
  - daily
created: "{{date:YYYY-MM-DD}}"
---
## Log

## Notes
""",
        **daily_notes(d),
    }


def daily_notes(link: LinkTo) -> dict[str, str]:
    days: dict[str, list[str]] = {
        "2026-06-03": ["Chat with Ines about the send day. Thursday, 07:00 Lisbon time: " + link("D-0001") + ".",
                       "Set up the Buttondown schedule."],
        "2026-06-05": ["Ines wants to see every reply before it goes: " + link("D-0002") + "."],
        "2026-06-11": ["No comments on the blog: " + link("D-0003") + "."],
        "2026-07-17": ["Footer contents agreed: newsletter link and author bio, " + link("D-0004") + ".",
                       "Updated the article template on the blog."],
        "2026-07-21": ["Image rules: " + link("D-0005") + ". Removed two stock photos from the June article."],
        "2026-08-04": ["Ines is travelling until the 20th. Replies no longer wait for her: " + link("D-0006") + "."],
        "2026-08-26": ["Blog cadence settled: " + link("D-0008") + "."],
        "2026-09-08": ["Corrections policy, for real this time: " + link("D-0010") + "."],
        "2026-09-12": ["A reply to a reader promised a refund for a paid issue that does not exist. "
                       "Apologised; asked Ines whether replies need sign-off again (" + link("D-0011") + ")."],
        "2026-09-15": ["Sign-off is back: " + link("D-0011") + "."],
        "2026-10-14": ["Ines answered " + link("D-0012") + " in Obsidian; the watcher sealed it."],
        "2026-11-05": ["Three readers complained about the subscribe line in footers. Ines banned promotion "
                       "inside articles: " + link("D-0014") + ", which replaces " + link("D-0004") + "."],
        "2026-11-10": ["Removed the analytics script: " + link("D-0015") + "."],
        "2026-11-26": ["Ines typed a change into the sealed image ruling; the watcher put the ruling back and "
                       "kept her text as a proposed revision, " + link("D-0018") + "."],
        "2026-11-28": ["Guest essay decision due Monday: " + link("D-0016") + ".",
                       "Paid tier still open after four weeks: " + link("D-0013") + "."],
    }
    found = {}
    for day, lines in days.items():
        callout = ""
        if day == "2026-09-12":
            callout = ("\n> [!warning] Refund promise\n"
                       "> No refund was offered by Ines. Check every reply for promises.\n")
        found[f"Daily/{day}.md"] = ("---\ntags:\n  - daily\ncreated: " + day + "\n---\n## Log\n\n"
                                    + "".join(f"- {line}\n" for line in lines) + callout)
    return found


# -- the whole vault ------------------------------------------------------------------------

def fix_device_tag(root: Path, tag: str) -> None:
    """Give the device that makes the vault the tag `tag`, as `layout.device_tag` keeps one outside git: in
    `.vault-tools/devices/`, in a file named after the machine and folder it is for (what it is for is
    written in it too). Checked by asking `device_tag`, so a change in how it is kept fails here."""
    where = f"{socket.gethostname()}:{root.resolve()}"
    name = hashlib.sha256(where.encode("utf-8")).hexdigest()[:16] + ".json"
    write_file(root / STATE_DIR / DEVICE_FOLDER / name, json.dumps({"tag": tag, "for": where}))
    found = device_tag(root, shared=True, create=False)
    if found != tag:
        raise SystemExit(f"the device tag was not fixed to {tag} (vault_tools.layout.device_tag read {found})")


def make_example_vault(root: Path) -> list[Decision]:
    root.mkdir(parents=True)
    write_obsidian_settings(root)
    fix_device_tag(root, DEVICE_TAG)
    init_vault(root, TIMEZONE, shared=True)  # as `vault-tools init --templates` does in a new vault:
    install_templates(root)  # the templates,
    install_base(root)  # and the base of the decision notes
    vault = Vault(root)
    clock = StoryClock(vault.config.tz)
    ws = Workspace(vault, now=clock)
    record_decisions(ws, clock)
    state = ws.state()
    titles = {decision.id: decision.title for decision in state.decisions}
    titles |= {f"D-{id_number(decision.id):04d}": decision.title for decision in state.decisions}  # D-0001 too
    for path, text in ordinary_notes(titles).items():
        write_file(root / path, text)
    clock.set("2026-11-29T08:00:00")
    build(ws)
    decisions = sorted(ws.state().decisions, key=lambda decision: decision.order)
    shutil.rmtree(root / STATE_DIR)  # this device's own (its tag, cache, locks): never carried with the vault
    return decisions


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="folder to (re)create (default: example-vault/)")
    args = parser.parse_args(argv)
    out: Path = args.out.resolve()
    made_before = (out / RECORD_DIR / LEDGER_FOLDER).is_dir() or (out / STATE_DIR / LEGACY_LEDGER).exists()
    if out.exists() and not made_before:
        print(f"{out} exists and is not a vault this script made; not replacing it", file=sys.stderr)
        return 2
    # Made outside any git repository (so the tag is the device's, fixed above, not a clone's), then moved
    # into place.
    # Record identities are random uuids; drawn from a seeded generator here so the example vault
    # regenerates byte for byte.
    seeded = random.Random(20261129)
    real_uuid4 = uuid.uuid4
    uuid.uuid4 = lambda: uuid.UUID(int=seeded.getrandbits(128), version=4)
    try:
        with tempfile.TemporaryDirectory() as scratch:
            made = Path(scratch) / out.name
            decisions = make_example_vault(made)
            if out.exists():
                shutil.rmtree(out)
            shutil.copytree(made, out)
    finally:
        uuid.uuid4 = real_uuid4
    print(f"wrote {out} with {len(decisions)} decision notes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
