"""Every hook of every agent answers any stdin without a traceback: what is not a JSON object (null, a number,
deep nesting, binary) lets the call through with the one-line `systemMessage`, exit 0; an internal error does
the same and leaves its traceback in the crash log."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.helpers import vt_here
from vault_tools.agents import HOOK_AGENTS, hook_module

CALLS = [(agent, event) for agent in HOOK_AGENTS for event in hook_module(agent).EVENTS]
EXAMPLES = int(os.environ.get("VAULT_TOOLS_FUZZ_EXAMPLES", 10))
HOSTILE = ["null", "0", "-1.5e308", '"text"', "[]", "true", "[" * 100_000 + "]" * 100_000,
           '{"a":' * 50_000 + "1" + "}" * 50_000, "{", "", " ", json.dumps({"cwd": "a\u0000b"}),
           json.dumps({"tool_name": ["Write"], "tool_input": "x", "prompt": {"a": 1}, "cwd": 7}),
           json.dumps({"tool_name": "Bash", "tool_input": {"command": ["rm", "-rf"]}}),
           json.dumps({"tool_name": "Write", "tool_input": {"file_path": 12, "content": None}}),
           json.dumps({"tool_name": "AskUserQuestion", "tool_input": {"questions": "what?"}}),
           json.dumps({"tool_name": "Bash", "tool_input": {"command": "echo 'unclosed"}}),
           json.dumps({"prompt": "x" * 2_000_000})]


def hook_answer(agent: str, event: str, stdin: str, cwd: Path) -> str:
    done = vt_here("hook", agent, event, cwd=cwd, stdin=stdin)
    assert done.code == 0 and "Traceback" not in done.err, (agent, event, stdin[:80], done.err)
    if done.out.strip():
        output = json.loads(done.out)
        assert isinstance(output, dict)
        message = output.get("systemMessage", "")
        assert "\n" not in message
        return str(message)
    return ""


@pytest.mark.parametrize("agent, event", CALLS)
def test_input_that_is_no_json_object_lets_the_call_through_with_a_warning(vault, agent, event) -> None:
    for stdin in HOSTILE[:9]:
        said = hook_answer(agent, event, stdin, vault)
        assert "this hook let the call through" in said and "the hook's input could not be read" in said, stdin[:40]
    for stdin in HOSTILE[9:]:
        hook_answer(agent, event, stdin, vault)


def test_binary_input_in_a_real_process_passes_with_a_warning(vault) -> None:
    for agent, event in CALLS:
        done = subprocess.run([sys.executable, "-m", "vault_tools", "hook", agent, event], cwd=vault,
                              input=b"\xff\xfe\x00garbage\x80", capture_output=True, timeout=60)
        assert done.returncode == 0 and b"Traceback" not in done.stderr
        assert "let the call through" in json.loads(done.stdout)["systemMessage"]


def test_an_internal_error_is_logged_in_the_crash_log_and_the_call_goes_through(vault, monkeypatch) -> None:
    """A fault injected into the session-start step stands in for any bug in the hooks' own code."""
    import vault_tools.agents.hooks as hooks

    def broken(*args: object) -> None:
        raise KeyError("a bug")

    monkeypatch.setattr(hooks, "_session_start", broken)
    message = hook_answer("claude", "session-start", "{}", vault)
    assert "KeyError" in message and "crash.log" in message
    assert "KeyError: 'a bug'" in (vault / ".vault-tools" / "crash.log").read_text(encoding="utf-8")


JSON_VALUES = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=30),
                           lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner,
                                                                                    max_size=4), max_leaves=20)
PAYLOADS = st.fixed_dictionaries({}, optional={
    "cwd": JSON_VALUES, "tool_name": st.sampled_from(["Write", "Edit", "Bash", "Read", "AskUserQuestion", "apply_patch",
                                                      "write_file", "run_shell_command", "ask_user"]) | JSON_VALUES,
    "tool_input": st.fixed_dictionaries({}, optional={
        "file_path": st.text(max_size=40) | JSON_VALUES, "command": st.text(max_size=80) | JSON_VALUES,
        "content": st.text(max_size=80) | JSON_VALUES, "questions": JSON_VALUES}) | JSON_VALUES,
    "prompt": st.text(max_size=200) | JSON_VALUES, "source": JSON_VALUES})


@pytest.mark.soak  # randomized: runs with the soak tests (`make soak-ci` in CI)
def test_random_payloads_never_crash_a_hook(vault) -> None:
    @settings(max_examples=EXAMPLES * 10, deadline=None, suppress_health_check=list(HealthCheck))
    @given(call=st.sampled_from(CALLS), payload=PAYLOADS | JSON_VALUES)
    def check(call: tuple[str, str], payload: object) -> None:
        hook_answer(*call, json.dumps(payload), vault)

    check()
