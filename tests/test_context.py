"""What the agent reads: `context --budget`, never past the budget, complete where it matters."""
from __future__ import annotations

import datetime as dt
import json
import re
import subprocess
import sys
import time
import zoneinfo
from pathlib import Path

import pytest

from vault_tools.agent_view import BUDGETS, Budget, agent_context, estimate_tokens, measure
from vault_tools.links import LinkResolver
from vault_tools.model import Decision, Status
from vault_tools.pages import Settings

from .helpers import FOOTER, PAST_RACY_SECONDS, decision

TODAY = "2026-11-29"
TZ = zoneinfo.ZoneInfo("Asia/Tokyo")
LAST_LINE = re.compile(r"^Left out: .*`vault-tools lookup TOPIC` shows the rulings on a topic and what they replaced\.$")


def synthetic(count: int, open_every: int = 40, summary_chars: int = 140) -> list[Decision]:
    """`count` decisions as a large vault holds them: rulings on many topics, some superseded, and a
    backlog of open questions that does not grow with the record (at most 10)."""
    found = []
    for n in range(1, count + 1):
        when = dt.datetime(2024, 1, 1, 9, tzinfo=TZ) + dt.timedelta(hours=7 * n)
        text = f"Ruling {n} on area {n % 97}: " + "the agent handles routine matters " * 8
        base = dict(id=f"D-{n:05d}", topics=(f"area-{n % 97}-part-{n % 13}",), summary=text[:summary_chars],
                    path=f"Decisions/D-{n:05d} Note.md")
        if n % open_every == 0 and n <= 10 * open_every:
            found.append(Decision(status=Status.OPEN, asked_at=when, asked_by="agent", **base))  # type: ignore[arg-type]
        elif n % 5 == 0 and n > 1:
            found.append(Decision(status=Status.SUPERSEDED, ruled_at=when, superseded_by=f"[[D-{n + 1:05d} Note]]",
                                  reason="The owner changed course after a review.", **base))  # type: ignore[arg-type]
        else:
            supersedes = (f"[[D-{n - 1:05d} Note]]",) if n % 5 == 1 and n > 1 else ()
            found.append(Decision(status=Status.RULED, ruled_at=when, ruled_by="owner", supersedes=supersedes,
                                  **base))  # type: ignore[arg-type]
    return found


def context_of(decisions: list[Decision], budget: Budget, today: dt.date = dt.date(2026, 11, 29)):
    return agent_context(decisions, LinkResolver(decisions), today, TZ, Settings(), budget)


@pytest.mark.parametrize("size", [10, 100, 1000, 10000])
@pytest.mark.parametrize("name", sorted(BUDGETS))
def test_every_budget_holds_at_every_size_with_every_open_question_and_topic(size, name):
    decisions = synthetic(size)
    budget = BUDGETS[name]
    found = context_of(decisions, budget)
    text = found.text
    assert budget.fits(measure(text)) and text.endswith("\n")
    if budget.chars:
        assert len(text) <= budget.chars
    if budget.lines:
        assert text.count("\n") <= budget.lines and len(text.encode()) <= budget.bytes
    if budget.tokens:
        assert estimate_tokens(text) <= budget.tokens
    open_ids = [d.id for d in decisions if d.status is Status.OPEN]
    assert found.questions_left_out == 0 and [q.id for q in found.open_questions] == open_ids
    assert all(f"- {qid} " in text for qid in open_ids)
    current_topics = {t for d in decisions if d.status is Status.RULED for t in d.topics}
    if found.topics_left_out == 0:
        assert current_topics <= set(found.topics)
        assert all(topic in text for topic in current_topics)
    else:
        assert found.rulings == [] and f"{found.topics_left_out:,} more topics not named here" in text
    assert "[[" not in text and "]]" not in text
    assert LAST_LINE.match(text.splitlines()[-1])
    assert f"{found.rulings_left_out:,} of" in text.splitlines()[-1] or found.rulings_left_out == 0


def test_one_oversized_note_cannot_starve_the_rest():
    decisions = synthetic(100)
    huge = Decision(id="D-09999", status=Status.RULED, topics=tuple(f"topic-{n}" for n in range(10000)),
                    summary="Enormous " * 120000, path="Decisions/D-09999 Huge.md",
                    ruled_at=dt.datetime(2026, 11, 28, 9, tzinfo=TZ), ruled_by="owner", pinned=True)
    question = Decision(id="D-09998", status=Status.OPEN, topics=("big-question",), summary="Why? " * 50000,
                        path="Decisions/D-09998 Q.md", asked_at=dt.datetime(2026, 11, 28, 9, tzinfo=TZ),
                        reask_reason="Because " * 10000)
    found = context_of([*decisions, huge, question], BUDGETS["claude-hook"])
    assert len(found.text) <= 9500
    line = next(line for line in found.text.splitlines() if line.startswith("- D-09998 "))
    assert len(line) < 1000 and "more characters: vault-tools show D-09998]" in line
    # Its topic list is over-long: the index names 20 of them and says so, and the rest of the vault still fits.
    assert "D-09999 settles 9,980 more topics than named here (an over-long list): `vault-tools show D-09999`" in found.text
    assert found.topics_left_out == 0 and {t for d in decisions for t in d.topics if d.status is Status.RULED} <= set(found.topics)
    pinned = next(line for line in found.text.splitlines() if line.startswith("- D-09999 "))
    assert found.rulings[0][0].id == "D-09999" and len(pinned) < 600 and "+9,995 more]" in pinned
    assert "more characters: vault-tools show D-09999]" in pinned


def test_rulings_most_likely_to_matter_come_first(cli, vault):
    decision(vault, 1, topics=("brand-voice",), summary="The brand voice is plain, warm and never cute.",
             ruled_at="2025-01-05T09:00:00", pinned="true")
    decision(vault, 2, topics=("hosting",), summary="The blog stays on the static host we pay for yearly.",
             ruled_at="2025-02-05T09:00:00", revisit_by="2026-11-01")
    for n in range(3, 60):
        decision(vault, n, topics=(f"area-{n}",), summary=f"Ruling {n} on a routine matter of area {n}, kept short.",
                 ruled_at=f"2026-0{1 + n % 9}-{1 + n % 28:02d}T09:00:00")
    decision(vault, 60, topics=("refunds",), summary="Refunds within 14 days, no questions asked, by the agent.",
             ruled_at="2026-11-20T09:00:00", supersedes='["[[D-0003 Note]]"]',
             reason="Readers asked for refunds and waited too long.")
    out = cli("context", "--today", TODAY, "--budget", "2500").out
    assert len(out) <= 2500
    rulings = re.findall(r"^- (D-\d+) ", out[out.index("## Rulings"):], flags=re.M)
    assert rulings[:3] == ["D-0001", "D-0002", "D-0060"]  # pinned, revisit due, recent; then newest
    assert "D-0001 2025-01-05 [brand-voice] The brand voice is plain, warm and never cute. · pinned by the owner" in out
    assert "revisit by 2026-11-01 (due)" in out and "· replaces D-0003" in out
    assert all(f"area-{n}" in out for n in range(4, 60))  # every settled topic named, D-0003's too via D-0060
    assert "area-3" in out
    last = out.splitlines()[-1]
    assert re.match(r"Left out: \d+ of 59 current rulings\. `vault-tools lookup TOPIC`", last)
    data = json.loads(cli("context", "--today", TODAY, "--budget", "2500", "--json").out)
    assert data["text"] == out and data["rulings"][0]["why"] == ["pinned"] and data["rulings"][0]["pinned"]
    assert data["rulings_left_out"] == 59 - len(data["rulings"]) and data["topics_left_out"] == 0


def test_wikilinks_in_the_owners_text_reach_the_agent_as_plain_text(cli, vault):
    decision(vault, 1, topics=("footer",), summary="Footers follow [[Style guide|the style guide]] and [[Brand]] rules.")
    out = cli("context", "--today", TODAY).out
    assert "Footers follow the style guide and Brand rules." in out and "[[" not in out


def test_open_questions_that_alone_overflow_are_refused_never_cut(cli, vault):
    for n in range(1, 121):
        decision(vault, n, "open", (f"topic-{n}",), f"Open question number {n}, still waiting for the owner?",
                 asked_at=f"2026-11-{1 + n % 28:02d}T10:00:00", **({"due": "2026-11-30"} if n == 120 else {}))
    refused = cli("context", "--today", TODAY, "--budget", "claude-hook")
    assert refused.code == 1 and refused.out == ""
    assert ("the 120 open questions alone do not fit the budget claude-hook (9,500 characters and 9,400 characters "
            "as JSON)") in refused.err
    hook = cli("context", "--today", TODAY, "--budget", "claude-hook", "--hook")
    assert hook.code == 0 and len(hook.out) <= 9500 and "warning:" in hook.err
    shown = re.findall(r"^- (D-\d+) ", hook.out, flags=re.M)
    assert shown[0] == "D-0120"  # the one with a due date first: the most urgent
    assert f"- {120 - len(shown)} more open questions not shown (budget): `vault-tools list --status open`" in hook.out
    assert hook.out.splitlines()[-1].startswith(f"Left out: {120 - len(shown)} open questions.")
    lint = cli("lint", "--today", TODAY)
    assert lint.code == 1 and "VT031" in lint.out and "alone do not fit the budget claude-hook" in lint.out


def test_budget_names_and_numbers(cli, vault):
    decision(vault, 1)
    assert cli("context", "--budget", "lots").code == 2
    assert cli("context", "--budget", "0").code == 2
    tiny = cli("context", "--budget", "50")
    assert tiny.code == 2 and "too small for even an empty context" in tiny.err
    for name in ("claude-hook", "codex-hook", "memory-file", "config", "3000", "3,000"):
        assert cli("context", "--budget", name).code == 0


def test_tokens_are_counted_conservatively():
    assert estimate_tokens("abc") == 1 and estimate_tokens("abcd") == 2
    assert estimate_tokens("決定事項") == 4  # one per character beyond ASCII
    japanese = [Decision(id=f"D-{n:04d}", status=Status.RULED, topics=(f"topic-{n}",),
                         summary="記事のフッターには著者の紹介だけを載せる。" * 3, path=f"D/D-{n:04d}.md",
                         ruled_at=dt.datetime(2026, 1, 1, tzinfo=TZ), ruled_by="owner") for n in range(1, 400)]
    found = context_of(japanese, BUDGETS["codex-hook"])
    assert estimate_tokens(found.text) <= 2400 and found.rulings and found.rulings_left_out


@pytest.mark.parametrize("command", [
    ("ask", "What should article footers contain?", "--topic", "article-footer", "--due", "2026-12-01"),
    ("rule", "--topic", "pricing", "--summary", "Prices always include VAT for every reader."),
    ("rule", "D-0001", "--summary", "Footers carry the newsletter link and the bio."),
    ("withdraw", "D-0001", "--reason", "The owner dropped footers from the redesign."),
    ("rule", "--topic", "pricing", "--summary", "Prices include VAT and a small shipping fee.",
     "--supersedes", "D-0002", "--reason", "The printer started charging for shipping."),
    ("retract", "D-0002", "--reason", "It was recorded in error, says the owner."),
    ("seal",),
])
def test_every_write_leaves_the_pages_current(cli, vault, command):
    setup = [("ask", "What should article footers contain?", "--topic", "article-footer"),
             ("rule", "--topic", "pricing", "--summary", "Prices always include VAT for every reader.")]
    first_in_a_new_vault = command[0] == "ask" or (command[1:2] == ("--topic",) and "--supersedes" not in command)
    if not first_in_a_new_vault:
        for step in setup:
            assert cli(*step).code == 0
        assert cli("build").code == 0
    if command == ("seal",):
        decision(vault, 3, topics=("hosting",), summary="The blog stays on the static host for now.")
    result = cli(*command)
    assert result.code == 0, result.err
    assert cli("build", "--check").code == 0


def test_an_unchanged_vault_stays_current_a_month_later(cli, vault):
    steps = [("ask", "What should the spring sale price be?", "--topic", "pricing", "--due", "2026-11-30"),
             ("rule", "--topic", "footer", "--summary", "Footers carry nothing at all, for now.",
              "--ruled-at", "2026-11-01T09:00:00"),
             ("rule", "--topic", "footer", "--summary", "Footers carry only the author bio.", "--ruled-at",
              "2026-11-20T09:00:00", "--supersedes", "D-0002", "--reason", "Readers asked for the bio back."),
             ("rule", "--topic", "hosting", "--summary", "The blog stays on the static host for now.",
              "--revisit-by", "2026-12-15", "--ruled-at", "2026-10-20T09:00:00")]
    for step in steps:
        assert cli(*step).code == 0
    for day in ("2026-11-29", "2026-12-29", "2027-06-01"):
        assert cli("build", "--check", "--today", day).code == 0
        lint = cli("lint", "--today", day)
        assert lint.code == 0, lint.out
    assert "revisit by 2026-12-15 (due)" in cli("context", "--today", "2026-12-29").out
    assert "revisit by 2026-12-15 (due)" not in cli("context", "--today", "2026-11-29").out


def test_the_documented_benchmark_keeps_every_budget_and_shows_every_open_question():
    page = (Path(__file__).resolve().parents[1] / "docs" / "performance.md").read_text(encoding="utf-8")
    section = page[page.index("## What the agent reads"):]
    assert "benchmarks/run.py --only-context" in section and "make bench" in section
    rows = [line.split(" | ") for line in section.splitlines() if re.match(r"\| [\d,]+( \+ 1 oversized)? \| ", line)]
    assert {row[1] for row in rows} == set(BUDGETS)
    sizes = {row[0].strip("| ") for row in rows}
    assert {"10", "100", "1,000", "10,000", "1,000 + 1 oversized"} <= sizes
    for row in rows:
        budget = BUDGETS[row[1]]
        assert row[5] == "yes" and row[8].endswith("(100%)"), row
        if budget.chars:
            assert int(row[2].replace(",", "")) <= budget.chars


def test_rulings_with_a_history_come_before_routine_ones_and_look_alikes_take_turns():
    """Thirty routine rulings of three kinds made one kind after the other, and four older rulings with more to them (it replaced
    one; terms; a scope; a reason): with room for ten lines, the four come first, then one of each kind in turn;
    the count the heading gives is the lines it shows."""
    def ruled(n: int, topic: str, summary: str, **more) -> Decision:
        when = dt.datetime(2026, 11, 1, 9, tzinfo=TZ) + dt.timedelta(hours=n)
        return Decision(id=f"D-{n:04d}", status=Status.RULED, topics=(topic,), summary=summary, ruled_at=when,
                        ruled_by="owner", path=f"Decisions/D-{n:04d} Note.md", **more)  # type: ignore[arg-type]

    history = [ruled(1, "refund-policy", "Refunds within 30 days of purchase, no questions asked.",
                     reason="The owner said in chat that refunds are cheaper than disputes."),
               ruled(2, "hosting", "The site stays on our own VM.", terms={"hosting": "self"}),
               ruled(3, "docs-style", "Docs use sentence case headings.", scope=("docs/**",)),
               ruled(4, "brand-voice", "No emoji in any article.", revisit_if="Readers ask for them.")]
    routine = [ruled(10 + 10 * k + n, f"{kind}-{n}", f"{kind.title()} {n} is approved as planned.")
               for n in range(10) for k, kind in enumerate(("expense", "episode", "invoice"))]
    found = context_of([*history, *routine], Budget("ten", lines=60))
    listed = [r.id for r, _ in found.rulings]
    assert listed[:4] == ["D-0004", "D-0003", "D-0002", "D-0001"]  # with a history: newest first
    kinds = [next(d for d in routine if d.id == ruling_id).topics[0].split("-")[0] for ruling_id in listed[4:]]
    assert len(kinds) >= 3 and len(set(kinds[:3])) == 3  # one of each family before the second of any
    heading = re.search(r"## Rulings \((\d+) of (\d+) listed", found.text)
    assert heading and int(heading.group(1)) == len(listed) == found.text.count("\n- D-") \
        and int(heading.group(2)) == 34


# What an agent is told states facts about the record; it does not give the model orders. The words an order to
# the model starts with, and those that address it inside a line.
ORDER_STARTS = re.compile(r"^(?:[-#]+\s*)?(?:follow|never|always|do not|don't|ask|obey|decide|make sure|remember)\b",
                          re.IGNORECASE)
ORDER_INSIDE = re.compile(r"\b(?:yourself|you must|you should|do not decide|never ask)\b", re.IGNORECASE)


@pytest.mark.parametrize("agent", ["claude", "codex", "gemini"])
def test_what_the_session_start_hook_injects_states_facts_not_orders(agent, tmp_path):
    import shutil

    from .helpers import vt

    example = tmp_path / "example"
    shutil.copytree(Path(__file__).resolve().parents[1] / "example-vault", example)
    payload = {"hook_event_name": "SessionStart", "cwd": str(example), "session_id": "s", "source": "startup"}
    done = vt("hook", agent, "session-start", cwd=example, stdin=json.dumps(payload))
    assert done.code == 0, done.err
    text = json.loads(done.out)["hookSpecificOutput"]["additionalContext"]
    assert "Open questions" in text and "D-0014" in text  # the record is there: what is open and what is ruled
    orders = [line for line in text.splitlines() if ORDER_STARTS.match(line) or ORDER_INSIDE.search(line)]
    assert orders == []


def _strings(value) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [text for item in value.values() for text in _strings(item)]
    if isinstance(value, list):
        return [text for item in value for text in _strings(item)]
    return []


PROMPTS = ["Use an AI illustration for the estuary article.", "Send the newsletter on Tuesday this week.",
           "What should the footer of the next article say?"]
QUESTIONS_PUT = ["What should article footers carry?", "Should the newsletter logo be renewed?",
                 "Should the blog get a dark mode?"]


def _payloads(agent: str, root: Path) -> list[tuple[str, dict]]:
    base = {"cwd": str(root), "session_id": f"orders-{agent}"}
    message = "before-agent" if agent == "gemini" else "user-prompt-submit"
    tool = "before-tool" if agent == "gemini" else "pre-tool-use"
    shell, asking = ("run_shell_command", "ask_user") if agent == "gemini" else ("Bash", "AskUserQuestion")
    found = [("session-start", {**base, "hook_event_name": "SessionStart", "source": "startup"})]
    found += [(message, {**base, "prompt": prompt}) for prompt in PROMPTS]
    found += [(tool, {**base, "tool_name": shell, "tool_input": {"command": command}})
              for command in ("echo '{}' >> vault-tools/ledger/k7q2.jsonl", "rm -rf Decisions")]
    if agent != "codex":  # Codex has no question tool
        found += [(tool, {**base, "session_id": f"{agent}-{number}", "tool_name": asking,
                          "tool_input": {"questions": [{"question": question}]}})
                  for number, question in enumerate(QUESTIONS_PUT)]
    return found


@pytest.mark.parametrize("agent", ["claude", "codex", "gemini"])
def test_nothing_any_hook_injects_is_an_order_to_the_model(agent, tmp_path):
    """Every text every hook event answers with (context, denial reasons, messages), on the example vault, for a
    session start, owner's messages, tool calls denied or let through and questions put to the owner: facts about
    the record and the commands that change it, never an imperative addressed to the model."""
    import shutil

    from .helpers import vt_here

    example = tmp_path / "example"
    shutil.copytree(Path(__file__).resolve().parents[1] / "example-vault", example)
    said = []
    for event, payload in _payloads(agent, example):
        done = vt_here("hook", agent, event, cwd=example, stdin=json.dumps(payload))
        assert done.code == 0, done.err
        said += _strings(json.loads(done.out)) if done.out.strip() else []
    assert len(said) >= 5  # the hooks answered: there is text to read
    orders = [line for text in said for line in text.splitlines()
              if ORDER_STARTS.match(line) or ORDER_INSIDE.search(line)]
    assert orders == []


def test_context_taken_from_its_memo_loads_neither_the_agents_view_nor_the_page_builder(cli, vault):
    """`context` on a vault unchanged since it last ran (as the session-start hook runs it): the view made then
    from the same inputs, printed without importing what makes it (the agent's view, the page builder, the
    same-matter check): start-up time on every session."""
    assert cli("rule", "--topic", "article-footer", "--summary", FOOTER).code == 0
    assert cli("ask", "Should the agent cross-post new articles to Mastodon?", "--topic", "social-crossposting").code == 0
    time.sleep(PAST_RACY_SECONDS)  # what is read past the racy window is kept
    makers = ("vault_tools.commands.build", "vault_tools.agent_view", "vault_tools.commands.same")
    code = ("import sys\nfrom vault_tools.launch import main\nsys.argv = ['vault-tools', 'context']\ntry:\n"
            "    main()\nexcept SystemExit as exit_:\n    assert exit_.code in (0, None), exit_.code\n"
            f"sys.stderr.write(repr(sorted(name for name in {makers!r} if name in sys.modules)))")

    def context() -> tuple[str, str]:
        ran = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=vault)
        assert ran.returncode == 0, ran.stderr
        return ran.stdout, ran.stderr.splitlines()[-1]

    made, made_with = context()
    taken, taken_with = context()
    assert "Mastodon" in made and taken == made
    assert made_with == repr(sorted(makers))  # made: each of them loaded
    assert taken_with == "[]"
