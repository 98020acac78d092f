"""How fast vault-tools is on large vaults, as ratios to baselines measured in the same run.

    python benchmarks/run.py [--sizes 1000,10000,50000] [--repeat 3] [--saves 50]
                             [--context-sizes 10,100,1000,10000] [--only-context]
                             [--reconcile 10000,50000] [--only-reconcile]

First, start-up: a bare `python -c pass`, the same importing yaml, sqlite3 and json (a
yardstick), `vault-tools version`, and `vault-tools context` on a vault with no notes (all a
command does but read notes), each against the bare python of the same run.

For each vault size it measures, each as a separate process (as a user or a
hook runs them), the median wall time and the peak memory (RSS) of:

- the floor: a Python process reading every note's bytes (no tool can beat it);
- the baseline a user would write: `frontmatter.load` over every note, keeping decisions;
- `vault-tools build`, `lint` and `context`: cold (no cache), warm (nothing changed)
  and warm after one changed note;
- `vault-tools search`: cold (no index), warm, and warm after one changed note, against the
  start-up of `vault-tools version` measured in the same run;
- each Claude Code hook (`vault-tools hook claude EVENT`, the event's JSON on stdin), and the Codex and
  Gemini CLI calls that take another path (`hook codex`, `hook gemini`), 10,000 notes only;
- the watcher: from a save of a decision note to the pinned page being rewritten,
  minus the configured debounce (median and p95 over `--saves` saves);
- reconciling (`--reconcile`, on by default): `vault-tools watch --once` on a vault of the same
  size whose rulings are all unsealed (made by `make_vault.py --unsealed`, left alone for an
  hour), each run paired with a warm `build` of the same copy just before it, in wall and CPU time
  (the ratio taken pair by pair); then `vault-tools watch`
  started on another copy, and its CPU use over `--idle-seconds` once that first reconcile is done;
  the same `watch --once` again on a vault in the shared layout `init` makes (`vault-tools/ledger/`,
  one file per device), which every other benchmark vault does not use (the hidden one, `.vault-tools/`).

Imports (`--imports`, default 2,000 ADRs into the 10,000-note vault): `vault-tools import adr` of a generated
ADR folder (`make_adrs.py`) into a fresh copy of the vault, each run paired with a warm `build` of that copy
just before it; printed against the target, 3x the warm build plus 5 ms per record.

Then, for vaults of 10 to 10,000 decisions (and 1,000 with one oversized note), what
`vault-tools context --budget B` gives the agent under each budget: characters, lines,
estimated tokens, rulings listed in full, topics named and open questions shown.

Absolute seconds depend on the machine; the ratios are what to compare.
The figures in docs/performance.md are this script's output from one run.
"""
from __future__ import annotations

import argparse
import compileall
import contextlib
import functools
import json
import math
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from benchmarks.judgments import report as judgments_report
from benchmarks.make_vault import BIG_FOLDER, make_vault
from benchmarks.owner_messages import report as owner_messages_report
from benchmarks.same_question import report as same_question_report
from vault_tools.launch import RESIDENT_COMMANDS, RESIDENT_TRIES
from vault_tools.resident_address import NO_RESIDENT_ENV

FLOOR = """
import os, sys
total = 0
for folder, dirs, files in os.walk(sys.argv[1]):
    dirs[:] = [d for d in dirs if not d.startswith(".")]
    for name in files:
        if name.endswith(".md"):
            with open(os.path.join(folder, name), "rb") as handle:
                total += len(handle.read())
print(total)
"""

BASELINE = """
import os, sys
import frontmatter
decisions = []
for folder, dirs, files in os.walk(sys.argv[1]):
    dirs[:] = [d for d in dirs if not d.startswith(".")]
    for name in files:
        if name.endswith(".md"):
            try:
                post = frontmatter.load(os.path.join(folder, name))
            except Exception:
                continue
            if post.get("type") == "decision":
                decisions.append(post)
print(len(decisions))
"""

# What is timed: this Python's console script, or (`--installed`, as `make bench` runs it) the one of a virtual
# environment the built wheel was installed into, as a user installs it, with that environment's Python for the
# floor, the baselines and bare start-up (an editable install's import hook costs every process of the checkout's
# environment, bare `python -c pass` included, about 10 ms a user does not pay).
PYTHON = sys.executable
BARE_PYTHON = [PYTHON, "-c", "pass"]
YARDSTICK = [PYTHON, "-c", "import yaml, sqlite3, json"]
SCRIPT = Path(PYTHON).with_name("vault-tools")  # the console script, as a user and a hook start it
VAULT_TOOLS = [str(SCRIPT)] if SCRIPT.exists() else [PYTHON, "-m", "vault_tools"]


def use_installed(environment: Path) -> None:
    """Time the console script and Python of `environment` (a virtual environment the wheel is installed in)."""
    global PYTHON, BARE_PYTHON, YARDSTICK, SCRIPT, VAULT_TOOLS
    PYTHON = str(environment / "bin" / "python")
    BARE_PYTHON, YARDSTICK = [PYTHON, "-c", "pass"], [PYTHON, "-c", "import yaml, sqlite3, json"]
    SCRIPT = environment / "bin" / "vault-tools"
    if not SCRIPT.exists():
        raise SystemExit(f"run.py: no console script at {SCRIPT}: install the wheel there first")
    VAULT_TOOLS = [str(SCRIPT)]


def resident_socket(vault: Path) -> Path:
    """Where the resident process of the timed install listens for `vault` (the socket's name follows the code)."""
    found = subprocess.run([PYTHON, "-c", "import sys; from vault_tools.resident_address import socket_path; "
                            "print(socket_path(sys.argv[1]) or '')", str(vault.resolve())],
                           capture_output=True, text=True, check=True)
    return Path(found.stdout.strip())


@dataclass
class Measure:
    seconds: list[float] = field(default_factory=list)
    peak_mb: float = 0.0
    cpu: list[float] = field(default_factory=list)  # user + system seconds of each run
    # Each run's time over its yardstick's (the floor, or bare python) timed just before it: on a machine
    # whose speed drifts (other work on it), pairs keep the ratio true where medians taken apart do not.
    ratios: list[float] = field(default_factory=list)

    @property
    def median(self) -> float:
        return statistics.median(self.seconds)

    @property
    def median_cpu(self) -> float:
        return statistics.median(self.cpu)

    @property
    def ratio(self) -> float:
        return statistics.median(self.ratios) if self.ratios else 1.0


def timed(args: list[str], cwd: Path | None = None, stdin: bytes | None = None,
          expect: int | None = None, one_cpu: bool = False) -> tuple[float, float, float]:
    """Wall seconds, peak RSS (MB) and CPU seconds of one process (fed `stdin`, as a hook is; held to one
    processor)."""
    pin = (lambda: os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})) if one_cpu else None
    started = time.perf_counter()
    process = subprocess.Popen(args, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               stdin=subprocess.PIPE if stdin is not None else None, preexec_fn=pin)
    if stdin is not None:
        process.stdin.write(stdin)
        process.stdin.close()
    _, status, usage = os.wait4(process.pid, 0)
    elapsed = time.perf_counter() - started
    process.returncode = os.waitstatus_to_exitcode(status)
    if expect is not None and process.returncode != expect:
        raise SystemExit(f"{' '.join(map(str, args))} exited {process.returncode}")
    return elapsed, peak_mb(usage), usage.ru_utime + usage.ru_stime


def peak_mb(usage: os.struct_rusage) -> float:  # type: ignore[name-defined]
    """ru_maxrss is in bytes on macOS and in KiB on Linux."""
    return usage.ru_maxrss / (1024 * 1024 if sys.platform == "darwin" else 1024)


def measure(args: list[str], repeat: int, before=None, cwd: Path | None = None, stdin: bytes | None = None,
            expect: int | None = None, one_cpu: bool = False, against: list[str] | None = None) -> Measure:
    """`repeat` runs of `args`, each after `before()`; with `against`, each paired with a run of that just before."""
    result = Measure()
    for _ in range(repeat):
        yardstick = timed(against)[0] if against else None
        if before:
            before()
        seconds, peak, cpu = timed(args, cwd, stdin, expect, one_cpu)
        result.seconds.append(seconds)
        result.cpu.append(cpu)
        result.peak_mb = max(result.peak_mb, peak)
        if yardstick:
            result.ratios.append(seconds / yardstick)
    return result


def drop_cache(vault: Path) -> None:
    shutil.rmtree(vault / ".vault-tools" / "cache", ignore_errors=True)


class NoteChanger:
    """Changes one ordinary note before each run: the 'one note changed' case."""

    def __init__(self, vault: Path) -> None:
        self.notes = sorted(p for p in (vault / "Areas").rglob("*.md"))
        self.count = 0

    def __call__(self) -> None:
        path = self.notes[self.count % len(self.notes)]
        self.count += 1
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(f"\nEdited for run {self.count}.\n")


def watcher_latency(vault: Path, saves: int, debounce_ms: int = 200) -> tuple[list[float], float]:
    """Seconds from a save of an open question to its page being rewritten, minus the debounce."""
    config = vault / ".vault-tools" / "config.yaml"
    original = config.read_text()
    config.write_text(original + f"debounce_ms: {debounce_ms}\nseal_delay_seconds: 600\n")
    question = next(p for p in sorted((vault / "Decisions").glob("D-*.md")) if "status: open" in p.read_text())
    page = vault / "Pinned" / "Open questions.md"
    watcher = subprocess.Popen([*VAULT_TOOLS, "watch", "--vault", str(vault)], stderr=subprocess.PIPE, text=True)
    latencies = []
    try:
        while not (watcher.stderr.readline() or "watching").startswith("watching"):
            pass
        text = question.read_text()
        for n in range(saves):
            time.sleep(debounce_ms / 1000 + 0.3)  # let the watcher go quiet: each save is measured alone
            marker = f"Benchmark save number {n} of the summary"
            new_text = text.replace('summary: "', f'summary: "{marker} ', 1)
            started = time.perf_counter()
            question.write_text(new_text)
            deadline = started + 30
            while time.perf_counter() < deadline and marker not in page.read_text():
                time.sleep(0.002)
            latencies.append(time.perf_counter() - started - debounce_ms / 1000)
    finally:
        watcher.terminate()
        _, _, usage = os.wait4(watcher.pid, 0)
        config.write_text(original)
    return latencies, peak_mb(usage)


def hook_calls(vault: Path) -> list[tuple[str, str, str, dict]]:
    """One hook call of each kind, as each agent sends them: every Claude Code call, then the Gemini CLI
    and Codex calls that take a path of their own (Gemini CLI shares Claude Code's snapshot, Codex has its
    own session-start budget, so its calls come last)."""
    sealed = next(p for p in sorted((vault / "Decisions").glob("D-*.md")) if "status: ruled" in p.read_text())
    ordinary = next(iter(sorted((vault / "Areas").rglob("*.md"))))
    question = {"questions": [{"question": "Should the weekly newsletter take a sponsor?", "header": "Sponsor",
                               "options": [{"label": "Yes", "description": ""}], "multiSelect": False}]}
    patch = f"*** Begin Patch\n*** Update File: {sealed.relative_to(vault)}\n@@\n-a\n+b\n*** End Patch\n"
    return [
        ("claude", "session-start", "session-start", {"hook_event_name": "SessionStart", "source": "startup"}),
        ("claude", "user-prompt-submit", "user-prompt-submit", {"prompt": "why is there still promotion in the footers? I said no"}),
        ("claude", "pre-tool-use, Edit of an ordinary note", "pre-tool-use", {"tool_name": "Edit", "tool_input": {"file_path": str(ordinary)}}),
        ("claude", "pre-tool-use, Read of an ordinary note", "pre-tool-use", {"tool_name": "Read", "tool_input": {"file_path": str(ordinary)}}),
        ("claude", "pre-tool-use, Edit of a sealed note (denied)", "pre-tool-use", {"tool_name": "Edit", "tool_input": {"file_path": str(sealed)}}),
        ("claude", "pre-tool-use, Bash", "pre-tool-use", {"tool_name": "Bash", "tool_input": {"command": "grep -r footer . | head"}}),
        ("claude", "pre-tool-use, AskUserQuestion", "pre-tool-use", {"tool_name": "AskUserQuestion", "tool_input": question}),
        ("claude", "post-tool-use, the tripwire, nothing changed (after its pre-tool-use)", "post-tool-use",
         {"hook_event_name": "PostToolUse", "tool_name": "Bash", "tool_input": {"command": "ls"}, "tool_response": {}}),
        ("gemini", "before-tool, ask_user", "before-tool", {"tool_name": "ask_user", "tool_input": question}),
        ("gemini", "before-tool, replace of a sealed note (denied)", "before-tool", {"tool_name": "replace", "tool_input": {"file_path": str(sealed)}}),
        ("gemini", "after-tool, the tripwire, nothing changed (after its before-tool)", "after-tool",
         {"hook_event_name": "AfterTool", "tool_name": "run_shell_command", "tool_input": {"command": "ls"}, "tool_response": {}}),
        ("codex", "session-start", "session-start", {"hook_event_name": "SessionStart", "source": "startup"}),
        ("codex", "pre-tool-use, apply_patch of a sealed note (denied)", "pre-tool-use", {"tool_name": "apply_patch", "tool_input": {"command": patch}}),
        ("codex", "post-tool-use, the tripwire, nothing changed (after its pre-tool-use)", "post-tool-use",
         {"hook_event_name": "PostToolUse", "tool_name": "Bash", "tool_input": {"command": "ls"}, "tool_response": "ok"}),
    ]


def measure_hooks(vault: Path, repeat: int) -> dict[str, Measure]:
    """Each hook as its agent runs it: a process, the event's JSON on stdin. The first call after a change
    (or with another session-start budget) reads the vault and keeps a snapshot; the figures are for the
    calls after it (the vault unchanged)."""
    results: dict[str, Measure] = {}
    warmed = None
    for agent, name, event, payload in hook_calls(vault):
        args = [*VAULT_TOOLS, "hook", agent]
        if warmed != (agent == "codex"):  # build the snapshot this agent's calls read
            first = json.dumps({"cwd": str(vault)}).encode()
            subprocess.run([*args, "session-start"], input=first, stdout=subprocess.DEVNULL, check=True)
            time.sleep(2.1)
            subprocess.run([*args, "session-start"], input=first, stdout=subprocess.DEVNULL, check=True)
            warmed = agent == "codex"
        label = f"hook {name}" if agent == "claude" else f"hook {agent} {name}"
        stdin = json.dumps({"cwd": str(vault), **payload}).encode()
        # The tripwire after a call its pre-tool-use hook saw begin, as an agent runs them: it then walks the vault
        # for decision notes the call changed (`commands.held`); the call before it is not timed.
        before_event = {"post-tool-use": "pre-tool-use", "after-tool": "before-tool"}.get(event)
        begin = functools.partial(subprocess.run, [*args, before_event], input=stdin, stdout=subprocess.DEVNULL,
                                  check=True) if before_event else None
        results[label] = measure([*args, event], repeat, before=begin, stdin=stdin, against=BARE_PYTHON)
    return results


def unsealed_vault(size: int, workdir: Path, shared: bool = False) -> tuple[Path, int]:
    """A vault of `size` notes whose rulings are all unsealed and whose ledger is empty, every note left alone
    for an hour (past the debounce and the sealing delay); and how many rulings it holds."""
    vault = workdir / f"unsealed-{size}{'-shared' if shared else ''}"
    subprocess.run([sys.executable, str(Path(__file__).with_name("make_vault.py")), str(vault), "--notes", str(size),
                    "--unsealed", *(["--shared"] if shared else [])], check=True, stdout=subprocess.DEVNULL)
    an_hour_ago = time.time() - 3600
    rulings = 0
    for path in vault.rglob("*.md"):
        if ".vault-tools" not in path.parts:
            os.utime(path, (an_hour_ago, an_hour_ago))
            rulings += path.parent.name == "Decisions" and "\nstatus: ruled\n" in path.read_text(encoding="utf-8")
    return vault, rulings


class FreshCopy:
    """Before each run: a new copy of the unsealed vault in a folder of its own, written out to disk, its note
    cache filled by a `build` (as on a vault in use), past the cache's racy window.

    No copy is removed before the benchmark ends (they go with its work folder: about 2.5 GB by then). On
    ext4 without a journal (this project's build machines), a new file passes over every inode freed in the
    last minute, or six minutes while the inode's table block is not yet written back, looking each one up (the
    kernel's `recently_deleted`): the previous copy of 50,000 notes removed just before made each note the
    reconcile wrote cost 0.4 ms instead of 0.03 ms (0.4 s of a 2 s run), which a vault in use does not see.
    The copy is synced before the runs: its pages still being written back slowed both unevenly."""

    def __init__(self, source: Path, target: Path) -> None:
        self.source = source
        self.target = target
        self.copies = 0

    def __call__(self) -> Path:
        self.copies += 1
        copy = self.target.with_name(f"{self.target.name}-{self.copies}")
        shutil.copytree(self.source, copy, symlinks=True)
        os.sync()
        time.sleep(2.1)
        # exit 1 on the large vaults (their open-question backlog is over the pages' budget): the cache is filled
        subprocess.run([*VAULT_TOOLS, "build", "--vault", str(copy)], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        return copy


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds a running process has used so far (Linux /proc, else `ps`)."""
    stat = Path(f"/proc/{pid}/stat")
    if stat.exists():
        fields = stat.read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    text = subprocess.run(["ps", "-o", "time=", "-p", str(pid)], capture_output=True, text=True).stdout.strip()
    seconds = 0.0
    for part in text.replace("-", ":").split(":"):
        seconds = seconds * 60 + float(part)
    return seconds


def idle_cpu(vault: Path, seconds: float) -> tuple[float, float]:
    """Start `vault-tools watch` on `vault` (whose first reconcile seals every ruling), wait for it to be done and
    for the file events of its own writes to pass, then measure its CPU use over `seconds`: (percent, seconds to
    reconcile at start)."""
    started = time.perf_counter()
    watcher = subprocess.Popen([*VAULT_TOOLS, "watch", "--vault", str(vault)], stderr=subprocess.PIPE, text=True)
    try:
        while not (watcher.stderr.readline() or "watching").startswith("watching"):
            pass  # one log line per ruling sealed, then "watching ..." once the first reconcile is done
        reconciled = time.perf_counter() - started
        threading.Thread(target=watcher.stderr.read, daemon=True).start()  # keep its pipe drained
        time.sleep(5)  # the debounce (2 s) and the events of its own writes pass
        before = cpu_seconds(watcher.pid)
        time.sleep(seconds)
        used = cpu_seconds(watcher.pid) - before
    finally:
        watcher.terminate()
        watcher.wait()
    return 100 * used / seconds, reconciled


def measure_reconcile(size: int, repeat: int, idle_seconds: float, workdir: Path,
                      shared: bool = False) -> dict[str, object]:
    """`watch --once` on fresh copies of an unsealed vault of `size` notes, each run paired with a warm `build`
    of the same copy just before it (the ratio is taken pair by pair); then the watcher's CPU while idle."""
    source, rulings = unsealed_vault(size, workdir, shared)
    fresh = FreshCopy(source, source.with_name(f"{source.name}-run"))
    build, once, cpu_ratios = Measure(), Measure(), []
    for _ in range(repeat):
        copy = fresh()
        for result, args, expect in ((build, [*VAULT_TOOLS, "build", "--vault", str(copy)], None),
                                     (once, [*VAULT_TOOLS, "watch", "--once", "--vault", str(copy)], 0)):
            seconds, peak, cpu = timed(args, expect=expect)
            result.seconds.append(seconds)
            result.cpu.append(cpu)
            result.peak_mb = max(result.peak_mb, peak)
        once.ratios.append(once.seconds[-1] / build.seconds[-1])
        cpu_ratios.append(once.cpu[-1] / build.cpu[-1])
    found: dict[str, object] = {"rulings": rulings, "build": build, "once": once,
                                "cpu_ratio": statistics.median(cpu_ratios), "shared": shared}
    if idle_seconds:
        found["idle"] = idle_cpu(fresh(), idle_seconds)
    return found  # the copies go with the work folder, at the very end (see `FreshCopy`)


def reconcile_table(size: int, found: dict[str, object]) -> str:
    """`watch --once` with every ruling unsealed, as a multiple of a warm `build` of the same vault, pair by pair."""
    build, once, cpu_ratio = found["build"], found["once"], found["cpu_ratio"]
    assert isinstance(build, Measure) and isinstance(once, Measure) and isinstance(cpu_ratio, float)
    rulings = found["rulings"]
    layout = ", in the shared layout `init` makes" if found.get("shared") else ""
    lines = [f"#### Reconciling {size:,} notes whose {rulings:,} rulings are all unsealed{layout}", "",
             "| measurement | seconds | x warm build | CPU seconds | CPU x warm build | peak RSS MB |",
             "|---|---:|---:|---:|---:|---:|",
             f"| build, warm, nothing changed (the baseline) | {build.median:.3f} | 1.0 | {build.median_cpu:.3f} | 1.0 "
             f"| {build.peak_mb:.0f} |",
             f"| watch --once: seal {rulings:,} rulings, apply their supersedes | {once.median:.3f} | "
             f"{once.ratio:.2f} | {once.median_cpu:.3f} | {cpu_ratio:.2f} | {once.peak_mb:.0f} |"]
    if "idle" in found:
        percent, reconciled = found["idle"]
        lines += ["", f"`watch` started on such a vault: first reconcile done after {reconciled:.1f} s; then "
                      f"{percent:.1f}% CPU while idle (over {found.get('idle_seconds', 30):g} s)."]
    return "\n".join(lines)


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, math.ceil(fraction * len(ordered)) - 1)]


def run_size(size: int, repeat: int, saves: int, workdir: Path) -> dict[str, Measure | tuple]:
    vault = workdir / f"vault-{size}"
    print(f"\n## {size:,} notes", flush=True)
    started = time.perf_counter()
    # In a process of its own: a child's peak RSS counts from the size of the process that started it.
    subprocess.run([sys.executable, str(Path(__file__).with_name("make_vault.py")), str(vault), "--notes", str(size)],
                   check=True, stdout=subprocess.DEVNULL)
    print(f"(generated in {time.perf_counter() - started:.1f} s)", flush=True)
    time.sleep(2.1)  # past the cache's racy window, so warm runs can trust it
    results: dict[str, Measure | tuple] = {}
    floor = [PYTHON, "-c", FLOOR, str(vault)]
    results["floor: read every note"] = measure(floor, repeat)
    results["baseline: frontmatter.load loop"] = measure([PYTHON, "-c", BASELINE, str(vault)],
                                                         max(1, repeat if size <= 10000 else 1), against=floor)
    for command in ("build", "lint", "context"):
        args = [*VAULT_TOOLS, command, "--vault", str(vault)]
        results[f"{command}, cold (no cache)"] = measure(args, repeat, before=lambda: drop_cache(vault), against=floor)
        subprocess.run(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fills the cache
        time.sleep(2.1)
        results[f"{command}, warm, nothing changed"] = measure(args, repeat, against=floor)
        results[f"{command}, warm, one note changed"] = measure(args, repeat, before=NoteChanger(vault), against=floor)
        if command == "build" and hasattr(os, "sched_setaffinity"):
            results["build, cold, on one processor"] = measure(args, repeat, before=lambda: drop_cache(vault),
                                                               one_cpu=True, against=floor)
    # search: a warm index answers in the time it takes to stat the notes; the baseline is starting the tool
    results["start-up: vault-tools version"] = measure([*VAULT_TOOLS, "version"], repeat, against=floor)
    search = [*VAULT_TOOLS, "search", "newsletter footer author", "--vault", str(vault)]
    results["search, cold (no index)"] = measure(search, repeat, before=lambda: drop_cache(vault), against=floor)
    subprocess.run(search, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(2.1)
    results["search, warm, nothing changed"] = measure(search, repeat, against=floor)
    results["search, warm, one note changed"] = measure(search, repeat, before=NoteChanger(vault), against=floor)
    # the same-matter check: `ask` with a current ruling's words under a new topic key is refused (writes nothing)
    ruling = next(p for p in sorted((vault / "Decisions").glob("D-*.md")) if "status: ruled" in p.read_text())
    words = next(line for line in ruling.read_text().splitlines() if line.startswith("summary: "))
    same = [*VAULT_TOOLS, "ask", words.removeprefix("summary: ").strip('"'), "--topic", "a-key-never-used",
            "--vault", str(vault)]
    results["ask refused as the same matter, warm"] = measure(same, repeat, against=floor)
    if size <= 10000:
        results.update(measure_hooks(vault, max(repeat, 11)))
    if saves and size <= 10000:
        latencies, peak = watcher_latency(vault, saves)
        results["watcher: save to page, after debounce"] = (latencies, peak)
    shutil.rmtree(vault)
    return results


# The targets as set on a machine where bare python starts in 9 ms: the hooks that touch no decision note
# answer in 30 ms, `version` and the start-up of `context` take 50 ms. Held as multiples of bare python.
BARE_PYTHON_MS = 9
HOOK_TARGET_MS = 30
START_UP_TARGET_MS = 50
QUIET_HOOKS = ("pre-tool-use, Bash", "pre-tool-use, Edit of an ordinary note", "pre-tool-use, Read of an ordinary note")


def load_average() -> str:
    """The machine's load average, saying how much other work shared it (the ratios are paired for that)."""
    return f", load average {os.getloadavg()[0]:.1f}" if hasattr(os, "getloadavg") else ""


def is_hook(name: str) -> bool:
    return name.startswith("hook ")


def start_up(workdir: Path, runs: int) -> dict[str, Measure]:
    """What starting costs: each command run in turn, round after round, so drift hits all alike."""
    vault = workdir / "no-notes"
    subprocess.run([*VAULT_TOOLS, "init", "--vault", str(vault), "--timezone", "UTC"], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(2.1)  # past the racy window: the config is cached as it is on any later day
    subprocess.run([*VAULT_TOOLS, "context", "--vault", str(vault)], check=True, stdout=subprocess.DEVNULL)
    commands = {"bare python (python -c pass)": BARE_PYTHON,
                "python importing yaml, sqlite3 and json": YARDSTICK,
                "vault-tools version": [*VAULT_TOOLS, "version"],
                "vault-tools context, a vault with no notes": [*VAULT_TOOLS, "context", "--vault", str(vault)]}
    results = {name: Measure() for name in commands}
    for _ in range(runs):
        bare = 0.0
        for name, args in commands.items():  # bare python first: each run is paired with the round's
            seconds, peak, _ = timed(args)
            bare = bare or seconds
            results[name].seconds.append(seconds)
            results[name].ratios.append(seconds / bare)
            results[name].peak_mb = max(results[name].peak_mb, peak)
    shutil.rmtree(vault)
    return results


def start_up_table(results: dict[str, Measure], hooks: dict[str, Measure], hooks_size: int) -> str:
    hook_target = HOOK_TARGET_MS / BARE_PYTHON_MS
    start_target = START_UP_TARGET_MS / BARE_PYTHON_MS
    lines = ["### Start-up", "", "| measurement | seconds | x bare python | target (x bare python) | peak RSS MB |",
             "|---|---:|---:|---:|---:|"]
    for name, value in results.items():
        target = f"{start_target:.1f}" if name.startswith("vault-tools") else ""
        lines.append(f"| {name} | {value.median:.3f} | {value.ratio:.1f} | {target} | {value.peak_mb:.0f} |")
    if hooks:
        lines += ["", f"### Agent hooks, {hooks_size:,} notes", "",
                  "| hook | median s | min | max | x bare python | target (x bare python) |",
                  "|---|---:|---:|---:|---:|---:|"]
        for name, value in hooks.items():
            target = f"{hook_target:.1f}" if name.removeprefix("hook ") in QUIET_HOOKS else ""
            lines.append(f"| {name.removeprefix('hook ')} | {value.median:.3f} | {min(value.seconds):.3f} | "
                         f"{max(value.seconds):.3f} | {value.ratio:.1f} | {target} |")
    return "\n".join(lines)


def table(size: int, results: dict[str, Measure | tuple]) -> str:
    floor = results["floor: read every note"]
    baseline = results["baseline: frontmatter.load loop"]
    assert isinstance(floor, Measure) and isinstance(baseline, Measure)
    start_up = results.get("start-up: vault-tools version")
    warm = results.get("search, warm, nothing changed")
    same = results.get("ask refused as the same matter, warm")
    over = (f"warm search minus start-up: {warm.median - start_up.median:.3f} s (target: under 0.100 s)"
            if isinstance(start_up, Measure) and isinstance(warm, Measure) else "")
    if isinstance(start_up, Measure) and isinstance(same, Measure):
        over += (f"\nsame-matter check (ask, refused) minus start-up: {same.median - start_up.median:.3f} s "
                 f"({same.median / start_up.median:.2f} x start-up; target: under 0.100 s over it)")
    lines = [f"### {size:,} notes", "", *([over, ""] if over else []),
             "| measurement | seconds | x floor | x baseline | peak RSS MB |", "|---|---:|---:|---:|---:|"]
    for name, value in results.items():
        if is_hook(name):
            continue  # in the start-up table, against bare python
        if isinstance(value, Measure):
            lines.append(f"| {name} | {value.median:.3f} | {value.ratio:.1f} | "
                         f"{value.ratio / baseline.ratio:.2f} | {value.peak_mb:.0f} |")
        else:
            latencies, peak = value
            lines.append(f"| {name}: median | {statistics.median(latencies):.3f} | | | {peak:.0f} |")
            lines.append(f"| {name}: p95 | {percentile(latencies, 0.95):.3f} | | | |")
    return "\n".join(lines)


def scaling(all_results: dict[int, dict[str, Measure | tuple]]) -> str:
    sizes = sorted(all_results)
    if len(sizes) < 2:
        return ""
    small, large = sizes[-2], sizes[-1]
    lines = [f"### Scaling from {small:,} to {large:,} notes (time grows as size^k)", "",
             "k from the median seconds, and from the ratio to the floor (which reads every byte, so grows linearly: "
             "k = 1 + how the ratio grew); the sizes are measured minutes apart, and only the second holds when "
             "other work on the machine changed in between.", "",
             "| measurement | k (seconds) | k (against the floor) |", "|---|---:|---:|"]
    for name, value in all_results[large].items():
        other = all_results[small].get(name)
        if isinstance(value, Measure) and isinstance(other, Measure) and not is_hook(name):
            seconds = math.log(value.median / other.median) / math.log(large / small)
            against = 1 + math.log(value.ratio / other.ratio) / math.log(large / small)
            lines.append(f"| {name} | {seconds:.2f} | {against:.2f} |")
    return "\n".join(lines)


CONTEXT_BUDGETS = ("claude-hook", "codex-hook", "memory-file")
MAX_OPEN = 20  # the open-question backlog of the context vaults: it does not grow with the record


def context_rows(decisions: int, workdir: Path, oversized: bool = False) -> list[str]:
    """One table row per budget: what the agent reads from a vault of `decisions` decision notes."""
    vault = workdir / f"context-{decisions}{'-oversized' if oversized else ''}"
    subprocess.run([sys.executable, str(Path(__file__).with_name("make_vault.py")), str(vault), "--notes", "0",
                    "--decisions", str(decisions), "--max-open", str(MAX_OPEN), *(["--oversized"] if oversized else [])],
                   check=True, stdout=subprocess.DEVNULL)
    label = f"{decisions:,}" + (" + 1 oversized" if oversized else "")
    rows = []
    for budget in CONTEXT_BUDGETS:
        args = [*VAULT_TOOLS, "context", "--budget", budget, "--vault", str(vault)]
        started = time.perf_counter()
        done = subprocess.run([*args, "--json"], capture_output=True, text=True)
        seconds = time.perf_counter() - started
        text = subprocess.run(args, capture_output=True, text=True).stdout
        data = json.loads(done.stdout)
        limit = data["budget"]
        used = data["used"]
        within = all(limit[key] is None or used[key] <= limit[key] for key in ("characters", "lines", "bytes", "tokens"))
        assert used["characters"] == len(text), "the JSON and the text differ"
        topics = len(data["topics"]) + data["topics_left_out"]
        rulings = len(data["rulings"]) + data["rulings_left_out"]
        questions = len(data["open_questions"]) + data["open_questions_left_out"]
        rows.append(f"| {label} | {budget} | {used['characters']:,} | {used['lines']:,} | {used['tokens']:,} | "
                    f"{'yes' if within else '**no**'} | {len(data['rulings']):,} of {rulings:,} | "
                    f"{len(data['topics']):,} of {topics:,} ({_percent(len(data['topics']), topics)}) | "
                    f"{len(data['open_questions'])} of {questions} ({_percent(len(data['open_questions']), questions)}) | "
                    f"{seconds:.2f} |")
    shutil.rmtree(vault)
    return rows


def _percent(part: int, whole: int) -> str:
    return "100%" if part == whole else f"{100 * part / whole:.0f}%"


def context_table(sizes: list[int], workdir: Path) -> str:
    lines = ["### What the agent reads", "",
             "| decisions | budget | characters | lines | tokens (est.) | within budget | rulings in full | "
             "topics named | open questions | seconds |",
             "|---|---|---:|---:|---:|---|---:|---:|---:|---:|"]
    for size in sizes:
        print(f"(context: {size:,} decisions)", flush=True)
        lines += context_rows(size, workdir)
    if 1000 in sizes:
        lines += context_rows(1000, workdir, oversized=True)
    return "\n".join(lines)


def reconcile_tables(size: int, args: argparse.Namespace, workdir: Path) -> None:
    """The reconcile's tables at `size`: in the hidden layout, with the idle watcher, then in the shared one."""
    found = measure_reconcile(size, args.repeat, args.idle_seconds, workdir)
    found["idle_seconds"] = args.idle_seconds
    print()
    print(reconcile_table(size, found), flush=True)
    print()
    print(reconcile_table(size, measure_reconcile(size, args.repeat, 0, workdir, shared=True)), flush=True)


def import_table(notes: int, adrs: int, repeat: int, workdir: Path) -> str:
    """`import adr` of `adrs` generated ADRs into a copy of a `notes`-note vault, against a warm build of it."""
    from benchmarks.make_adrs import make_adrs

    source = workdir / f"import-vault-{notes}"
    if not source.exists():
        subprocess.run([sys.executable, str(Path(__file__).with_name("make_vault.py")), str(source), "--notes",
                        str(notes)], check=True, stdout=subprocess.DEVNULL)
    folder = workdir / f"adrs-{adrs}"
    if not folder.exists():
        make_adrs(folder, adrs)
    builds, imports = [], []
    for run in range(repeat):
        copy = workdir / f"import-copy-{notes}-{run}"
        shutil.copytree(source, copy, symlinks=True)
        subprocess.run([*VAULT_TOOLS, "build", "--vault", str(copy)], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        builds.append(timed([*VAULT_TOOLS, "build", "--vault", str(copy)])[0])
        imports.append(timed([*VAULT_TOOLS, "import", "adr", str(folder), "--vault", str(copy)], expect=0)[0])
    build, imported = statistics.median(builds), statistics.median(imports)
    target = 3 * build + 0.005 * adrs
    return "\n".join([
        f"## Import: {adrs:,} ADRs into a {notes:,}-note vault", "",
        "| warm build | import adr | per record | target (3x build + 5 ms/record) | within |", "|---|---|---|---|---|",
        f"| {build:.2f} s | {imported:.2f} s | {imported / adrs * 1000:.1f} ms | {target:.2f} s | "
        f"{'yes' if imported <= target else 'NO'} ({imported / target:.2f} of it) |"])


AGENT_COMMAND_TARGET_S = 0.150  # issue: each of the agent's commands, warm, on a vault of this size
AGENT_HOOK_TARGET_S = 0.100


Command = list[str] | Callable[[], list[str]]  # a callable: a new command each run (a new ruling, a new question)


def time_commands(commands: dict[str, tuple[Command, int]], repeat: int,
                  settle: float = 0) -> dict[str, Measure]:
    """Each command timed `repeat` times, each run paired with `vault-tools version`; one that writes (a callable)
    `settle` seconds after the one before (the watcher's pass over what it wrote is over by then)."""
    results: dict[str, Measure] = {}
    for name, (args, code) in commands.items():
        if callable(args):
            results[name] = Measure()
            for _ in range(repeat):
                time.sleep(settle)
                yardstick = timed([*VAULT_TOOLS, "version"])[0]
                seconds, peak, _ = timed(args(), expect=code)
                results[name].seconds.append(seconds)
                results[name].ratios.append(seconds / yardstick)
                results[name].peak_mb = max(results[name].peak_mb, peak)
        else:
            results[name] = measure(args, repeat, expect=code, against=[*VAULT_TOOLS, "version"])
    return results


# After the warm-up's ruling, the watcher's own pass (after its 2 s debounce) is over before timing starts:
# the resident process shares the machine with it.
RESIDENT_SETTLES_SECONDS = 6


@contextlib.contextmanager
def resident_process(vault: Path) -> Iterator[None]:
    """`vault-tools watch` running on `vault` once its resident process listens and its first pass is over
    (the resident process starts before it: a first pass recording a vault's notes would share the machine with
    what is timed)."""
    with tempfile.TemporaryFile() as log:
        watcher = subprocess.Popen([*VAULT_TOOLS, "watch", "--vault", str(vault)], stdin=subprocess.DEVNULL,
                                   stdout=subprocess.DEVNULL, stderr=log)
        path = resident_socket(vault)
        try:
            deadline = time.monotonic() + 300
            while time.monotonic() < deadline and watcher.poll() is None and not (
                    path.is_socket() and b"watching " in _whole(log)):  # said once its first pass is over
                time.sleep(0.1)
            if not path.is_socket() or watcher.poll() is not None:
                raise SystemExit(f"bench: no resident process listened for {vault}")
            yield
        finally:
            watcher.terminate()
            watcher.wait(timeout=60)


def _whole(file: IO[bytes]) -> bytes:
    file.seek(0)
    return file.read()


def agent_commands_table(workdir: Path, repeat: int, notes: int = 5500, decisions: int = 1000,
                         big_folder: int = 1000) -> str:
    """The commands an agent runs many times a session, and every hook, on a vault the size of a real one the
    owner keeps (6,500 notes, 1,000 decisions, a folder of 1,000 notes; the shared layout `init` makes), warm:
    each run paired with a run of `vault-tools version` just before it. `rule` records a new ruling each run
    (warm after the one before: what the first call after a change pays); `ask` is refused as the same matter
    (it writes nothing)."""
    vault = workdir / "agent-commands"
    make_vault(vault, notes, decisions=decisions, shared=True, big_folder=big_folder)
    in_vault = ["--vault", str(vault)]
    ruling = next(p for p in sorted((vault / "Decisions").glob("D-*.md")) if "status: ruled" in p.read_text())
    front = ruling.read_text(encoding="utf-8").split("---")[1]
    ruling_id = next(line.split(": ", 1)[1] for line in front.splitlines() if line.startswith("id: "))
    topic = next(line.split("[", 1)[1].rstrip("]") for line in front.splitlines() if line.startswith("topics: "))
    summary = next(line.split(": ", 1)[1].strip('"') for line in front.splitlines() if line.startswith("summary: "))
    numbers = iter(range(1, 1000))

    def new_words() -> str:
        return "".join(chr(ord("a") + int(digit)) for digit in f"{next(numbers):03d}")  # no other decision says them

    def rule_args() -> list[str]:
        letters = new_words()
        return [*VAULT_TOOLS, "rule", "--topic", f"bench-{letters}", "--summary",
                f"Quokka{letters} zebroid{letters} heliograph{letters} stands.", *in_vault]

    def ask_args() -> list[str]:
        letters = new_words()
        return [*VAULT_TOOLS, "ask", f"Should the wombat{letters} narwhal{letters} gazebo{letters} open?", "--topic",
                f"bench-{letters}", *in_vault]

    commands: dict[str, tuple[Command, int]] = {  # those that write last: the first call after them pays for the change
        "ask, refused as the same matter": ([*VAULT_TOOLS, "ask", summary, "--topic", f"other-{topic}", *in_vault], 1),
        "rule, refused as the same matter": ([*VAULT_TOOLS, "rule", "--topic", f"other-{topic}", "--summary", summary,
                                              *in_vault], 1),
        "lookup": ([*VAULT_TOOLS, "lookup", topic, *in_vault], 0),
        "show": ([*VAULT_TOOLS, "show", ruling_id, *in_vault], 0),
        "search": ([*VAULT_TOOLS, "search", "pricing metric", *in_vault], 0),
        "context": ([*VAULT_TOOLS, "context", *in_vault], 0),
        "rule, a new ruling (each after the one before)": (rule_args, 0),
    }
    time.sleep(2.1)  # past the racy window: what is read now is kept as it is on any later day
    for args, _ in commands.values():
        subprocess.run(args() if callable(args) else args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(2.1)
    for args, _ in commands.values():  # the memos are kept now, past the racy window
        subprocess.run(args() if callable(args) else args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(2.1)  # and the last ruling's too
    for args, _ in commands.values():
        if not callable(args):
            subprocess.run(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    results = time_commands(commands, repeat)
    with resident_process(vault):  # the same commands answered by the process `vault-tools watch` keeps
        time.sleep(2.1)
        for args, _ in commands.values():
            subprocess.run(args() if callable(args) else args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(RESIDENT_SETTLES_SECONDS)
        asked = {name: command for name, command in commands.items()  # the name starts with the command's
                 if name.split(",")[0] in RESIDENT_COMMANDS | RESIDENT_TRIES}
        results.update({f"{name}, {'run' if name.startswith(tuple(RESIDENT_TRIES)) else 'answered'} by the "
                        f"watcher's resident process": found
                        for name, found in time_commands(asked, repeat, settle=RESIDENT_SETTLES_SECONDS).items()})
        # Last: each leaves an open question, which every command after it works on (the rulings it lacks)
        new_question = "ask, a new question (each after the one before)"
        results.update(time_commands({
            new_question: (lambda: ["env", f"{NO_RESIDENT_ENV}=1", *ask_args()], 0),
            f"{new_question}, run by the watcher's resident process": (ask_args, 0),
        }, repeat, settle=RESIDENT_SETTLES_SECONDS))
        # An agent's commands come in runs: a second apart, before the resident process reads the vault again on
        # its own (2.5 s after a write), each pays for the walk after the change the one before made
        results.update(time_commands({
            "ask, a new question a second after the one before, run by the watcher's resident process":
                (ask_args, 0)}, repeat, settle=1.0))
    time.sleep(2.1)  # the hooks' snapshot is kept once what the rulings wrote is past the racy window
    hooks = measure_hooks(vault, repeat)
    rm_folder = {"tool_name": "Bash", "tool_input": {"command": f'rm -rf "{BIG_FOLDER}"'}}
    hooks["hook pre-tool-use, Bash rm -rf of a folder of 1,000 notes"] = measure(
        [*VAULT_TOOLS, "hook", "claude", "pre-tool-use"], repeat,
        stdin=json.dumps({"cwd": str(vault), **rm_folder}).encode(), against=[*VAULT_TOOLS, "version"])
    start = measure([*VAULT_TOOLS, "version"], repeat)
    lines = [f"### The agent's commands, {notes + decisions:,} notes ({decisions:,} decisions, a folder of "
             f"{big_folder:,} notes), warm", "",
             f"start-up, `vault-tools version` in the same run: {start.median:.3f} s", "",
             "| command | median s | min | max | x start-up | target s | met |", "|---|---:|---:|---:|---:|---:|---|"]
    for name, found in [*results.items(), *hooks.items()]:
        target = AGENT_HOOK_TARGET_S if name.startswith("hook") else AGENT_COMMAND_TARGET_S
        lines.append(f"| {name} | {found.median:.3f} | {min(found.seconds):.3f} | {max(found.seconds):.3f} | "
                     f"{found.ratio:.1f} | {target:.3f} | {'yes' if found.median <= target else 'no'} |")
    shutil.rmtree(vault)
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,50000")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--saves", type=int, default=50)
    parser.add_argument("--context-sizes", default="10,100,1000,10000")
    parser.add_argument("--only-context", action="store_true", help="only the table of what the agent reads")
    parser.add_argument("--reconcile", default="10000,50000",
                        help="sizes (among --sizes) at which to time watch --once on an unsealed vault ('' for none)")
    parser.add_argument("--only-reconcile", action="store_true",
                        help="only the reconcile tables (at the --reconcile sizes)")
    parser.add_argument("--idle-seconds", type=float, default=30, help="how long to measure the idle watcher's CPU")
    parser.add_argument("--imports", default="10000:2000",
                        help="NOTES:ADRS to time `import adr` of ADRS generated ADRs into a NOTES-note vault ('' for none)")
    parser.add_argument("--only-imports", action="store_true", help="only the import table")
    parser.add_argument("--agent-commands", default="5500:1000:1000",
                        help="NOTES:DECISIONS:BIG_FOLDER of the vault the agent's commands are timed on ('' for none)")
    parser.add_argument("--only-agent-commands", action="store_true", help="only the agent's commands table")
    parser.add_argument("--installed", type=Path, metavar="VENV",
                        help="time the console script of this virtual environment, where the wheel is installed")
    args = parser.parse_args()
    if args.installed:
        use_installed(args.installed.resolve())
    only = args.only_context or args.only_reconcile or args.only_imports or args.only_agent_commands
    sizes = [] if only else [int(size) for size in args.sizes.split(",")]
    context_sizes = [] if args.only_reconcile or args.only_imports or args.only_agent_commands else \
        [int(size) for size in args.context_sizes.split(",") if size]
    print(f"# vault-tools benchmark: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
          f"Python {platform.python_version()}, {platform.system()} {platform.release()}{load_average()}")
    print(f"\nTimed: {' '.join(VAULT_TOOLS)}" + (" (the built wheel, installed)" if args.installed else ""))
    print()
    if not args.only_agent_commands:
        print("\n".join(same_question_report()))
        print()
        print("\n".join(owner_messages_report()))
        print()
        print("\n".join(judgments_report()))
    compileall.compile_dir(Path(__file__).resolve().parents[1] / "vault_tools", quiet=1)
    all_results = {}
    with tempfile.TemporaryDirectory(prefix="vault-tools-bench-") as workdir:
        if args.agent_commands and (args.only_agent_commands or not only):
            notes, decisions, big_folder = (int(part) for part in args.agent_commands.split(":"))
            print()
            print(agent_commands_table(Path(workdir), args.repeat, notes, decisions, big_folder), flush=True)
        if args.only_agent_commands:
            return
        reconcile_sizes = [int(size) for size in args.reconcile.split(",") if size]
        for size in reconcile_sizes if args.only_reconcile else []:
            reconcile_tables(size, args, Path(workdir))
        started = start_up(Path(workdir), max(args.repeat, 11)) if sizes else {}
        for size in sizes:
            all_results[size] = run_size(size, args.repeat, args.saves, Path(workdir))
            print(table(size, all_results[size]), flush=True)
            if size in reconcile_sizes:
                reconcile_tables(size, args, Path(workdir))
        if all_results:
            print()
            print(scaling(all_results))
        if started:
            hooks_size = max((size for size, results in all_results.items() if any(map(is_hook, results))), default=0)
            hooks = {name: value for name, value in all_results.get(hooks_size, {}).items()
                     if is_hook(name) and isinstance(value, Measure)}
            print()
            print(start_up_table(started, hooks, hooks_size), flush=True)
        if args.imports and not (args.only_context or args.only_reconcile):
            notes, adrs = (int(part) for part in args.imports.split(":"))
            print()
            print(import_table(notes, adrs, args.repeat, Path(workdir)), flush=True)
        if context_sizes:
            print()
            print(context_table(context_sizes, Path(workdir)), flush=True)
    print(f"\n(at the end{load_average()})")


if __name__ == "__main__":
    main()
