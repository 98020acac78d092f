"""One same-matter check for every way a question reaches the owner: `ask`, the MCP `ask` tool and the agents'
question hooks (Claude Code's AskUserQuestion, Gemini CLI's ask_user) answer the same question the same way:
the same matter as a decision (refused), possibly (shown the nearest decisions, once), or not (let through)."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from .helpers import hook, vt_here
from .test_mcp import session_calls

# Questions with topic keys whose words are the question's own (the hooks see no key).
QUESTIONS = [
    ("What should go at the bottom of each article footer?", "article-bottom"),
    ("Do we refund purchases after 30 days?", "refund-purchases"),
    ("Should new articles be cross-posted to Mastodon?", "mastodon-articles"),
    ("Which newsletter platform do we move to?", "platform-move"),
    ("What should the team's mascot be called?", "team-mascot"),
    ("Should the newsletter logo be renewed?", "newsletter-logo"),
    ("How many emoji can a headline carry?", "headline-emoji"),
    ("What colour should the new logo be?", "logo-colour"),
    ("Can students get a discount on the annual membership?", "student-membership"),
]


@pytest.fixture(scope="module")
def questions_vault(owner_messages_vault, tmp_path_factory) -> Path:
    """A copy of the owner-messages set's vault: 108 decisions, rulings, open, withdrawn and retracted questions."""
    root = tmp_path_factory.mktemp("questions") / "vault"
    shutil.copytree(owner_messages_vault[0], root)
    return root


def by_hook(root: Path, question: str, session: str = "one", agent: str = "claude") -> str:
    if agent == "gemini":
        done = vt_here("hook", "gemini", "before-tool", cwd=root, stdin=__import__("json").dumps(
            {"cwd": str(root), "session_id": session, "tool_name": "ask_user",
             "tool_input": {"questions": [{"question": question}]}}))
        answer = __import__("json").loads(done.out) if done.out.strip() else None
        reason = (answer or {}).get("reason", "")
    else:
        answer = hook("pre-tool-use", {"session_id": session, "tool_name": "AskUserQuestion",
                                       "tool_input": {"questions": [{"question": question}]}}, root)
        reason = ((answer or {}).get("hookSpecificOutput") or {}).get("permissionDecisionReason", "")
    if not reason:
        return "through"
    return "possible" if "may be about a matter" in reason else "same"


def said(refused: bool, text: str) -> str:
    if not refused:
        return "through"
    return "possible" if "may be the matter of" in text else "same"


def test_ask_the_mcp_tool_and_the_hooks_give_the_same_answer(questions_vault, tmp_path):
    copy = tmp_path / "copy"
    shutil.copytree(questions_vault, copy)
    hooks = [by_hook(questions_vault, question) for question, _ in QUESTIONS]
    gemini = [by_hook(questions_vault, question, session="other", agent="gemini") for question, _ in QUESTIONS]
    asked = []
    for question, topic in QUESTIONS:
        done = vt_here("ask", question, "--topic", topic, cwd=questions_vault)
        asked.append(said(done.code != 0, done.err))
    tools = [said(refused, text) for refused, text in session_calls(copy, [
        ("ask", {"question": question, "topics": [topic]}) for question, topic in QUESTIONS])]
    assert hooks == gemini == asked == tools
    assert {"same", "possible", "through"} <= set(asked)


def test_a_question_the_record_answers_is_refused_with_the_rulings_text_by_ask_and_the_hook_alike(questions_vault):
    question = "Do we refund purchases after 30 days?"
    denial = hook("pre-tool-use", {"session_id": "s-0", "tool_name": "AskUserQuestion",
                                   "tool_input": {"questions": [{"question": question}]}}, questions_vault)
    refused = vt_here("ask", question, "--topic", "refund-purchases", cwd=questions_vault)
    text = "Later requests get store credit for the same amount."
    assert text in denial["hookSpecificOutput"]["permissionDecisionReason"] and text in refused.err


def test_a_possible_match_is_denied_once_in_a_session_with_the_decisions_to_judge(questions_vault):
    question = "Should the newsletter logo be renewed?"  # a possible match
    denial = hook("pre-tool-use", {"session_id": "s-1", "tool_name": "AskUserQuestion",
                                   "tool_input": {"questions": [{"question": question}]}}, questions_vault)
    reason = denial["hookSpecificOutput"]["permissionDecisionReason"]
    assert "may be about a matter" in reason and "Renew the trademark on the logo" in reason
    assert "(words shared: logo, renewed)" in reason  # the evidence it stands on, in the question's words
    again = {"session_id": "s-1", "tool_name": "AskUserQuestion", "tool_input": {"questions": [{"question": question}]}}
    assert hook("pre-tool-use", again, questions_vault) is None  # asked again in the session: it goes to the owner
    assert hook("pre-tool-use", {**again, "session_id": "s-2"}, questions_vault) is not None  # another session: shown again


def test_a_question_naming_the_decision_goes_through(questions_vault):
    ids = {line.split()[0] for line in vt_here("list", "--status", "open", cwd=questions_vault).out.splitlines() if line}
    question_id = next(iter(sorted(i for i in ids if i.startswith("D-"))))
    answer = hook("pre-tool-use", {"session_id": "s-3", "tool_name": "AskUserQuestion", "tool_input": {
        "questions": [{"question": f"About {question_id}: which newsletter platform do we move to?"}]}}, questions_vault)
    assert answer is None


def test_naming_another_near_decision_does_not_let_a_settled_question_through(questions_vault):
    from vault_tools.agents import hooks, recall, snapshot
    question = "Should photos carry a credit?"
    found = recall.question_matches(question, snapshot.load(questions_vault, hooks.CLAUDE_BOUNDS.session_budget))
    settled, other = found[0].item.id, next(near.item.id for near in found if not near.strong)

    def asked(text: str) -> dict | None:
        return hook("pre-tool-use", {"session_id": "s-4", "tool_name": "AskUserQuestion",
                                     "tool_input": {"questions": [{"question": text}]}}, questions_vault)
    assert found[0].strong and asked(f"Regarding {other}: {question}") is not None
    assert asked(f"{settled} was ruled before the redesign; now that photos are gone: {question}") is None


def test_a_refusal_of_the_same_matter_also_shows_the_next_nearest_decisions(questions_vault):
    """The words that matched may be shared by chance: the agent sees what else is near, from ask and the hook."""
    from vault_tools.agents import hooks, recall, snapshot
    question = "Should photos carry a credit?"
    found = recall.question_matches(question, snapshot.load(questions_vault, hooks.CLAUDE_BOUNDS.session_budget))
    assert found[0].strong and not found[1].strong
    denial = hook("pre-tool-use", {"session_id": "s-6", "tool_name": "AskUserQuestion",
                                   "tool_input": {"questions": [{"question": question}]}}, questions_vault)
    reason = denial["hookSpecificOutput"]["permissionDecisionReason"]
    refused = vt_here("ask", question, "--topic", "photo-credit", cwd=questions_vault)
    assert "Also near it" in reason
    for text in (reason, refused.err):
        assert found[1].item.id in text and found[1].item.summary in text


def test_a_question_whose_matter_is_in_its_options_is_shown_the_decisions_once(questions_vault):
    """"Which do you prefer?" says nothing; its header and options say the matter (Claude's AskUserQuestion and
    Gemini's ask_user carry them alike): the decisions they may be about are shown once, never as settled."""
    item = {"question": "Which do you prefer?", "header": "Refunds", "multiSelect": False,
            "options": [{"label": "Refunds within 30 days", "description": "as now"},
                        {"label": "Store credit only", "description": "no money back"}]}
    payload = {"session_id": "s-7", "tool_name": "AskUserQuestion", "tool_input": {"questions": [item]}}
    denial = hook("pre-tool-use", payload, questions_vault)
    reason = denial["hookSpecificOutput"]["permissionDecisionReason"]
    assert "may be about a matter" in reason and "Refunds within 30 days of purchase" in reason
    assert hook("pre-tool-use", payload, questions_vault) is None  # the second time, it goes to the owner
    plain = {**item, "options": [{"label": "Pizza", "description": ""}, {"label": "Soup", "description": ""}],
             "header": "Lunch"}
    assert hook("pre-tool-use", {**payload, "session_id": "s-8", "tool_input": {"questions": [plain]}}, questions_vault) is None


def test_options_are_read_too_when_the_question_only_shares_a_common_word(questions_vault):
    item = {"question": "Which do you prefer for the ebook?", "header": "Refunds", "multiSelect": False,
            "options": [{"label": "Refunds within 30 days", "description": ""},
                        {"label": "Store credit only", "description": ""}]}
    denial = hook("pre-tool-use", {"session_id": "s-10", "tool_name": "AskUserQuestion",
                                   "tool_input": {"questions": [item]}}, questions_vault)
    assert "Refunds within 30 days of purchase" in denial["hookSpecificOutput"]["permissionDecisionReason"]


@pytest.mark.parametrize("options", ["Refunds within 30 days", ["Refunds within 30 days", 7], {"label": 3},
                                     [{"description": "no label"}, None, {"label": None}], None])
def test_options_of_any_shape_are_read_as_far_as_they_are_text(questions_vault, options):
    item = {"question": "Do we refund purchases after 30 days?", "header": 5, "options": options}
    denial = hook("pre-tool-use", {"session_id": "s-12", "tool_name": "AskUserQuestion",
                                   "tool_input": {"questions": [item]}}, questions_vault)
    assert "The decision record answers this" in denial["hookSpecificOutput"]["permissionDecisionReason"]


def test_a_denial_stays_within_the_agent_s_bound_as_printed(questions_vault):
    """Quotes and backslashes double when the reason is printed as JSON: the bound is on what is printed."""
    import json

    from vault_tools.agents import hooks
    for reason in ('"' * 20_000, "\\" * 20_000, "\u0001" * 20_000, "plain " * 5_000):
        printed = json.dumps(hooks.deny(reason), ensure_ascii=False)
        assert len(printed) <= hooks.MAX_OUTPUT and len(printed) > hooks.MAX_OUTPUT - 300


def test_a_huge_question_is_read_in_its_first_characters_within_the_hook_s_time(questions_vault):
    item = {"question": "Which do you prefer? " + "x " * 2_000_000, "header": "Refunds " + "h " * 3_000_000,
            "options": [{"label": "Store credit only " + "y " * 1_000_000}] * 50}
    # The hook's own work, as processor time (it runs in this process): on a machine busy with other work the
    # wall clock says more of the machine than of the hook, and this bound is about the hook not reading it all
    started = __import__("time").process_time()
    denial = hook("pre-tool-use", {"session_id": "s-11", "tool_name": "AskUserQuestion",
                                   "tool_input": {"questions": [item]}}, questions_vault)
    assert "Refunds within 30 days of purchase" in denial["hookSpecificOutput"]["permissionDecisionReason"]
    assert __import__("time").process_time() - started < 5


@pytest.mark.parametrize("invisible", ["\u200b", "\u034f", "\ufe0f", "\u180b", "\u00ad"])
def test_an_invisible_character_inside_a_word_does_not_hide_it(questions_vault, invisible):
    question = f"Do we ref{invisible}und purchases after 30 d{invisible}ays?"
    denial = hook("pre-tool-use", {"session_id": "s-5", "tool_name": "AskUserQuestion",
                                   "tool_input": {"questions": [{"question": question}]}}, questions_vault)
    assert "The decision record answers this" in denial["hookSpecificOutput"]["permissionDecisionReason"]


@pytest.mark.parametrize("kept", ["not json{", "[1, 2]", '{"s-9": 7}', '{"s-9": [null, 3]}'])
def test_a_damaged_memory_of_the_session_is_read_as_empty(questions_vault, tmp_path, kept):
    """The questions a session was shown are derived data: damaged, they are forgotten, never in the way."""
    root = tmp_path / "vault"
    shutil.copytree(questions_vault, root)
    cache = root / ".vault-tools" / "cache"
    cache.mkdir(parents=True, exist_ok=True)
    (cache / "possible-matches.json").write_text(kept, encoding="utf-8")
    question = {"session_id": "s-9", "tool_name": "AskUserQuestion",
                "tool_input": {"questions": [{"question": "Should the newsletter logo be renewed?"}]}}
    assert "may be about a matter" in hook("pre-tool-use", question, root)["hookSpecificOutput"]["permissionDecisionReason"]
    assert hook("pre-tool-use", question, root) is None
    assert hook("pre-tool-use", {**question, "session_id": 12}, root) is not None  # not a string: still a session
