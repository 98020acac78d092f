"""`vault-tools import`: owner-ask ledgers and ADR folders become decision notes, once."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from vault_tools.history import histories_by_id
from vault_tools.importers import adr
from vault_tools.layout import device_tag
from vault_tools.services.workspace import Workspace
from vault_tools.vault import Vault

from .helpers import CORPORA, counter_of, snapshot, stat_all, write

OWNER_ASK = Path(__file__).resolve().parents[2] / "shared" / "formats" / "owner-ask"
needs_corpora = pytest.mark.skipif(not CORPORA.is_dir(), reason=f"the ADR corpora are not at {CORPORA}")
needs_owner_ask = pytest.mark.skipif(not OWNER_ASK.is_dir(), reason=f"the owner-ask sample is not at {OWNER_ASK}")


def by_origin(vault: Path) -> dict[str, dict]:
    """Foreign identity -> the decision note it became (as `list --json` shows it)."""
    ws = Workspace(Vault(vault))
    origins = {e.id: e.origin for e in ws.vault.ledger.read() if e.event == "imported"}
    state = ws.state()
    found = {}
    for decision in state.decisions:
        if decision.id in origins:
            found[origins[decision.id]] = decision
    return found


def import_json(cli, *args: str) -> dict:
    done = cli("import", *args, "--json")
    assert done.code == 0, done.err
    return json.loads(done.out)


def assert_vault_is_clean(cli) -> None:
    assert cli("build", "--check").code == 0  # the pages are current
    linted = cli("lint", "--json")
    report = json.loads(linted.out)
    errors = [d for d in report["diagnostics"] if d["severity"] == "error"]
    assert linted.code == 0 and report["errors"] == 0 and errors == [], errors[:5]


# -- owner-ask -----------------------------------------------------------------------

@needs_owner_ask
def test_owner_ask_sample_becomes_questions_rulings_and_a_chain(cli, vault):
    before = stat_all(OWNER_ASK)
    report = import_json(cli, "owner-ask", str(OWNER_ASK))
    assert report["files_read"] == 2 and report["skipped"] == [] and report["warnings"] == []
    assert len(report["created"]) == 11 and len(report["reviews"]) == 1
    notes = by_origin(vault)
    status = {key.split(":")[1]: d.status.value for key, d in notes.items() if key.startswith("owner-ask:")}
    assert status == {"R-001": "ruled", "R-002": "ruled", "R-003": "superseded", "R-004": "superseded",
                      "R-005": "ruled", "R-006": "ruled", "R-007": "ruled", "R-008": "ruled",
                      "A-001": "open", "A-002": "withdrawn", "A-009": "open"}
    # The chain R-003 -> R-004 -> R-005, each named by id in the newer ruling's text.
    r3, r4, r5 = (notes[f"owner-ask:R-00{n}"] for n in (3, 4, 5))
    assert r3.superseded_by == f"[[{r4.title}]]" and r4.superseded_by == f"[[{r5.title}]]"
    assert r5.supersedes == (f"[[{r4.title}]]",) and "overrides R-004" in (r5.reason or "")
    # An ask answered by a ruling is that ruling's question; its reask reason is kept.
    assert r5.asked_at is not None and "should sign-off come back?" in r5.body
    assert r5.reask_reason == "A reply went out without sign-off that the owner would not have approved."
    assert notes["owner-ask:A-002"].reason == "The July ruling already covers every article, old and new; nothing to ask."
    # The event time is the owner's; the record time (the ledger) is the import.
    assert r3.ruled_at.isoformat() == "2026-09-16T11:00:00"
    # "Overrides the 2026-07-17 footer ruling" names no id: an open question for the owner, naming R-001.
    review = notes["review:owner-ask:R-008"]
    assert review.status.value == "open" and notes["owner-ask:R-001"].id in review.body
    assert notes["owner-ask:R-001"].status.value == "ruled"
    # ... and the import does not say on the owner's behalf that both stand: the pair is unsettled until the
    # owner answers the review question
    r1, r8 = notes["owner-ask:R-001"], notes["owner-ask:R-008"]
    assert r8.alongside == ()
    # lint says so as a warning naming the review question (the importer has asked): pre-commit is not blocked
    linted = cli("lint", "--json")
    lint = json.loads(linted.out)
    assert linted.code == 0 and [d for d in lint["diagnostics"] if d["severity"] == "error"] == []
    [waiting] = [d for d in lint["diagnostics"] if d["code"] == "VT016"]
    assert waiting["severity"] == "warning" and waiting["path"] == r8.path and r1.id in waiting["message"]
    assert f"the import's review question {counter_of(review.id)} asks the owner" in waiting["message"]
    assert stat_all(OWNER_ASK) == before  # the foreign files are read, never written

    again = snapshot(vault)
    second = import_json(cli, "owner-ask", str(OWNER_ASK))
    assert second["created"] == [] and second["reviews"] == [] and len(second["already_imported"]) == 12
    assert snapshot(vault) == again


@needs_owner_ask
def test_owner_ask_dry_run_previews_and_writes_nothing(cli, vault):
    before = snapshot(vault)
    done = cli("import", "owner-ask", str(OWNER_ASK), "--dry-run")
    assert done.code == 0
    assert "would import R-004 as a new note (superseded)" in done.out
    assert "would ask for review: Does R-008 replace R-001?" in done.out
    assert snapshot(vault) == before


def test_owner_ask_latest_row_wins_unknown_fields_and_bad_lines_are_reported(cli, vault, tmp_path):
    state = tmp_path / "ledger" / "state"
    rows = [
        {"id": "A-1", "status": "open", "topicKeys": ["backups"], "question": "Should backups run every night at two?",
         "askedAt": "2026-01-02T09:00:00+09:00", "reaskReason": "The old backup window clashed with the deploys."},
        {"id": "A-1", "status": "withdrawn", "topicKeys": ["backups"], "question": "Should backups run every night at two?",
         "withdrawnAt": "2026-01-03T09:00:00+09:00", "reason": "Backups moved to the hosting provider entirely.",
         "priority": "high"},
    ]
    write(state / "owner-asks.jsonl", "\n".join(json.dumps(r) for r in rows) + "\n{not json\n")
    write(state / "owner-rulings.jsonl",
          json.dumps({"id": "R-1", "topicKeys": ["Backups"], "ruledAt": "2026-01-04", "summary": "short"}) + "\n")
    report = import_json(cli, "owner-ask", str(tmp_path / "ledger"))
    assert [o["label"] for o in report["created"]] == ["A-1"] and report["created"][0]["status"] == "withdrawn"
    assert {s["file"]: s["why"] for s in report["skipped"]} == {
        "state/owner-asks.jsonl:3": "not a JSON object (Expecting property name enclosed in double quotes)",
        "state/owner-rulings.jsonl:1": "R-1's summary is under 20 characters: 'short'"}
    assert report["warnings"] == ["state/owner-asks.jsonl:2: field 'priority' is not understood; it was not imported"]
    note = by_origin(vault)["owner-ask:A-1"]
    assert note.reason == "Backups moved to the hosting provider entirely."
    assert note.reask_reason == "The old backup window clashed with the deploys."  # kept from the earlier row


def test_import_of_a_folder_without_the_ledger_is_refused(cli, vault, tmp_path):
    (tmp_path / "empty").mkdir()
    done = cli("import", "owner-ask", str(tmp_path / "empty"))
    assert done.code == 2 and "has neither state/owner-rulings.jsonl nor state/owner-asks.jsonl" in done.err
    assert cli("import", "csv", str(tmp_path / "empty")).code == 2


# -- ADRs: every corpus ----------------------------------------------------------------

# corpus: (files read, imported, skipped, review questions)
CORPUS_COUNTS = {
    "adr-tools": (12, 9, 3, 0),
    "adr-madr": (31, 19, 12, 0),
    "adr-moj-cloud-platform": (50, 49, 1, 0),
    "adr-govuk-aws": (39, 38, 1, 1),
    "adr-jabref": (72, 70, 2, 0),
}
# Real supersession chains: (old file, new file) under the corpus.
CHAINS = {
    "adr-moj-cloud-platform": [("architecture-decision-record/021-Multi-cluster.md",
                                "architecture-decision-record/036-multi-cluster.md")],
    "adr-govuk-aws": [("docs/architecture/decisions/0004-dns-definitions-for-hosts-and-services.md",
                       "docs/architecture/decisions/0015-dns-infrastructure.md")],
    "adr-jabref": [("docs/decisions/0045-use-input-flag-always-for-input-files.md",
                    "docs/decisions/0057-allow-positional-input-file-argument.md")],
}


@needs_corpora
@pytest.mark.parametrize("corpus", sorted(CORPUS_COUNTS))
def test_every_adr_corpus_imports_once_with_its_chains(cli, vault, corpus):
    root = CORPORA / corpus
    before = stat_all(root)
    files, imported, skipped, reviews = CORPUS_COUNTS[corpus]
    empty = snapshot(vault)
    preview = import_json(cli, "adr", str(root), "--dry-run")
    assert snapshot(vault) == empty  # a dry run writes nothing
    report = import_json(cli, "adr", str(root))
    assert (report["files_read"], len(report["created"]), len(report["skipped"]), len(report["reviews"])) == \
        (files, imported, skipped, reviews), report["skipped"]
    assert [o["key"] for o in preview["created"]] == [o["key"] for o in report["created"]]
    assert all(s["why"] for s in report["skipped"])
    notes = by_origin(vault)
    for old, new in CHAINS.get(corpus, []):
        old_note, new_note = notes[f"adr:{corpus}/{old}"], notes[f"adr:{corpus}/{new}"]
        assert old_note.status.value == "superseded" and old_note.superseded_by == f"[[{new_note.title}]]"
        assert new_note.status.value == "ruled" and new_note.supersedes == (f"[[{old_note.title}]]",)
        assert old_note.source == f"{corpus}/{old}"
    superseded = [n for n in notes.values() if n.status.value == "superseded"]
    assert len(superseded) == len(CHAINS.get(corpus, []))
    assert_vault_is_clean(cli)
    assert stat_all(root) == before  # ADR files are never written

    again = snapshot(vault)
    second = import_json(cli, "adr", str(root))
    assert second["created"] == [] and len(second["already_imported"]) == imported + reviews
    assert snapshot(vault) == again


@needs_corpora
def test_corpus_quirks_statuses_and_dates(cli, vault):
    import_json(cli, "adr", str(CORPORA / "adr-moj-cloud-platform"))
    notes = {key.rsplit("/", 1)[-1]: d for key, d in by_origin(vault).items()}
    rejected = notes["018-Dedicated-Ingress-Controllers.md"]
    assert rejected.status.value == "ruled" and rejected.summary.startswith("Rejected: ")
    assert notes["022-EKS.md"].summary == "Architecture decision 22: EKS"  # a title too short to stand alone
    proposed = [n for n in notes.values() if n.status.value == "open"]
    assert len(proposed) == 8  # 6 "🤔 Proposed" and 2 "🤔 Incomplete"
    assert str(notes["021-Multi-cluster.md"].ruled_at) == "2021-05-11"
    assert notes["021-Multi-cluster.md"].topics == ("multi-cluster",)


@needs_corpora
def test_partial_supersession_asks_the_owner(cli, vault):
    import_json(cli, "adr", str(CORPORA / "adr-govuk-aws"))
    notes = by_origin(vault)
    old = notes["adr:adr-govuk-aws/docs/architecture/decisions/0003-aws-networking-outline.md"]
    assert old.status.value == "ruled"  # "Partly superseded" replaces nothing in full
    review = next(d for key, d in notes.items() if key.startswith("review:"))
    assert review.status.value == "open" and "in part supersedes ADR 3" in review.summary


def adr_folder(root: Path) -> Path:
    """A small ADR folder in each format, with the quirks the generators really write."""
    folder = root / "repo" / "doc" / "adr"
    write(folder / "0001-record-architecture-decisions.md", """# 1. Record architecture decisions

Date: 2016-02-12

## Status

Accepted

Superceded by [2. Use MADR instead](0002-use-madr-instead.md)

## Context

We need to record the architectural decisions made on this project.
""")
    write(folder / "0002-use-madr-instead.md", """# 2. Use MADR instead

Date: 2017-03-01

## Status

Accepted

Supercedes [1. Record architecture decisions](0001-record-architecture-decisions.md)

Superseded by [3. Use log4brains](0003-use-log4brains.md)
""")
    write(folder / "0003-use-log4brains.md", """---
status: accepted
date: 2018-04-02
decision-makers: [Alice, Bob]
---
# Use log4brains

## Decision Outcome

Chosen option: "log4brains", because it publishes the records.
""")
    write(folder / "0004-store-dates-in-utc.md", """# Store dates in UTC

* Status: deprecated
* Deciders: Carol
* Date: 2019-05-03

## Context and Problem Statement

Which time zone should stored dates use?
""")
    write(folder / "20200101-use-postgres.md", """# Use Postgres

- Status: rejected
- Deciders: Dan, Erin
- Date: 2020-01-01
- Tags: database, storage

## Context

Which database?
""")
    write(folder / "0005-try-graphql.md", "# 5. Try GraphQL\n\nDate: 2021-01-01\n\n## Status\n\nProposed\n")
    write(folder / "0006-weird.md", "# 6. Weird\n\n## Status\n\nMaybe later\n")
    write(folder / "README.md", "# Decisions\n")
    return root / "repo"


def test_each_adr_format_is_detected_and_mapped(tmp_path):
    parsed = adr.parse(adr_folder(tmp_path))
    records = {r.label: r for r in parsed.records}
    assert {s.file: s.why for s in parsed.skipped} == {
        "doc/adr/README.md": "not an ADR file name (NNNN-title.md or YYYYMMDD-title.md)"}
    weird = records["ADR 6"]  # a status nobody defined: a question for the owner, never a current ruling
    assert weird.status == "open" and weird.summary == 'Does ADR 6 stand (Weird)? Its status reads "Maybe later".'
    assert "imported as a question to review" in weird.remarks[-1]
    assert records["ADR 2"].supersedes == ("adr:repo/doc/adr/0001-record-architecture-decisions.md",)
    assert records["ADR 3"].supersedes == ("adr:repo/doc/adr/0002-use-madr-instead.md",)
    assert records["ADR 3"].deciders == ("Alice", "Bob") and str(records["ADR 3"].ruled_at) == "2018-04-02"
    assert records["ADR 4"].status == "retracted" and records["ADR 4"].deciders == ("Carol",)
    postgres = records["ADR 20200101"]
    assert postgres.status == "ruled" and postgres.summary == "Rejected: Use Postgres"
    assert postgres.topics == ("database", "storage") and str(postgres.ruled_at) == "2020-01-01"
    assert records["ADR 5"].status == "open"
    order = [r.label for r in parsed.records]
    assert order.index("ADR 1") < order.index("ADR 2") < order.index("ADR 3")


def test_an_adr_chain_written_by_adr_tools_is_kept_in_the_vault(cli, vault, tmp_path):
    repo = adr_folder(tmp_path)
    report = import_json(cli, "adr", str(repo))
    assert len(report["created"]) == 7
    notes = {key.rsplit("/", 1)[-1]: d for key, d in by_origin(vault).items()}
    first, second, third = (notes[name] for name in ("0001-record-architecture-decisions.md",
                                                      "0002-use-madr-instead.md", "0003-use-log4brains.md"))
    assert (first.status.value, second.status.value, third.status.value) == ("superseded", "superseded", "ruled")
    assert first.superseded_by == f"[[{second.title}]]" and second.superseded_by == f"[[{third.title}]]"
    assert third.ruled_by == "Alice, Bob"
    assert notes["0004-store-dates-in-utc.md"].status.value == "retracted"
    events = histories_by_id(Workspace(Vault(vault)).vault.ledger.read())
    assert [e.event for e in events[notes["0004-store-dates-in-utc.md"].id].events] == \
        ["ruled", "sealed", "imported", "retracted"]
    assert_vault_is_clean(cli)
    # A later ADR in the same folder supersedes one imported before: the second run links them.
    write(repo / "doc" / "adr" / "0007-use-an-adr-site.md",
          "# 7. Use an ADR site\n\nDate: 2022-02-02\n\n## Status\n\nAccepted\n\n"
          "Supersedes [3. Use log4brains](0003-use-log4brains.md)\n")
    again = import_json(cli, "adr", str(repo))
    assert [o["label"] for o in again["created"]] == ["ADR 7"]
    assert by_origin(vault)["adr:repo/doc/adr/0003-use-log4brains.md"].status.value == "superseded"
    assert_vault_is_clean(cli)


def test_an_imported_adr_reads_as_its_own_decision_not_as_where_it_came_from(cli, vault, tmp_path):
    """The `## Ruling` of an imported ADR holds its title, the importer's line and the ADR's preamble (a `Date:`
    line): `lookup` and what an agent is told show the ADR's decision section (MADR's "Decision Outcome",
    Nygard's "Decision", to its first sub-heading, links as their text) in their place; an open one's too. The
    ADR's template words are shown, never compared."""
    repo = adr_folder(tmp_path)
    write(repo / "doc" / "adr" / "0008-keep-one-queue.md", "# 8. Keep one queue\n\nDate: 2022-03-03\n\n"
          "## Status\n\nAccepted\n\n## Context\n\nJobs pile up.\n\n## Decision\n\nWe will run every job "
          "through a single [Redis](https://redis.io) queue.\n\n### Details\n\nWorkers poll it.\n\n"
          "## Consequences\n\nOne place to watch.\n")
    write(repo / "doc" / "adr" / "0009-cache-pages.md", "# 9. Cache rendered pages\n\nDate: 2022-04-04\n\n"
          "## Status\n\nProposed\n\n## Decision\n\nWe will keep rendered pages in a CDN for an hour.\n")
    import_json(cli, "adr", str(repo))
    shown = cli("lookup", "use-log4brains")
    assert 'Chosen option: "log4brains", because it publishes the records.' in shown.out
    assert "_Imported from" not in shown.out
    queue = cli("lookup", "keep-one-queue").out
    assert "through a single Redis queue" in queue and "Date:" not in queue and "Workers poll it" not in queue
    refused = cli("ask", "Should we keep one queue?", "--topic", "job-queue")
    assert refused.code == 1 and "through a single Redis queue." in refused.err
    assert "_Imported from" not in refused.err and "Date:" not in refused.err
    open_one = cli("ask", "Should rendered pages be cached?", "--topic", "page-cache")
    assert open_one.code == 1 and "keep rendered pages in a CDN for an hour" in open_one.err
    assert "_Imported from" not in open_one.err
    # "Chosen option: ..." is MADR's wording, not the matter: a question sharing only it goes through
    assert cli("ask", "Which option is best for the build?", "--topic", "build-choice").code == 0


def test_import_progress_is_not_shown_when_piped(vault, tmp_path):
    from .helpers import vt
    repo = adr_folder(tmp_path)
    done = vt("import", "adr", str(repo), "--vault", str(vault), cwd=tmp_path)
    assert done.code == 0 and "\x1b[" not in done.err and "━" not in done.err
    assert done.err.strip().splitlines()[-1] == \
        "8 file(s) read; imported 7, 0 for review, 0 imported before, 1 skipped"


def test_import_progress_is_shown_on_a_terminal(vault, tmp_path):
    from .helpers import vt_on_terminal
    repo = adr_folder(tmp_path)
    done = vt_on_terminal("import", "adr", str(repo), "--vault", str(vault), cwd=tmp_path)
    assert done.code == 0 and "importing adr" in done.err and "\x1b[" in done.err
    assert "8 file(s) read; imported 7" in done.err


def test_import_into_a_vault_with_a_broken_decision_note_is_refused(cli, vault, tmp_path):
    write(vault / "Decisions" / "D-0001 Broken.md", "---\ntype: decision\nid: D-0001\nstatus: [\n---\n")
    before = snapshot(vault)
    done = cli("import", "adr", str(adr_folder(tmp_path)))
    assert done.code == 3 and "D-0001 Broken.md" in done.err
    assert snapshot(vault) == before



EDGES = Path(__file__).parent / "data" / "adr-edges"


def test_every_supersession_form_is_applied_and_no_unplaced_status_is_current(cli, vault):
    """Hand-made ADRs in the shapes real sets use (tests/data/adr-edges/README.md): every supersession is applied
    whichever side states it and however; a status the importer cannot place, or "superseded" with no
    successor, is a question for the owner, never a current ruling; numbered headings give clean summaries and
    topics; a file name with `_` is read."""
    report = import_json(cli, "adr", str(EDGES))
    assert [s["file"] for s in report["skipped"]] == ["README.md"]
    notes = {key.rsplit("/", 1)[-1].split("-")[0].split("_")[0]: d for key, d in by_origin(vault).items()}
    assert {number: note.status.value for number, note in notes.items()} == {
        "0001": "superseded", "0002": "superseded", "0003": "ruled", "0004": "superseded", "0005": "ruled",
        "0006": "superseded", "0007": "ruled", "0008": "open", "0009": "open", "0010": "retracted"}
    for old, new in (("0001", "0003"), ("0002", "0003"), ("0004", "0005"), ("0006", "0007")):
        assert notes[old].superseded_by == f"[[{notes[new].title}]]", old
    assert notes["0001"].summary == "Use PSR-16 for caching" and notes["0001"].topics == ("use-psr-16-for-caching",)
    assert notes["0002"].summary == "Transport layer responsibilities"
    assert "Frozen until the next major version" in notes["0008"].summary and notes["0008"].summary.endswith(".")
    assert "no ADR says what replaced it" in notes["0009"].summary
    current = {r["summary"] for r in json.loads(cli("context", "--json").out)["rulings"]}
    assert current == {notes[n].summary for n in ("0003", "0005", "0007")}
    assert_vault_is_clean(cli)


KILLED_SET = {
    "0001-keep-sessions-in-memory.md": "# 1. Keep sessions in memory\n\nDate: 2024-01-10\n\n## Status\n\n"
                                        "Superseded by [2. Keep sessions in Redis](0002-keep-sessions-in-redis.md)\n",
    "0002-keep-sessions-in-redis.md": "# 2. Keep sessions in Redis\n\nDate: 2024-02-10\n\n## Status\n\nAccepted\n\n"
                                      "Supersedes [1. Keep sessions in memory](0001-keep-sessions-in-memory.md)\n",
    "0003-deploy-on-fridays.md": "# 3. Deploy on Fridays\n\nDate: 2024-03-10\n\n## Status\n\nDeprecated\n",
    "0004-log-in-logfmt-lines.md": "# 4. Log in logfmt lines\n\nDate: 2024-04-10\n\n## Status\n\nAccepted\n",
}


class Killed(BaseException):
    """Stands for kill -9: nothing after it runs."""


def state_of(vault: Path) -> tuple[dict[str, str], list[tuple[str, ...]]]:
    """The notes' texts, and each record's events (kind and id, in order), as a clean import leaves them, each
    vault's device tag taken out (in the shared layout every vault draws its own)."""
    tag = device_tag(vault, create=False)

    def counted(text: str) -> str:
        return text.replace(f"-{tag}", "") if tag else text
    texts = {counted(p.name): counted(p.read_text(encoding="utf-8")) for p in sorted((vault / "Decisions").glob("*.md"))}
    records = sorted(tuple(counted(f"{e.event} {e.id}") for e in h.events)
                     for h in Vault(vault).ledger.histories().values())
    return texts, records


def test_an_import_killed_at_any_write_then_run_again_ends_as_one_clean_import(tmp_path, monkeypatch, capsys):
    """A kill before each write the import makes (ledger appends, notes, pages) of a superseded, a superseding, a
    deprecated and an accepted ADR; then the same import again, as the docs say: the same notes and the same
    record as one import never cut short."""
    from vault_tools import durable
    from vault_tools.cli import run
    from vault_tools.ledger import Ledger

    from .helpers import make_vault

    folder = tmp_path / "adr"
    for name, text in KILLED_SET.items():
        write(folder / name, text)

    def import_into(vault: Path) -> None:
        capsys.readouterr()
        assert run(["import", "adr", str(folder), "--vault", str(vault)]) == 0, capsys.readouterr().err

    clean = make_vault(tmp_path / "clean")
    steps = {"n": 0, "kill": -1}
    real_append, real_write = Ledger.append, durable.write_files

    def step() -> None:
        steps["n"] += 1
        if steps["n"] - 1 == steps["kill"]:
            raise Killed

    def append(self, events):
        events = list(events)
        if events:
            step()
        return real_append(self, events)

    def write_files(writes, **options):
        step()
        return real_write(writes, **options)

    monkeypatch.setattr(Ledger, "append", append)
    monkeypatch.setattr(durable, "write_files", write_files)
    import_into(clean)
    expected, writes = state_of(clean), steps["n"]
    assert writes >= 10 and expected[0] and len(expected[1]) == 4
    for kill in range(writes):
        vault = make_vault(tmp_path / f"killed-{kill}")
        steps.update(n=0, kill=kill)
        with pytest.raises(Killed):
            run(["import", "adr", str(folder), "--vault", str(vault)])
        steps.update(n=0, kill=-1)
        import_into(vault)
        assert state_of(vault) == expected, f"killed before write {kill}"
        code = run(["lint", "--vault", str(vault)])
        assert code == 0, capsys.readouterr().out


@needs_owner_ask
def test_stats_after_an_owner_ask_import_are_the_source_ledgers_and_the_review_questions_apart(cli, vault):
    """The importer's review questions are its own, not the owner's: `stats` counts them apart, and the owner's
    figures equal what the source ledger says (its asks' latest rows)."""
    import_json(cli, "owner-ask", str(OWNER_ASK))
    asks: dict[str, dict] = {}
    for line in (OWNER_ASK / "state" / "owner-asks.jsonl").read_text(encoding="utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            asks[row["id"]] = {**asks.get(row["id"], {}), **row}
    figures = json.loads(cli("stats", "--json").out)
    assert figures["questions"]["open"] == sum(a["status"] == "open" for a in asks.values())
    assert figures["questions"]["withdrawn"] == sum(a["status"] == "withdrawn" for a in asks.values())
    assert figures["reasked_with_reason"] == sum(bool(a.get("reaskReason")) for a in asks.values())
    assert figures["import_review_questions"] == {"total": 1, "open": 1}
    assert "import review questions (not counted above): 1 (1 open)" in cli("stats").out


def test_owner_ask_reports_every_row_it_does_not_import(cli, vault, tmp_path):
    state = tmp_path / "ledger" / "state"
    rulings = [{"id": "R-1", "topicKeys": ["footer"], "ruledAt": "2026-09-01T10:00:00Z",
                "summary": "Footers carry only the author bio from now on."},
               {"id": "R-2", "topicKeys": ["footer"], "ruledAt": "2026-09-02T10:00:00Z", "summary": "Too short."}]
    asks = [{"id": "A-1", "status": "answered", "rulingId": "R-2", "question": "What goes in the article footer?",
             "topicKeys": ["footer"], "askedAt": "2026-08-30T10:00:00Z"},
            {"id": "A-2", "status": "answered", "rulingId": "R-9", "question": "Which day does the newsletter go out?",
             "topicKeys": ["newsletter-day"], "askedAt": "2026-08-30T10:00:00Z"}]
    write(state / "owner-rulings.jsonl", "".join(json.dumps(r) + "\n" for r in rulings))
    write(state / "owner-asks.jsonl", "".join(json.dumps(a) + "\n" for a in asks))
    report = import_json(cli, "owner-ask", str(tmp_path / "ledger"))
    assert [o["key"] for o in report["created"]] == ["owner-ask:R-1"]
    said = {s["file"].rsplit(":", 1)[0].rsplit("/", 1)[-1] + ":" + s["file"].rsplit(":", 1)[1]: s["why"]
            for s in report["skipped"]}
    assert said == {
        "owner-rulings.jsonl:2": "R-2's summary is under 20 characters: 'Too short.'",
        "owner-asks.jsonl:1": "A-1 is answered by R-2, which could not be imported from owner-rulings.jsonl",
        "owner-asks.jsonl:2": "A-2 is answered by R-9, which is not in owner-rulings.jsonl"}
