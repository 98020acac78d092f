"""What the command line prints, and how what went wrong becomes an exit code: everything but the parser.

Importing the parser (typer, in `cli`) costs more than a warm `build`, `context` or `lint` of a vault of a
thousand notes takes to run, and pre-commit, CI and agents run these on every commit or session (and
`watch --once` after a pull). So their bodies live here, and `launch` calls them directly when their arguments are plain (`launch.QUICK`); `cli`
calls the same functions once typer has parsed anything else. Only this module and `cli` print.
"""
from __future__ import annotations

import contextlib
import datetime as dt
import errno
import functools
import json
import os
import signal
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import __version__
from .dates import parse_day_option
from .errors import PIPE_CLOSED, InconsistentVault, VaultToolsError
from .layout import git_dir
from .record_files import STATE_DIR
from .resident_address import NO_RESIDENT_ENV, socket_path
from .services.workspace import Workspace
from .shapes import decision_json
from .vault import Vault

if TYPE_CHECKING:
    import subprocess

# Imports inside functions: `build`, `context`, `lint` and `watch` run on every commit, session and pull without
# the parser; each loads only what it uses (and rich only on a terminal, the crash log's modules only on a crash).


class _Stderr:
    """Messages on stderr: through rich's console (made on first use) on a terminal, where it adds colour; as
    plain lines elsewhere (a pipe, pre-commit, CI), where importing rich would cost more than most commands take
    and the text would be the same."""

    @functools.cached_property
    def console(self) -> Any:
        from rich.console import Console
        return Console(stderr=True, highlight=False, soft_wrap=True)

    def print(self, text: str, **options: Any) -> None:
        if not sys.stderr.isatty():
            sys.stderr.write(text + "\n")
            sys.stderr.flush()
            return
        self.console.print(text, **options)


stderr = _Stderr()
vault_root: Path | None = None  # the vault of the command running: where a crash is logged, how paths are named


def at_vault(root: Path) -> None:
    global vault_root
    vault_root = root


def workspace(vault: Path | str | None) -> Workspace:

    found = Vault.find(Path(vault) if vault is not None else None)
    at_vault(found.root)
    return Workspace(found)


def read_body(body: str | None) -> str | None:
    """A body option's text; `-` reads it from stdin."""
    if body == "-":
        return sys.stdin.read()
    return body


def refresh_pages(ws: Workspace) -> None:
    """After a command changed a decision: the pinned pages rebuilt (`commands.build.refresh_pages`), what
    could not be done said as a warning."""
    from .commands.build import refresh_pages as rebuild  # the build loads the pages' modules
    for line in rebuild(ws):
        stderr.print(line, markup=False)


def out(text: str = "") -> None:
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def print_json(data: Any) -> None:
    """One JSON document: characters as they are where stdout takes them all, else JSON's own escapes
    (which any reader decodes alike)."""
    encoding = (getattr(sys.stdout, "encoding", None) or "").lower()
    out(json.dumps(data, indent=2, ensure_ascii=not encoding.startswith("utf"), default=str))


def today_option(value: str | None) -> dt.date | None:
    return parse_day_option("--today", value)


# -- the commands answered without the parser ---------------------------------------------------------------

def build(check: bool = False, today: str | None = None, vault: Path | str | None = None,
          json_: bool = False) -> None:
    from .commands.build import build  # the operation, in place of this command's own name here
    today_option(today)  # still checked: a bad date is a usage error
    ws = workspace(vault)
    result = build(ws, check=check, remembered=True)
    pages = result.pages
    if json_:
        print_json({"written": result.written, "stale": result.stale, "kept": result.kept,
                    "over_budget": pages.over_budget, **budget_json(pages)})
    else:
        for path in result.stale:
            out(f"{'stale' if check else 'wrote'} {path}")
    for kept in result.kept:
        stderr.print(f"a pinned page was edited by hand; the edited copy is kept in {kept}", markup=False)
    warn_merge_drivers(ws.vault.root)
    if check and result.stale:
        stderr.print(f"error: {len(result.stale)} pinned page(s) are stale: {', '.join(result.stale)}; "
                     "run `vault-tools build`", style="red", markup=False)
        raise SystemExit(1)
    if pages.over_budget:
        stderr.print(f"error: {pages.budget_message()}", style="red", markup=False)
        raise SystemExit(1)


def warn_merge_drivers(root: Path) -> None:

    if git_dir(root) is None:
        return  # outside git nothing is merged (and the set-up code need not be loaded)
    from .commands.setup import merge_drivers_missing
    missing = merge_drivers_missing(root)
    if missing:
        stderr.print(f"warning: this git clone lacks the merge driver(s) {', '.join(missing)}, so a pull can stop "
                     "on the pinned pages; run `vault-tools init` once in it", markup=False)


def budget_json(pages: Any) -> dict[str, Any]:
    return {"budget": {"lines": pages.settings.budget_lines, "bytes": pages.settings.budget_bytes,
                       "used_lines": pages.used_lines, "used_bytes": pages.used_bytes,
                       "rulings_shown": pages.rulings_shown, "rulings_left_out": pages.rulings_left_out}}


def context(budget: str = "config", hook: bool = False, today: str | None = None, vault: Path | str | None = None,
            json_: bool = False) -> None:
    from .commands import page_inputs  # the view as made before from the same inputs (`remembered`)
    ws = workspace(vault)
    day = today_option(today) or ws.today()
    state = ws.state()

    def shown() -> dict[str, Any]:
        from .commands import build  # here: the agent's view and the page builder load only where the view changed
        found = build.context(ws, budget, day, state)
        return {"overflow": found.questions_overflow, "left_out": found.questions_left_out,
                "shown": context_json(found) if json_ else found.text}

    view = page_inputs.remembered(ws, state, f"context {budget} {day.isoformat()} {'json' if json_ else 'text'}", shown)
    if not (isinstance(view, dict) and {"overflow", "left_out", "shown"} <= view.keys()):
        view = shown()  # a memo damaged by hand: made again
    overflow = view["overflow"]
    if overflow and not hook:
        stderr.print(f"error: {overflow}; nothing printed (a hook can pass --hook to show the most urgent)",
                     style="red", markup=False)
        raise SystemExit(1)
    if json_:
        print_json(view["shown"])
    else:
        sys.stdout.write(view["shown"])
        sys.stdout.flush()
    if overflow:
        stderr.print(f"warning: {overflow}; {view['left_out']} not shown", markup=False)


def context_json(found: Any) -> dict[str, Any]:
    def ruling(item: Any) -> dict[str, Any]:
        decision, why = item
        return {**decision_json(decision), "pinned": decision.pinned, "why": why}

    budget, usage = found.budget, found.usage
    return {"budget": {"name": budget.name, "characters": budget.chars, "lines": budget.lines, "bytes": budget.bytes,
                       "tokens": budget.tokens},
            "used": {"characters": usage.chars, "lines": usage.lines, "bytes": usage.bytes, "tokens": usage.tokens},
            "open_questions": [decision_json(d) for d in found.open_questions],
            "open_questions_left_out": found.questions_left_out,
            "problems": [{"path": p.path, "line": p.line, "message": p.message} for p in found.problems],
            "problems_left_out": found.problems_left_out,
            "topics": found.topics, "topics_left_out": found.topics_left_out,
            "rulings": [ruling(item) for item in found.rulings], "rulings_left_out": found.rulings_left_out,
            "not_said_whether_replaces": [{"newer": o.newer.id, "older": o.older.id, "topic": o.topic}
                                          for o in found.overlaps],
            "conflicts": [{"id": c.id, "path": c.note.path if c.note else None, "what": c.what, "settle": c.settle}
                          for c in found.conflicts],
            "text": found.text}


def lint(paths: list[Path] | list[str] | None = None, fix: bool = False, strict: bool = False,
         format_: str = "text", explain: str | None = None, today: str | None = None,
         vault: Path | str | None = None, json_: bool = False) -> None:
    from . import lint  # here, in place of this command's own name: the other commands start faster without it
    if explain is not None:
        out(lint.explain(explain).rstrip("\n"))
        return
    output = "json" if json_ else lint.check_format(format_)
    ws = workspace(vault)
    result = lint.run_lint(ws.vault, paths=[Path(path) for path in paths or []], fix=fix, strict=strict,
                                 today=today_option(today), output_format=output)
    if output == "json":
        print_json(result.as_json())
    else:
        for line in result.fix_lines:
            stderr.print(line, markup=False)
        if result.lines:  # in one write: a large vault's lint has tens of thousands of lines
            out("\n".join(result.lines))
        stderr.print(result.summary(), markup=False)
    if result.failed:
        raise SystemExit(1)


def watch(once: bool = False, vault: Path | str | None = None, json_: bool = False) -> None:

    from .watch import Watcher
    ws = workspace(vault)
    log = watch_log(ws.vault.state_dir, json_)
    watcher = Watcher(ws, on_actions=log)
    if once:
        with Progress("reconciling", not json_) as progress:
            watcher.progress = progress
            watcher.run_once()  # an error it raises was logged already; its exit code says what kind of trouble
        return
    previous = {sig: signal.signal(sig, lambda *_: watcher.stop()) for sig in (signal.SIGINT, signal.SIGTERM)}
    answering = start_resident(ws.vault.root)  # answers the agent's commands while this watches
    try:
        with Progress("reconciling", not json_) as progress:  # a first reconcile of a large vault takes a while
            watcher.progress = progress
            watcher.start()
        watcher.progress = None
        log_line = f"watching {ws.vault.root} (debounce {watcher.debounce:g} s, seal delay {watcher.seal_delay:g} s)"
        stderr.print(log_line, markup=False)
        watcher.run()
    finally:
        stop_resident(answering)
        watcher.release()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    stderr.print("stopped", markup=False)


def start_resident(root: Path) -> subprocess.Popen[bytes] | None:
    """The resident process for the vault at `root`, started to live as long as this process; None where this
    system has no Unix sockets or `VAULT_TOOLS_NO_RESIDENT` is set."""
    import subprocess  # here: only the watcher keeps a resident process

    if os.environ.get(NO_RESIDENT_ENV) or socket_path(str(root)) is None:
        return None
    # A session of its own: stopping the watcher's terminal (Ctrl-Z) does not stop what answers the agent. `-P`: the
    # watcher's own code, not a `vault_tools` folder where it was started (`-m` would look there first)
    return subprocess.Popen([sys.executable, "-P", "-m", "vault_tools.resident_process", str(root), str(os.getpid())],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)


def stop_resident(process: subprocess.Popen[bytes] | None) -> None:
    """Tell the resident process to stop, and wait for it: it ends once the command it runs is answered, or is
    killed after 5 s."""
    if process is None:
        return
    process.terminate()
    deadline = time.monotonic() + 5
    while process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    if process.poll() is None:
        process.kill()
        process.wait()


def watch_log(state_dir: Path, as_json: bool) -> Any:
    """One line per action, to stderr and to the rotated `.vault-tools/watch.log`: a pass's lines written
    together (a first reconcile of a large vault logs thousands)."""

    from .watch import format_action, open_log

    logger = open_log(state_dir)

    plain = not sys.stderr.isatty()  # rich takes a thousand times longer per line, for colour only a terminal shows

    def log(actions: list[Any]) -> None:
        at = dt.datetime.now().astimezone().isoformat(timespec="seconds")
        lines = [format_action(action, as_json, at) for action in actions]
        logger.info("\n".join(lines))
        if plain:
            sys.stderr.write("".join(line + "\n" for line in lines))
            return
        for action, line in zip(actions, lines, strict=True):
            stderr.print(line, markup=False, style="red" if action.kind == "invalid" else None)

    return log


REDRAW_SECONDS = 0.1  # a progress bar is drawn again at most this often


class Progress:
    """A rich progress bar on stderr while long work runs, only when stderr is a terminal and not --json."""

    def __init__(self, label: str, enabled: bool) -> None:
        self.label = label
        # A pipe never gets a bar, even where FORCE_COLOR makes rich take it for a terminal (and rich is not
        # imported for a piped run)
        self.enabled = enabled and sys.stderr.isatty() and stderr.console.is_terminal
        self._bar: Any = None
        self._task: Any = None
        self._drawn = 0.0  # when the bar was last drawn (monotonic seconds)

    def __enter__(self) -> Progress:
        if self.enabled:
            from rich.progress import Progress as Bar

            # Drawn when told how far the work has gone, not from a thread of its own: a process running
            # another thread forks no child (a large reconcile's child working ahead, see `services.prefetch`)
            self._bar = Bar(console=stderr.console, transient=True, auto_refresh=False)
            self._bar.start()
        return self

    def __call__(self, done: int, total: int) -> None:
        if self._bar is None:
            return
        if self._task is None:
            self._task = self._bar.add_task(self.label, total=total)
        self._bar.update(self._task, completed=done, total=total)
        now = time.monotonic()
        if done >= total or now - self._drawn >= REDRAW_SECONDS:
            self._bar.refresh()
            self._drawn = now

    def __exit__(self, *_: Any) -> None:
        if self._bar is not None:
            self._bar.stop()

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        """The bar taken off the terminal while the owner is asked something."""
        if self._bar is not None:
            self._bar.stop()
        try:
            yield
        finally:
            if self._bar is not None:
                self._bar.start()


# -- exit codes ---------------------------------------------------------------------------------------------

# What the file system says when the disk is full or a file may not be written.
EXPECTED_OS_ERRORS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EACCES, errno.EPERM, errno.EROFS, errno.EFBIG,
                                errno.ETIMEDOUT})  # the last: a write the caller of the resident process did not make


# docs/design/0016-faults-are-the-machines-state.md
def exit_code_of(command: Callable[[], object]) -> int:
    """Run `command` and return its exit code; never exits the process: what went wrong is said in one line
    (a bug also gets its traceback saved), and each kind of trouble has its code (see the README)."""
    try:
        command()
        return 0
    except SystemExit as exit_:
        return exit_.code if isinstance(exit_.code, int) else (0 if exit_.code is None else 2)
    except KeyboardInterrupt:
        stderr.print("interrupted", markup=False)
        return 130
    except BrokenPipeError:  # what reads the output went away (`| head`): not a bug, and nothing to say
        _quiet_stdout()
        return PIPE_CLOSED
    except VaultToolsError as error:
        report(error)
        return error.exit_code
    except OSError as error:
        if error.errno not in EXPECTED_OS_ERRORS:
            return internal_error(error)
        # A full disk or a folder that may not be written is the machine's state, not a bug.
        what = os.strerror(error.errno).lower() if error.errno else str(error)
        report(InconsistentVault(f"cannot write: {what}; nothing more was written. Fix that, then run "
                                 "`vault-tools lint --fix` to finish what was begun", path=error.filename))
        return InconsistentVault.exit_code
    except Exception as error:  # a bug: keep the traceback, say where
        return internal_error(error)


def _quiet_stdout() -> None:
    """Point stdout at /dev/null, so that flushing what is left of it on the way out is not another error."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass


def report(error: VaultToolsError) -> None:
    if error.path and vault_root is not None and Path(error.path).is_absolute():
        try:  # name files as the vault does
            error.path = Path(error.path).relative_to(vault_root).as_posix()
        except ValueError:
            pass
    stderr.print(f"error: {error}", style="red", markup=False)
    for line in error.details:
        stderr.print(f"  {line}", markup=False)


def internal_error(error: BaseException) -> int:
    try:
        where = f"with the traceback saved in {crash_log(error)}"
    except OSError as log_error:  # the disk may be the trouble: say so rather than fail again
        where = f"(the traceback could not be saved: {log_error.strerror})"
    stderr.print(f"internal error: {type(error).__name__}: {error}. This is a bug; please report it {where}",
                 style="red", markup=False)
    return 4


def crash_log(error: BaseException) -> Path:
    import platform
    import tempfile
    import traceback


    folder = (vault_root / STATE_DIR) if vault_root and (vault_root / STATE_DIR).is_dir() \
        else Path(tempfile.gettempdir())
    path = folder / ("crash.log" if folder.name == STATE_DIR else "vault-tools-crash.log")
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(f"--- {dt.datetime.now().isoformat()} vault-tools {__version__} "
                     f"python {platform.python_version()} {platform.platform()}\n")
        handle.write(f"argv: {sys.argv}\n")
        handle.write("".join(traceback.format_exception(error)))
    return path
