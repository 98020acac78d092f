"""A user's journey with the installed `vault-tools`, not the checkout: what CI runs after building the wheel.

Run it with the Python of a virtual environment where the wheel is installed (with the `mcp` extra), from a
folder outside the checkout, so that nothing can be imported from the source tree:

    python -m build --outdir dist .
    python3 -m venv /tmp/v && /tmp/v/bin/pip install "$(ls dist/*.whl)[mcp]"
    cd /tmp && /tmp/v/bin/python /path/to/checkout/scripts/installed_journey.py

`make journey` does all three. Every step runs the installed console script in a subprocess, in a new vault
(its path has a space), and checks its exit code and what it printed: `init`, `init --templates`, `ask`,
`rule`, `watch --once`, `lint`, `context`, the resident process `watch` keeps, every hook event of every agent with a sample payload, `init
--agent` for each agent, the MCP server listing its tools, and the demo's story (scripts/demo.py). Before
them, every module of the installed package is imported and must come from the environment, not from the
checkout. Prints one line per step; exits 1 when any step failed.
"""
from __future__ import annotations

import importlib
import importlib.metadata
import json
import pkgutil
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from collections.abc import Callable
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[1]
DISTRIBUTION = "vault-tools-decisions"
TIMEOUT_SECONDS = 120
MCP_TOOLS = {"context", "lookup", "ask", "rule", "show", "search", "gate"}
AGENTS = ("claude", "codex", "gemini", "cursor")
QUESTION = "Which weekday should the newsletter go out?"
RULING = "The newsletter goes out every Thursday at 07:00."
# A shell command every agent's pre-tool hook must refuse: it writes to the ledger.
WRITES_THE_LEDGER = "echo '{}' >> vault-tools/ledger/forged.jsonl"


class Journey:
    def __init__(self, command: str, vault: Path) -> None:
        self.command = command
        self.vault = vault
        self.failures: list[str] = []

    def step(self, name: str, check: Callable[[], str | None]) -> None:
        """Run one check: it returns None when all is well, else what went wrong."""
        try:
            problem = check()
        except Exception as error:  # a crash in a step is that step's failure, the journey goes on
            problem = f"{type(error).__name__}: {error}"
        print(f"{'ok  ' if problem is None else 'FAIL'} {name}" + ("" if problem is None else f": {problem}"),
              flush=True)
        if problem is not None:
            self.failures.append(name)

    def run(self, *args: str, stdin: str | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run([self.command, *args], cwd=cwd or self.vault, input=stdin, capture_output=True,
                              text=True, encoding="utf-8", timeout=TIMEOUT_SECONDS)


def expect(done: subprocess.CompletedProcess[str], code: int = 0, says: str | None = None) -> str | None:
    if done.returncode != code:
        return f"exit {done.returncode}, expected {code}: {(done.stderr or done.stdout).strip()[-400:]}"
    if says is not None and says not in done.stdout + done.stderr:
        return f"does not say {says!r}: {(done.stdout + done.stderr).strip()[-400:]}"
    return None


# -- the installed package ----------------------------------------------------------------------------------

def installed_modules() -> str | None:
    """Every module imports, from this environment's site-packages, not from the checkout."""
    import vault_tools

    site = Path(sysconfig.get_paths()["purelib"]).resolve()
    outside = []
    count = 0
    for module in pkgutil.walk_packages(vault_tools.__path__, "vault_tools."):
        if module.name == "vault_tools.__main__":
            continue  # importing it runs the command line
        path = Path(importlib.import_module(module.name).__file__ or "").resolve()
        count += 1
        if site not in path.parents:
            outside.append(f"{module.name} from {path}")
    if outside:
        return "imported from outside the environment: " + ", ".join(outside[:3])
    return None if count > 50 else f"only {count} modules found"


def version(journey: Journey) -> str | None:
    import vault_tools

    done = journey.run("--version", cwd=Path.cwd())
    printed = done.stdout.strip()
    installed = importlib.metadata.version(DISTRIBUTION)
    if done.returncode != 0 or printed != vault_tools.__version__ or printed != installed:
        return f"--version printed {printed!r} (exit {done.returncode}); package {vault_tools.__version__}, " \
               f"distribution {installed}"
    return None


# -- the owner's and the agent's commands -------------------------------------------------------------------

def init(journey: Journey) -> str | None:
    return expect(journey.run("init")) or (
        None if (journey.vault / "vault-tools" / "config.yaml").is_file() else "no vault-tools/config.yaml")


def templates(journey: Journey) -> str | None:
    from vault_tools.starter import packaged_templates

    problem = expect(journey.run("init", "--templates"))
    for name, text in packaged_templates().items():
        written = journey.vault / "Templates" / name
        if not written.is_file() or written.read_text(encoding="utf-8") != text:
            problem = problem or f"Templates/{name} is not the packaged template"
    return problem


def ask_and_rule(journey: Journey) -> str | None:
    asked = journey.run("ask", QUESTION, "--topic", "newsletter-schedule", "--json")
    problem = expect(asked)
    if problem:
        return problem
    identifier = json.loads(asked.stdout)["id"]
    return expect(journey.run("rule", identifier, "--summary", RULING), says=identifier) or expect(
        journey.run("ask", "On which day is the newsletter sent?", "--topic", "newsletter-schedule"), code=1)


def resident_answers(journey: Journey) -> str | None:
    """`watch` keeps a resident process that answers the agent's commands as their own process does."""
    import contextlib
    import io
    import os
    import time

    from vault_tools import resident, resident_address

    watcher = subprocess.Popen([journey.command, "watch"], cwd=journey.vault, stdin=subprocess.DEVNULL,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        path = Path(resident_address.socket_path(str(journey.vault.resolve())) or "")
        deadline = time.monotonic() + TIMEOUT_SECONDS
        while not path.is_socket():
            if watcher.poll() is not None or time.monotonic() > deadline:
                return f"no resident process listened at {path}"
            time.sleep(0.1)
        for args in (["context"], ["lookup", "newsletter-schedule"]):
            out = io.BytesIO()
            stream = io.TextIOWrapper(out, encoding="utf-8", write_through=True)  # closes `out` when collected
            saved = Path.cwd()
            os.chdir(journey.vault)
            try:
                with contextlib.redirect_stdout(stream):
                    code = resident.answer_there(args)
            finally:
                os.chdir(saved)
            alone = subprocess.run([journey.command, *args], cwd=journey.vault, capture_output=True,
                                   env={**os.environ, resident_address.NO_RESIDENT_ENV: "1"}, timeout=TIMEOUT_SECONDS)
            if code is None:
                return f"{' '.join(args)}: the resident process did not answer"
            if (code, out.getvalue()) != (alone.returncode, alone.stdout):  # `stream` is alive: `out` is open
                return f"{' '.join(args)}: answered otherwise than in its own process"
        return None
    finally:
        watcher.terminate()
        watcher.wait(timeout=TIMEOUT_SECONDS)


# -- the agents' side -----------------------------------------------------------------------------------------

def sample_payload(agent: str, event: str, vault: Path) -> tuple[dict[str, object], str | None]:
    """What the agent sends for `event`, and a text its answer must hold (None: any answer, or none)."""
    base: dict[str, object] = {"session_id": "journey", "transcript_path": str(vault / "transcript.jsonl"),
                               "cwd": str(vault)}
    if agent == "codex":
        base.update(model="gpt-5-codex", permission_mode="default", turn_id="t1")
    if event == "session-start":
        return {**base, "hook_event_name": "SessionStart", "source": "startup"}, RULING
    if event in ("user-prompt-submit", "before-agent"):
        name = "UserPromptSubmit" if event == "user-prompt-submit" else "BeforeAgent"
        return {**base, "hook_event_name": name, "prompt": "Remind me: which weekday does the newsletter go out?"}, None
    if event in ("pre-tool-use", "before-tool"):
        tool = "run_shell_command" if agent == "gemini" else "Bash"
        name = "BeforeTool" if agent == "gemini" else "PreToolUse"
        return {**base, "hook_event_name": name, "tool_name": tool, "tool_use_id": "call_1",
                "tool_input": {"command": WRITES_THE_LEDGER}}, "deny"
    if event == "post-tool-use":
        return {**base, "hook_event_name": "PostToolUse", "tool_name": "Bash", "tool_use_id": "call_2",
                "tool_input": {"command": "ls"}, "tool_response": {"stdout": "", "stderr": ""}}, None
    if event == "after-tool":
        return {**base, "hook_event_name": "AfterTool", "tool_name": "run_shell_command",
                "tool_input": {"command": "ls"}, "tool_response": {"llmContent": "", "returnDisplay": ""}}, None
    raise SystemExit(f"installed_journey.py has no sample payload for {agent}'s {event}: add one")


def hook(journey: Journey, agent: str, event: str) -> str | None:
    payload, holds = sample_payload(agent, event, journey.vault)
    done = journey.run("hook", agent, event, stdin=json.dumps(payload))
    problem = expect(done)
    if problem:
        return problem
    if done.stdout.strip():
        json.loads(done.stdout)  # a document the agent can read, or nothing
    if holds is not None and holds not in done.stdout:
        return f"the answer does not hold {holds!r}: {done.stdout.strip()[:300]!r}"
    return None


def init_agent(journey: Journey, agent: str, project: Path) -> str | None:
    first = journey.run("init", "--agent", agent, "--project", str(project), "--vault", str(journey.vault))
    problem = expect(first)
    before = sorted((path.relative_to(project).as_posix(), path.read_bytes()) for path in project.rglob("*")
                    if path.is_file())
    again = journey.run("init", "--agent", agent, "--project", str(project), "--vault", str(journey.vault))
    after = sorted((path.relative_to(project).as_posix(), path.read_bytes()) for path in project.rglob("*")
                   if path.is_file())
    if not problem and before != after:
        problem = "run again, it changed the project"
    return problem or expect(again) or (None if before else "it wrote nothing")


def mcp_tools(journey: Journey) -> str | None:
    import anyio
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    async def listed() -> set[str]:
        params = StdioServerParameters(command=journey.command, args=["mcp", "--vault", str(journey.vault)])
        with anyio.fail_after(TIMEOUT_SECONDS):
            async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
                await session.initialize()
                return {tool.name for tool in (await session.list_tools()).tools}

    missing = MCP_TOOLS - anyio.run(listed)
    return f"tools missing: {sorted(missing)}" if missing else None


def demo() -> str | None:
    done = subprocess.run([sys.executable, str(REPOSITORY / "scripts" / "demo.py")], cwd=Path.cwd(),
                          capture_output=True, text=True, encoding="utf-8", timeout=600)
    return expect(done)


def main() -> int:
    if REPOSITORY in Path.cwd().resolve().parents or Path.cwd().resolve() == REPOSITORY:
        raise SystemExit("installed_journey.py: run it from a folder outside the checkout")
    command = shutil.which("vault-tools", path=str(Path(sys.executable).parent))
    if command is None:
        raise SystemExit(f"installed_journey.py: no vault-tools beside {sys.executable}: install the wheel there")
    with tempfile.TemporaryDirectory(prefix="vault-tools-journey-") as folder:
        vault = Path(folder) / "My Vault"
        (vault / ".obsidian").mkdir(parents=True)
        journey = Journey(command, vault)
        journey.step("every module imports from the installed package", installed_modules)
        journey.step("vault-tools --version", lambda: version(journey))
        journey.step("init", lambda: init(journey))
        journey.step("init --templates", lambda: templates(journey))
        journey.step("ask, rule, and a settled question refused", lambda: ask_and_rule(journey))
        journey.step("watch --once", lambda: expect(journey.run("watch", "--once")))
        journey.step("lint", lambda: expect(journey.run("lint")))
        journey.step("context", lambda: expect(journey.run("context"), says=RULING))
        journey.step("watch keeps a resident process that answers as a command's own process",
                     lambda: resident_answers(journey))
        from vault_tools.agents import HOOK_AGENTS, hook_module

        for agent in HOOK_AGENTS:
            for event in hook_module(agent).EVENTS:
                journey.step(f"hook {agent} {event}", lambda agent=agent, event=event: hook(journey, agent, event))
        for agent in AGENTS:
            project = Path(folder) / f"project-{agent}"
            project.mkdir()
            journey.step(f"init --agent {agent}", lambda agent=agent, project=project: init_agent(journey, agent, project))
        journey.step("mcp lists its tools", lambda: mcp_tools(journey))
        journey.step("the demo's story (scripts/demo.py)", demo)
    if journey.failures:
        print(f"{len(journey.failures)} step(s) failed: {', '.join(journey.failures)}")
        return 1
    print("the installed package passed every step")
    return 0


if __name__ == "__main__":
    sys.exit(main())
