"""The `vault-tools` console script's front door: what must answer fast skips the command line's imports.

An agent waits on every hook call, and importing the full command line (typer) costs more than a hook may
take, so `vault-tools hook AGENT EVENT [--vault PATH]` is answered from here, printing only the hook's JSON;
`vault-tools version` (or `--version`) prints the version; git's merge driver, `vault-tools merge-note BASE OURS THEIRS SHOWN`,
runs once per conflicting decision note of a pull and is answered from here too. `build`, `context`,
`lint` and `watch`, which pre-commit, CI and agents run on every commit, session or pull, and `show`, `lookup`,
`search`, `ask` and `rule`, which an agent runs many times a session, are answered from here when every
argument is one of theirs, spelt plainly (`QUICK`); their bodies are in `console`, `answers` and `recording`, which `cli`
calls too. Anything else, including `--help`, any other spelling of these, or an option given twice (but
those the parser takes as a list), goes to `cli.main`, which parses it (and reports a mistake) as every other
command.
"""
from __future__ import annotations

import importlib  # loaded already by Python's start-up: costs nothing here
import os
import sys

from . import __version__  # the package's own __init__: loaded already
from .errors import PIPE_CLOSED, VaultToolsError

# Imports inside functions: the front door answers hooks, `version` and the quick commands before anything else is loaded: start-up.

# The cyclic garbage collector's first threshold: a young collection once this many more objects were made
# than freed (Python's default is 700). Reading a vault makes objects that live until the command ends (a
# state of 10,000 notes is about a million), and with the default each is looked at again and again by
# collections that find nothing to free: 5% of a cold `build` of 10,000 notes and 14% of a cold `lint` of
# 50,000 (where full collections, each over every object, made the time grow faster than the vault). Peak
# memory measured the same: what the commands leave for the collector is small.
YOUNG_COLLECTION_AFTER = 100_000


def _hook_arguments(args: list[str]) -> tuple[str, str, str | None] | None:
    from .agents import HOOK_AGENTS, hook_module

    if len(args) not in (3, 5) or args[0] != "hook" or args[1] not in HOOK_AGENTS:
        return None
    if args[2] not in hook_module(args[1]).EVENTS:
        return None
    if len(args) == 3:
        return args[1], args[2], None
    if args[3] != "--vault":
        return None
    return args[1], args[2], args[4]


# For each command answered without the parser: its flags and its options taking a value (by spelling, to the
# name of the parameter of its function in `console`), and the parameter its positional arguments go to, if
# any. A test checks these against what `cli` declares.
QUICK: dict[str, tuple[dict[str, str], dict[str, str], str | None]] = {
    "build": ({"--check": "check", "--json": "json_"}, {"--today": "today", "--vault": "vault"}, None),
    "context": ({"--hook": "hook", "--json": "json_"}, {"--budget": "budget", "--today": "today", "--vault": "vault"},
                None),
    "lint": ({"--fix": "fix", "--strict": "strict", "--json": "json_"},
             {"--format": "format_", "--explain": "explain", "--today": "today", "--vault": "vault"}, "paths"),
    "watch": ({"--once": "once", "--json": "json_"}, {"--vault": "vault"}, None),
    "show": ({"--all": "all_", "--json": "json_"}, {"--vault": "vault"}, "decision_id"),
    "lookup": ({"--full": "full", "--json": "json_"}, {"--vault": "vault"}, "topics"),
    "search": ({"--history": "history", "--json": "json_"}, {"--limit": "limit", "--vault": "vault"}, "query"),
    "ask": ({"--json": "json_"}, {"--topic": "topic", "-t": "topic", "--body": "body", "--due": "due",
                                  "--reask-reason": "reask_reason", "--not-the-same": "not_the_same", "--by": "by",
                                  "--vault": "vault"}, "summary"),
    "rule": ({"--alongside-all": "alongside_all", "--json": "json_"},
             {"--summary": "summary", "--topic": "topic", "-t": "topic", "--source": "source",
              "--ruled-at": "ruled_at", "--supersedes": "supersedes", "--alongside": "alongside",
              "--reason": "reason", "--body": "body", "--revisit-if": "revisit_if", "--revisit-by": "revisit_by",
              "--term": "term", "--scope": "scope", "--not-the-same": "not_the_same", "--by": "by",
              "--vault": "vault"}, "decision_id"),
}
# The module holding each quick command's body (`console` unless named here): the reading commands an agent runs
# many times a session are in `answers`.
QUICK_BODIES = {"show": "answers", "lookup": "answers", "search": "answers", "ask": "recording", "rule": "recording"}
# Those whose positional argument is one value, not a list; and those that need at least one.
ONE_ARGUMENT = {"show", "ask", "rule"}
ARGUMENT_REQUIRED = {"show", "lookup", "search", "ask"}
REPEATABLE = {"topic", "not_the_same", "supersedes", "alongside", "term", "scope"}  # parameters given as a list
REQUIRED_OPTIONS = {"ask": {"topic"}, "rule": {"summary"}}
WHOLE_NUMBER_OPTIONS = {"--limit"}  # given to the command as an int (anything else: the parser says why not)


def quick_arguments(args: list[str]) -> tuple[str, dict[str, object]] | None:
    """The command of `QUICK` and its parameters, when every argument is plainly one of its own; else None."""
    if not args or args[0] not in QUICK:
        return None
    flags, options, positional = QUICK[args[0]]
    found: dict[str, object] = {}
    given: list[str] = []
    repeated: dict[str, list[str]] = {}
    rest = iter(args[1:])
    for token in rest:
        name, equals, value = token.partition("=")
        found_value: object
        if name in flags and not equals:
            key, found_value = flags[name], True
        elif name in options:
            if equals and not name.startswith("--"):
                return None  # `-t=x`: the parser reads the value `=x`
            text = value if equals else next(rest, None)
            if not text or (text.startswith("-") and text != "-"):
                return None  # missing, empty or looking like an option: the parser says what it makes of it
            # (`-` alone is a value: `--body -` reads stdin)
            if name in WHOLE_NUMBER_OPTIONS:
                if not text.isascii() or not text.isdigit():
                    return None
                key, found_value = options[name], int(text)
            else:
                key, found_value = options[name], text
        elif positional is not None and not token.startswith("-") and token:
            given.append(token)
            continue
        else:
            return None
        if key in REPEATABLE:
            repeated.setdefault(key, []).append(str(found_value))
            continue
        if key in found:
            return None
        found[key] = found_value
    if (args[0] in ARGUMENT_REQUIRED and not given) or (args[0] in ONE_ARGUMENT and len(given) > 1):
        return None
    found.update(repeated)
    if not REQUIRED_OPTIONS.get(args[0], set()) <= found.keys():
        return None
    if given:
        found[positional or ""] = given[0] if args[0] in ONE_ARGUMENT else given
    return args[0], found


def _print_whatever_the_encoding() -> None:
    """A character the output's encoding lacks (a terminal set to ASCII) or a file name that is not UTF-8 is
    printed escaped (`caf\\xe9`) rather than stopping the command with an encoding error. A stream the command
    was started without (`2>&-`: Python leaves it None) takes what is printed there to /dev/null."""

    if sys.stdout is None:
        sys.stdout = open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115 (for the process's whole life)
    if sys.stderr is None:
        sys.stderr = open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors="backslashreplace")


def script() -> None:
    """The console script (and `python -m vault_tools`): `main`, then out without tearing the interpreter down.

    A command on a large vault ends holding tens of megabytes of objects (the state of 10,000 notes), and
    freeing them one by one at exit takes 10-25 ms, longer than a hook's whole answer. Everything a command
    writes is on disk by then (files closed, the ledger unbuffered, the log flushed per line), so once its
    output is flushed the process leaves at once with its exit code. A code that is not a number, output
    that cannot be flushed (a closed pipe), or a profiler or coverage watching, takes the ordinary way out."""
    import gc

    gc.set_threshold(YOUNG_COLLECTION_AFTER, *gc.get_threshold()[1:])
    try:
        main()
        code = 0
    except SystemExit as done:
        if done.code is not None and not isinstance(done.code, int):
            raise
        code = done.code or 0
    except BrokenPipeError:  # printed to a pipe no longer read, outside any command (`version | true`)
        code = PIPE_CLOSED
    if sys.getprofile() is not None or sys.gettrace() is not None:
        raise SystemExit(code)  # a profiler or coverage writes its report on the ordinary way out

    # The note cache a reader is still writing (exit handlers do not run here). Read through `stores_running`:
    # a module may be partway imported by a thread (the one loading what a command run by the resident process
    # needs to make its writes here), and then ran nothing.
    reading = sys.modules.get("vault_tools.reading")
    if reading is not None and getattr(reading, "stores_running", None):
        reading.finish_stores()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except BrokenPipeError:  # what reads the output went away (`| head`): as a shell tool SIGPIPE ends
        os._exit(PIPE_CLOSED)
    except (OSError, ValueError):
        raise SystemExit(code) from None
    os._exit(code)


# The agent's reading commands the vault's resident process answers, when `vault-tools watch` keeps one
# (`resident`): those that write nothing of the record.
RESIDENT_COMMANDS = {"lookup", "show", "search", "context"}
# And those that write the record: run there too, each write made here, with the caller's own rights
# (`resident.answer_there`); declined before any write where one cannot be made so, then run here.
RESIDENT_TRIES = {"ask", "rule"}


def _asked_of_resident(args: list[str]) -> bool:
    """Whether the resident process is asked: one of its commands, not reading this process's stdin (`-`)."""
    if not args or args[0] not in RESIDENT_COMMANDS | RESIDENT_TRIES:
        return False
    return args[0] in RESIDENT_COMMANDS or not any(arg == "-" or arg.endswith("=-") for arg in args[1:])


# docs/design/0024-start-up-time.md
def main() -> None:
    _print_whatever_the_encoding()
    args = sys.argv[1:]
    if _asked_of_resident(args):
        from .resident_address import socket_to_ask  # here: neither a hook nor `version` looks for a socket

        if socket_to_ask(args) is not None:
            from .resident import answer_there  # here: only where one listens (socket, threads, JSON)
            answered = answer_there(args, tried=args[0] in RESIDENT_TRIES)
            if answered is not None:
                sys.exit(answered)
    quick = quick_arguments(args)
    if quick is not None:
        from . import console
        command, parameters = quick
        body = getattr(importlib.import_module(f"{__package__}.{QUICK_BODIES.get(command, 'console')}"), command)
        sys.exit(console.exit_code_of(lambda: body(**parameters)))
    if args in (["version"], ["--version"]):
        sys.stdout.write(__version__ + "\n")
        sys.exit(0)
    if len(args) == 5 and args[0] == "merge-note" and not any(arg.startswith("-") for arg in args[1:]):
        _merge_note(*args[1:])
    found = _hook_arguments(args)
    if found is None:
        from . import cli
        cli.main()
        return
    from pathlib import Path

    from .agents import hook_module
    agent, event, vault = found
    given = sys.stdin.buffer.read() if hasattr(sys.stdin, "buffer") else sys.stdin.read().encode("utf-8", "replace")
    # Bytes that are not UTF-8 become U+FFFD: such input is not JSON, or holds a string the hooks never match.
    text = hook_module(agent).run(event, given.decode("utf-8", "replace"), Path(vault) if vault is not None else None)
    if text:
        sys.stdout.write(text + "\n")
    sys.exit(0)



def _merge_note(base: str, ours: str, theirs: str, shown: str) -> None:
    """git's merge driver: exit 0 merged, 1 conflicts left in OURS; 2 (git keeps OURS) when the sides cannot
    be read or merged, said in one line naming the note."""
    from .commands.gitmerge import merge_note

    try:
        code = merge_note(base, ours, theirs, shown)
    except VaultToolsError as error:
        sys.stderr.write(f"error: {error}\n")
        code = 2
    except OSError as error:
        sys.stderr.write(f"error: {shown}: cannot merge: {error.strerror or error}\n")
        code = 2
    sys.exit(code)
