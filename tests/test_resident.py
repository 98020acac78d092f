"""The vault's resident process (vault_tools/resident.py, resident_process.py): `vault-tools watch` keeps one,
the agent's reading commands sent to it answer byte for byte as in a process of their own, and whenever it
does not answer in full (gone, stopped, other code, a folder others may enter or it cannot see, another
locale) the command runs in its own process instead. `ask` and `rule` are run there too, each write they make sent
back and made by the console script with its own rights, as their own process would make it."""
from __future__ import annotations

import contextlib
import io
import json
import os
import re
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

from vault_tools import console, durable, launch, resident, resident_address, resident_process
from vault_tools import index as index_module
from vault_tools import ledger as ledger_module
from vault_tools import vault as vault_module
from vault_tools.commands.read import READ_AHEAD_MOST, read_ahead
from vault_tools.index import NO_FTS5_ENV, SearchIndex
from vault_tools.layout import device_tag
from vault_tools.record_files import CEILING_ENV, find_vault
from vault_tools.resident import runtime_stamp
from vault_tools.vault_root import vault_folder_above, vault_named

from .helpers import (
    FOOTER,
    PAST_RACY_SECONDS,
    ClockAhead,
    Result,
    config_file,
    decision,
    ledger_events,
    ledger_file,
    made_id,
    make_vault,
    snapshot,
    vt,
    write,
)

pytestmark = pytest.mark.skipif(os.name != "posix", reason="the resident process listens on a Unix socket")


@pytest.fixture
def runtime(monkeypatch):
    """A short folder for the sockets (a socket's path holds about 100 bytes: pytest's temp paths are longer),
    and the resident process allowed again (conftest.py forbids it to every other test)."""
    base = tempfile.mkdtemp(prefix="vt-", dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
    monkeypatch.setenv("XDG_RUNTIME_DIR", base)
    monkeypatch.delenv(resident_address.NO_RESIDENT_ENV)
    yield Path(base)
    shutil.rmtree(base, ignore_errors=True)


def console_script(*args: str, cwd: Path, alone: bool = False) -> Result:
    """The console script in a process of its own; `alone`: told not to ask the resident process."""
    env = {**os.environ, "COLUMNS": "200", "NO_COLOR": "1"}
    if alone:
        env[resident_address.NO_RESIDENT_ENV] = "1"
    done = subprocess.run([sys.executable, "-m", "vault_tools", *args], cwd=cwd, capture_output=True, timeout=60,
                          env=env)
    return Result(done.returncode, done.stdout.decode("utf-8"), done.stderr.decode("utf-8"))


def asked_there(*args: str, cwd: Path) -> tuple[int | None, bytes, bytes]:
    """The front door's question to the resident process, from this process: its exit code (None: it did not
    answer, the command would run here) and the bytes it printed to each stream."""
    out, err = io.BytesIO(), io.BytesIO()
    streams = [io.TextIOWrapper(stream, encoding="utf-8", write_through=True) for stream in (out, err)]
    saved = Path.cwd()
    os.chdir(cwd)
    try:
        with contextlib.redirect_stdout(streams[0]), contextlib.redirect_stderr(streams[1]):
            code = resident.answer_there(list(args), tried=args[0] in launch.RESIDENT_TRIES)  # as the front door asks
    finally:
        os.chdir(saved)
    return code, out.getvalue(), err.getvalue()


@contextlib.contextmanager
def watching(vault: Path):
    """`vault-tools watch` running on `vault`, its resident process listening."""
    watcher = subprocess.Popen([sys.executable, "-m", "vault_tools", "watch", "--vault", str(vault)],
                               stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    path = Path(resident_address.socket_path(str(vault.resolve())))
    try:
        deadline = time.monotonic() + 30
        while not path.exists():
            assert watcher.poll() is None, watcher.stderr.read().decode()
            assert time.monotonic() < deadline, "no resident process listened within 30 s"
            time.sleep(0.05)
        yield watcher
    finally:
        if watcher.poll() is None:
            watcher.send_signal(signal.SIGTERM)
            watcher.wait(timeout=30)
        watcher.stderr.close()


def test_the_agents_reading_commands_answer_there_as_they_answer_alone(runtime, vault):
    decision(vault, 1, topics=("article-footer",), summary=FOOTER)
    decision(vault, 2, status="open", topics=("reader-replies",), summary="Should the agent answer reader replies?")
    write(vault / "Notes" / "Café.md", "A plain note about the café's opening hours.\n")
    asks = [
        ("show", "D-0001"), ("show", "D-0001", "--json"), ("show", "D-0999"), ("lookup", "article-footer"),
        ("lookup", "article-footer", "--json"), ("lookup", "reader-replies"), ("search", "café hours"),
        ("search", "footer", "--json"), ("context",), ("context", "--json"), ("context", "--budget", "400"),
        ("lookup",), ("show", "--nope"),  # usage errors
    ]
    with watching(vault):
        time.sleep(2.1)  # past the racy window: what the resident process reads it may keep
        for args in asks:
            there = asked_there(*args, "--vault", str(vault), cwd=vault)
            assert there[0] is not None, f"{args}: not answered by the resident process"
            alone = console_script(*args, "--vault", str(vault), cwd=vault, alone=True)
            assert (there[0], there[1].decode(), there[2].decode()) == (alone.code, alone.out, alone.err), args
            assert console_script(*args, "--vault", str(vault), cwd=vault) == alone, args  # the console script, end to end


def test_the_console_script_answered_there_loads_no_vault_nor_memo_code(runtime, vault):
    """What the console script loads to have a reading command answered by the resident process: not what
    reading the vault takes, nor the memos' code (pickle, hmac), nor the record's file names with pathlib,
    typing and the regular expressions (`record_files`: the vault is found with `vault_root`), nor OpenSSL's
    digests: each is start-up time on every command."""
    decision(vault, 1, topics=("article-footer",), summary=FOOTER)
    loaded = ("vault_tools.vault", "vault_tools.state_memo", "vault_tools.notes", "pickle", "hmac",
              "vault_tools.record_files", "typing", "_hashlib")
    code = (f"import sys\nfrom vault_tools.launch import main\nsys.argv = ['vault-tools', 'show', 'D-0001', '--vault', "
            f"{str(vault)!r}]\ntry:\n    main()\nexcept SystemExit as exit_:\n    assert exit_.code == 0, exit_.code\n"
            f"print(sorted(name for name in {loaded!r} if name in sys.modules))")
    with watching(vault):
        found = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=vault)
    assert found.returncode == 0, found.stderr
    assert found.stdout.splitlines()[-1] == "[]"  # `vault` among them had it been answered here


def test_with_no_resident_process_a_refused_ask_loads_neither_the_asking_nor_a_rulings_code(runtime, vault):
    """With no watcher (CI, a vault nobody watches) the console script finds no socket and runs the command in its
    own process without loading what asking one takes (`resident`, the socket module, threads); a refused `ask`
    loads neither what a ruling needs (`commands.rule`) nor `secrets`, nor the socket module for this device's
    host name, nor what the resident process watches folders with (`folder_watch`, ctypes). Each is start-up
    time on every such command."""
    decision(vault, 1, topics=("article-footer",), summary=FOOTER)
    loaded = ("vault_tools.resident", "socket", "vault_tools.commands.rule", "secrets", "vault_tools.folder_watch",
              "ctypes")
    code = (f"import sys\nfrom vault_tools.launch import main\nsys.argv = ['vault-tools', 'ask', {FOOTER!r}, "
            f"'--topic', 'article-endings', '--vault', {str(vault)!r}]\ntry:\n    main()\n"
            f"except SystemExit as exit_:\n    assert exit_.code == 1, exit_.code\n"
            f"print(sorted(name for name in {loaded!r} if name in sys.modules))")
    found = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=vault)
    assert found.returncode == 0, found.stderr
    assert "already settles this" in found.stderr and found.stdout.splitlines()[-1] == "[]"


REFUSED_ASKS = [  # each writes nothing: answered by the resident process
    ("ask", "Should the article footer name the editor?", "--topic", "article-footer"),  # settled topic
    ("ask", "Should the article footer name the editor?", "--topic", "article-footer", "--json"),
    ("ask", FOOTER, "--topic", "article-endings"),  # the same matter under another topic
    ("ask", "Should the agent answer every reply?", "--topic", "reader-replies"),  # open on the topic
    ("ask", "Too short", "--topic", "x"), ("ask", "A question with no topic at all given?"),  # usage errors
]


def assert_refused_there_as_alone(vault: Path, args: tuple[str, ...]) -> None:
    """`args`, tried there, answered there (refused or a usage error) byte for byte as in its own process, and
    so through the console script end to end."""
    there = asked_there(*args, "--vault", str(vault), cwd=vault)
    alone = console_script(*args, "--vault", str(vault), cwd=vault, alone=True)
    assert alone.code != 0 and there[0] is not None, args
    assert (there[0], there[1].decode(), there[2].decode()) == (alone.code, alone.out, alone.err), args
    assert console_script(*args, "--vault", str(vault), cwd=vault) == alone, args


def test_an_ask_refused_is_answered_there_as_alone_and_one_that_writes_is_written_here(runtime, vault, monkeypatch):
    """`ask` is run there: refused (or a usage error), it wrote nothing, and the answer is its own process's
    byte for byte; where it writes, each write is made by the caller (here), with its own rights: the note,
    the ledger's line and the pages, recorded once."""
    decision(vault, 1, summary=FOOTER)
    decision(vault, 2, status="open", topics=("reader-replies",), summary="Should the agent answer reader replies?")
    made = spy_on_writes_made_here(monkeypatch)
    with watching(vault):
        time.sleep(2.1)  # past the racy window: what the resident process reads it may keep
        before = snapshot(vault)
        for args in REFUSED_ASKS:
            assert_refused_there_as_alone(vault, args)
        assert snapshot(vault) == before and made == []
        new_question = ("ask", "Should articles carry the author's photo?", "--topic", "author-photos")
        code, out, err = asked_there(*new_question, "--vault", str(vault), cwd=vault)
        note = next((vault / "Decisions").glob("D-0003*.md"))
        assert (code, out.decode(), err) == (0, f"{made_id(vault, 'D-0003')} asked: {note.relative_to(vault)}\n", b"")
        assert str(note) in made and str(page_path(vault)) in made  # written by this process
        assert [e["id"] for e in ledger_events(vault) if e["event"] == "asked"].count(made_id(vault, "D-0003")) == 1
        assert "D-0003" in console_script("lookup", "author-photos", "--vault", str(vault), cwd=vault).out
        assert console_script("build", "--check", "--vault", str(vault), cwd=vault).code == 0  # pages current


def spy_on_writes_made_here(monkeypatch) -> list[str]:
    """The paths of the files this process makes for a command the resident process runs (`durable.make_asked`)."""
    made: list[str] = []
    real = durable.make_asked

    def make_asked(asked, data, inside):
        found = real(asked, data, inside)
        made.extend(path for path, error in zip(asked["paths"], found, strict=True) if error is None)
        return found
    monkeypatch.setattr(durable, "make_asked", make_asked)
    return made


def page_path(vault: Path) -> Path:
    return vault / "Pinned" / "Open questions.md"


REFUSED_RULINGS = [  # each writes nothing: answered by the resident process
    ("rule", "--topic", "article-footer", "--summary", "Every article ends with a two-line footer."),  # settled
    ("rule", "--topic", "article-endings", "--summary", FOOTER),  # the same matter under another topic
    ("rule", "--topic", "article-footer", "--summary", "Too short"),  # a usage error
    ("rule", "D-0009", "--summary", "The agent answers reader replies within a day."),  # no such question
]


def test_a_rule_refused_is_answered_there_as_alone_and_one_that_records_is_written_here(runtime, vault,
                                                                                         monkeypatch):
    """`rule` is run there as `ask` is: refused, it wrote nothing and is answered as its own process answers; a
    ruling that records is written by the caller, once, the pages current. An ask reading its body from the
    caller's stdin is not sent at all."""
    decision(vault, 1, summary=FOOTER)
    made = spy_on_writes_made_here(monkeypatch)
    with watching(vault):
        time.sleep(2.1)  # past the racy window: what the resident process reads it may keep
        before = snapshot(vault)
        for args in REFUSED_RULINGS:
            assert_refused_there_as_alone(vault, args)
        assert snapshot(vault) == before and made == []
        new_ruling = ("rule", "--topic", "article-images", "--summary", "Articles use only images we took.",
                      "--source", "chat")
        code, out, err = asked_there(*new_ruling, "--vault", str(vault), cwd=vault)
        assert code == 0 and out.decode().startswith(f"{made_id(vault, 'D-0002')} ruled and sealed"), err
        assert str(next((vault / "Decisions").glob("D-0002*.md"))) in made  # written by this process
        assert [e["id"] for e in ledger_events(vault) if e["event"] == "ruled"] == [made_id(vault, "D-0002")]
        assert "D-0002" in console_script("lookup", "article-images", "--vault", str(vault), cwd=vault).out
        assert console_script("build", "--check", "--vault", str(vault), cwd=vault).code == 0  # pages current
        body = subprocess.run([sys.executable, "-m", "vault_tools", "ask", "Should replies be answered in a day?",
                               "--topic", "reply-times", "--body", "-", "--vault", str(vault)], cwd=vault,
                              input=b"The readers asked twice.", capture_output=True, timeout=60)
        assert body.returncode == 0, body.stderr
        assert "The readers asked twice." in next((vault / "Decisions").glob("D-0003*.md")).read_text("utf-8")


def test_what_a_ruling_wrote_every_reader_sees_and_an_edit_between_commands_is_seen(runtime, vault):
    with watching(vault):
        ruled = console_script("rule", "--topic", "article-footer", "--summary", FOOTER, "--source", "chat", "--vault",
                    str(vault), cwd=vault)
        assert ruled.code == 0, ruled.err
        alone = console_script("show", "D-0001", "--json", "--vault", str(vault), cwd=vault, alone=True)
        assert json.loads(alone.out)["summary"] == FOOTER
        note = next((vault / "Decisions").glob("D-0001*.md"))
        before = console_script("lookup", "article-footer", "--vault", str(vault), cwd=vault)
        assert "D-0001" in before.out
        time.sleep(2.1)
        write(vault / "Decisions" / "D-0002 Images.md", note.read_text(encoding="utf-8").replace(
            "id: D-0001", "id: D-0002").replace("article-footer", "article-images"))
        for args in (("lookup", "article-images"), ("search", "footer"), ("context",)):
            there = asked_there(*args, "--vault", str(vault), cwd=vault)
            alone = console_script(*args, "--vault", str(vault), cwd=vault, alone=True)
            assert there[0] is not None and (there[0], there[1].decode(), there[2].decode()) == (
                alone.code, alone.out, alone.err), args
        assert "D-0002" in console_script("lookup", "article-images", "--vault", str(vault), cwd=vault).out


def test_the_vault_is_found_from_the_commands_own_folder(runtime, vault):
    decision(vault, 1, summary=FOOTER)
    inside = vault / "Notes" / "deep"
    inside.mkdir(parents=True)
    with watching(vault):
        there = asked_there("show", "D-0001", cwd=inside)
        assert there[0] == 0 and FOOTER in there[1].decode()
        assert console_script("show", "D-0001", cwd=inside) == console_script("show", "D-0001", cwd=inside, alone=True)


def test_the_resident_process_runs_the_watchers_code_whatever_folder_the_watcher_started_in(runtime, vault, tmp_path):
    """`python -m` looks in the working folder first: a watcher started where another `vault_tools` lies (a checkout
    of it, an older copy) still starts its resident process with its own code, which answers."""
    decoy = tmp_path / "elsewhere"
    write(decoy / "vault_tools" / "__init__.py", "raise ImportError('the vault_tools of the working folder')\n")
    decision(vault, 1, summary=FOOTER)
    watcher = subprocess.Popen([sys.executable, "-P", "-m", "vault_tools", "watch", "--vault", str(vault)], cwd=decoy,
                               stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    path = Path(resident_address.socket_path(str(vault.resolve())))
    try:
        deadline = time.monotonic() + 30
        while not path.exists() and time.monotonic() < deadline and watcher.poll() is None:
            time.sleep(0.05)
        assert asked_there("show", "D-0001", "--vault", str(vault), cwd=vault)[0] == 0
    finally:
        watcher.send_signal(signal.SIGTERM)
        watcher.wait(timeout=30)


def test_it_ends_with_its_watcher_and_leaves_no_socket(runtime, vault):
    path = Path(resident_address.socket_path(str(vault.resolve())))
    with watching(vault) as watcher:
        watcher.send_signal(signal.SIGTERM)
        watcher.wait(timeout=30)
    assert not path.exists()
    with watching(vault) as watcher:  # killed: the resident process sees its watcher gone within seconds
        watcher.kill()
        watcher.wait()
        deadline = time.monotonic() + 10
        while path.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not path.exists()
    decision(vault, 1, summary=FOOTER)
    assert asked_there("show", "D-0001", "--vault", str(vault), cwd=vault)[0] is None  # runs here
    assert console_script("show", "D-0001", "--vault", str(vault), cwd=vault).code == 0


@pytest.mark.parametrize("dies", ["before taking it", "after taking it"])
def test_a_command_runs_here_when_the_resident_process_dies_before_answering(runtime, vault, dies):
    """A listener that closes without a word, or says it took the command and then closes: it runs in its own
    process, with the same answer."""
    decision(vault, 1, summary=FOOTER)
    path = resident_address.socket_path(str(vault.resolve()))
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(4)
    taken = []

    def take_and_die() -> None:
        connection, _ = listener.accept()
        taken.append(connection.recv(1 << 20))
        if dies == "after taking it":
            connection.sendall(b"+")
        connection.close()

    thread = threading.Thread(target=take_and_die)
    thread.start()
    try:
        shown = console_script("show", "D-0001", "--vault", str(vault), cwd=vault)
        assert shown == console_script("show", "D-0001", "--vault", str(vault), cwd=vault, alone=True)
    finally:
        thread.join(timeout=10)
        listener.close()
    assert len(taken) == 1


def test_a_stopped_resident_process_holds_no_command_up(runtime, vault):
    """Its watcher's terminal stopped (Ctrl-Z) does not stop it (a session of its own); stopped itself, a
    command waits two seconds at most for it to take the command, then runs in its own process."""
    decision(vault, 1, summary=FOOTER)
    with watching(vault) as watcher:
        resident_pid = int(subprocess.run(["pgrep", "-P", str(watcher.pid)], capture_output=True, text=True,
                                          check=True).stdout.split()[0])
        assert os.getsid(resident_pid) != os.getsid(watcher.pid)
        os.kill(resident_pid, signal.SIGSTOP)
        try:
            began = time.monotonic()
            shown = console_script("show", "D-0001", "--vault", str(vault), cwd=vault)
            assert time.monotonic() - began < 2 + 10
            assert shown == console_script("show", "D-0001", "--vault", str(vault), cwd=vault, alone=True)
        finally:
            os.kill(resident_pid, signal.SIGCONT)


def test_what_the_console_script_prints_is_what_its_own_process_prints_however_its_streams_go(runtime, vault,
                                                                                              tmp_path):
    """Both streams to one file keep the order they were printed in; stdout's reader gone (`| true`), stderr
    still says it; a working folder gone, `--` before an option-like word, file names read in another
    locale: the same answer as the command's own process."""
    decision(vault, 1, summary=FOOTER)
    decision(vault, 2, status="open", topics=("reader-replies",), summary="Should the agent answer reader replies?")
    write(vault / "Decisions" / "D-0003 Café menu.md", "---\ntype: decision\nid: D-0003\nstatus: ruled\n"
          "topics: [cafe-menu]\nsummary: \"The café serves breakfast from eight o'clock.\"\nruled_at: "
          "2026-03-01T09:00:00\nruled_by: owner\n---\n## Ruling\nBreakfast from eight.\n")
    script = f"{sys.executable} -m vault_tools"

    def shell(command: str, cwd: Path = vault, **env: str) -> tuple[int, bytes, bytes]:
        done = subprocess.run(["sh", "-c", command], cwd=cwd, capture_output=True, timeout=60,
                              env={**os.environ, **env})
        return done.returncode, done.stdout, done.stderr

    alone = {resident_address.NO_RESIDENT_ENV: "1"}
    with watching(vault):
        time.sleep(2.1)
        joined = f"{script} lookup reader-replies --vault '{vault}' 2>&1"
        assert shell(joined) == shell(joined, **alone)
        broken = write(vault / "Decisions" / "Broken.md", "---\ntype: decision\nstatus: [ruled\n---\nText.\n")
        after = f"{script} lookup article-footer --vault '{vault}' 2>&1"  # the answer, then the broken note
        assert shell(after) == shell(after, **alone)
        assert shell(after, **alone)[1].index(b"D-0001") < shell(after, **alone)[1].index(b"Broken.md")
        broken.unlink()
        err_file = tmp_path / "err.txt"
        gone_reader = f"{script} lookup reader-replies --vault '{vault}' 2>'{err_file}' | true"
        shell(gone_reader, **alone)
        expected = err_file.read_bytes()
        assert expected and shell(gone_reader)[0] == 0 and err_file.read_bytes() == expected
        gone = tmp_path / "gone"
        in_gone = f"mkdir '{gone}' && cd '{gone}' && rmdir '{gone}' && {script} show D-0001 --vault '{vault}'"
        assert shell(in_gone) == shell(in_gone, **alone)
        assert shell(in_gone)[0] == 0
        inside = vault / "Notes"
        inside.mkdir()
        after_dashes = f"{script} search -- --vault '{vault}'"
        assert shell(after_dashes, inside, VAULT_TOOLS_CEILING=str(inside)) == shell(
            after_dashes, inside, VAULT_TOOLS_CEILING=str(inside), **alone)
        c_locale = {"LC_ALL": "C", "PYTHONUTF8": "0", "PYTHONCOERCECLOCALE": "0"}
        for args in ("show D-0003", "lookup cafe-menu --json"):
            command = f"{script} {args} --vault '{vault}'"
            assert shell(command, **c_locale) == shell(command, **c_locale, **alone), args


def test_a_socket_in_a_folder_others_may_enter_is_never_asked(runtime, vault):
    decision(vault, 1, summary=FOOTER)
    path = resident_address.socket_path(str(vault.resolve()))
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    os.chmod(os.path.dirname(path), 0o777)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(4)
    listener.settimeout(0.2)
    try:
        shown = console_script("show", "D-0001", "--vault", str(vault), cwd=vault)
        assert shown.code == 0 and FOOTER in shown.out
        with pytest.raises(TimeoutError):
            listener.accept()  # nobody came
    finally:
        listener.close()


def test_a_resident_process_of_other_code_is_not_asked_and_ends(runtime, vault):
    decision(vault, 1, summary=FOOTER)
    with watching(vault):
        path = resident_address.socket_path(str(vault.resolve()))
        connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        connection.connect(path)
        connection.sendall(json.dumps({"argv": ["show", "D-0001"], "cwd": str(vault), "env": dict(os.environ),
                                       "umask": 0o22, "code": "other code", "encodings": ["utf-8", "utf-8"],
                                       "file_names": [sys.getfilesystemencoding(), sys.getfilesystemencodeerrors()]}
                                      ).encode())
        connection.shutdown(socket.SHUT_WR)
        assert connection.makefile("rb").read() == b""  # not taken: its caller runs it
        connection.close()
        deadline = time.monotonic() + 10
        while os.path.exists(path) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not os.path.exists(path)
        assert console_script("show", "D-0001", "--vault", str(vault), cwd=vault) == console_script(
            "show", "D-0001", "--vault", str(vault), cwd=vault, alone=True)


def test_commands_sent_at_once_are_each_answered_as_alone(runtime, vault):
    """An agent running commands in parallel: the resident process takes one at a time, and each gets the
    answer its own process gives (a ruling recorded meanwhile included, once)."""
    decision(vault, 1, summary=FOOTER)
    decision(vault, 2, status="open", topics=("reader-replies",), summary="Should the agent answer reader replies?")
    asks = [("show", "D-0001"), ("lookup", "article-footer"), ("context",), ("search", "footer")] * 3
    with watching(vault):
        time.sleep(2.1)
        expected = {args: console_script(*args, "--vault", str(vault), cwd=vault, alone=True) for args in set(asks)}
        answered: list[tuple[tuple[str, ...], Result]] = []

        def one(args: tuple[str, ...]) -> None:
            answered.append((args, console_script(*args, "--vault", str(vault), cwd=vault)))

        threads = [threading.Thread(target=one, args=(args,)) for args in asks]
        threads.append(threading.Thread(target=lambda: answered.append((("rule",), console_script(
            "rule", "D-0002", "--summary", "The agent answers reader replies within a day.", "--vault", str(vault),
            cwd=vault)))))
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=120)
    ruled = [result for args, result in answered if args == ("rule",)]
    assert len(answered) == len(asks) + 1 and len(ruled) == 1
    assert all(result.code == 0 for _, result in answered), answered
    for args, result in answered:
        if args != ("rule",) and args[0] in ("show", "search"):  # what the ruling does not change
            assert result == expected[args], args
    assert console_script("lookup", "reader-replies", "--json", "--vault", str(vault), cwd=vault, alone=True).out.count(
        '"id": "D-0002"') == 1


def test_a_command_from_a_folder_the_resident_process_cannot_see_runs_here(runtime, vault, tmp_path):
    """The resident process answers from the command's own folder; where that folder is not there for it (a
    container with other mounts: here, a folder named that does not exist), it says so and the command runs
    in its own process."""
    decision(vault, 1, summary=FOOTER)
    with watching(vault):
        path = resident_address.socket_path(str(vault.resolve()))
        connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        connection.connect(path)
        connection.sendall(json.dumps({
            "argv": ["show", "D-0001", "--vault", str(vault)], "cwd": str(tmp_path / "not-here"),
            "env": dict(os.environ), "umask": 0o22, "code": runtime_stamp(), "encodings": ["utf-8", "utf-8"],
            "file_names": [sys.getfilesystemencoding(), sys.getfilesystemencodeerrors()]}
        ).encode())
        connection.shutdown(socket.SHUT_WR)
        assert connection.makefile("rb").read() == b""  # not taken: its caller runs it
        connection.close()
        assert asked_there("show", "D-0001", "--vault", str(vault), cwd=vault)[0] == 0  # and it still answers


def test_the_code_stamp_changes_when_a_dependency_is_installed_or_pythonpath_differs(tmp_path, monkeypatch):
    """A resident process started before `pip install -U typer` imports the old typer: its stamp no longer
    matches the console script's, so it is not asked (and ends)."""
    packages = tmp_path / "lib" / "site-packages"
    packages.mkdir(parents=True)
    monkeypatch.setattr(sys, "path", [*sys.path, str(packages)])
    before = runtime_stamp()
    assert runtime_stamp() == before
    (packages / "typer-99.dist-info").mkdir()  # an install or an upgrade there
    os.utime(packages, ns=(time.time_ns() + 10**9, time.time_ns() + 10**9))
    assert runtime_stamp() != before
    after = runtime_stamp()
    monkeypatch.setattr(resident, "_STARTED_WITH_PYTHONPATH", "/somewhere/else")
    assert runtime_stamp() != after


def tried(vault: Path, *args: str, stdin: bytes = b"") -> tuple[int | None, bytes, bytes]:
    """The command as the resident process runs one that may write (in this process), each write made as its
    caller makes them (`durable.make_asked`, here too): its exit code, None where it declined."""
    writes = durable.CallerWrites(lambda asked, data: durable.make_asked(asked, data, str(vault)))
    return resident_process._run([*args, "--vault", str(vault)], str(vault), dict(os.environ), 0o22,
                                 ["utf-8", "utf-8"], writes=writes)


def put_back(vault: Path, files: dict[str, bytes], times: dict[str, int]) -> None:
    """The vault's files as `snapshot` found them (and with those modification `times`): those made since
    removed, the others written back."""
    for path in sorted(vault.rglob("*"), reverse=True):
        rel = path.relative_to(vault).as_posix()
        if path.is_file() and rel not in files and not rel.endswith(".lock") and ".vault-tools/cache" not in rel:
            path.unlink()
    for rel, data in files.items():
        (vault / rel).write_bytes(data)
        os.utime(vault / rel, ns=(times[rel], times[rel]))


_STAMPS = [(re.compile(rb"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)?"), b"<time>"),
           (re.compile(rb"sha256:[0-9a-f]{64}"), b"<hash>"), (re.compile(rb"made:[0-9a-f]{16}"), b"<origin>"),
           (re.compile(rb'"sum":"[0-9a-f]{16}"'), b"<line sum>"),
           (re.compile(rb"\b[0-9a-f]{32}\b"), b"<record>"),
           (re.compile(rb"\d{4}-\d\d-\d\d \d{6}"), b"<kept at>")]  # the second a copy was kept, in its name


def masked(data: bytes) -> bytes:
    """`data` with what differs from one run to the next (times, record ids, seal hashes) masked."""
    for pattern, mask in _STAMPS:
        data = pattern.sub(mask, data)
    return data


def unstamped(files: dict[str, bytes]) -> dict[str, bytes]:
    """`snapshot`'s files, their names and bytes `masked`."""
    return {masked(rel.encode()).decode(): masked(data) for rel, data in files.items()}


def _torn_ledger(vault: Path) -> None:
    ledger = ledger_file(vault)
    ledger.parent.mkdir(parents=True, exist_ok=True)
    with open(ledger, "ab") as handle:  # a whole line, then an append a kill cut short
        handle.write(b'{"event": "asked", "id": "D-0002", "at": "2026-07-17T00:00:00Z", "actor": "a"}\n'
                     b'{"event": "sealed", "id": "D-00')


def _stale_temp(vault: Path) -> None:
    temp = vault / "Decisions" / ".vault-tools-left.tmp"
    write(temp, "half a note")
    os.utime(temp, (time.time() - 3600, time.time() - 3600))


def _page_copy(vault: Path) -> None:
    """A sync engine's conflict copy of a pinned page: the next build of the pages removes it."""
    write(vault / "Pinned" / "Decisions log.sync-conflict-20260101-120000-ABCDEFG.md", "an older log\n")


WOULD_WRITE = [  # (what is done to the vault first, the command, whether it declines): each writes the vault
    (None, ("ask", "Should articles carry the author's photo?", "--topic", "author-photos"), False),
    (None, ("ask", "Should the article footer name the editor?", "--topic", "article-footer",
            "--reask-reason", "The editor asked to be named in every footer."), False),
    (None, ("ask", FOOTER, "--topic", "article-endings", "--not-the-same", "D-0001"), False),
    (None, ("ask", "Should replies be answered within a day?", "--topic", "reply-times", "--body", "-"), True),
    (_torn_ledger, ("ask", "Should the article footer name the editor?", "--topic", "article-footer"), True),
    (_stale_temp, ("ask", "Should the article footer name the editor?", "--topic", "article-footer"), True),
    (None, ("rule", "--topic", "article-images", "--summary", "Articles use only images we took."), False),
    (_page_copy, ("rule", "--topic", "article-images", "--summary", "Articles use only images we took."), False),
    (None, ("rule", "D-0002", "--summary", "The agent answers reader replies within a day."), False),
    (None, ("rule", "--topic", "article-footer", "--summary", "Every article ends with a two-line footer.",
            "--supersedes", "D-0001", "--reason", "Readers found the old footer too long to read."), False),
]


@pytest.mark.parametrize(("prepare", "args", "declines"), WOULD_WRITE,
                         ids=lambda value: getattr(value, "__name__", None))
def test_a_command_run_there_that_writes_leaves_the_vault_its_own_process_leaves(vault, prepare, args, declines):
    """Run there, a command that writes (a note, the ledger, the pages; a target sealed and superseded) has
    each write made by its caller, and leaves the vault byte for byte as the same command run alone leaves it
    (times, record ids and seal hashes aside), saying the same. What the caller cannot be asked to write (a
    torn ledger line cut, a temp file a killed write left removed) and a body read from the caller's stdin
    decline it before any write: nothing written, nothing said, and its caller runs it."""
    decision(vault, 1, summary=FOOTER)
    decision(vault, 2, status="open", topics=("reader-replies",), summary="Should the agent answer reader replies?")
    device_tag(vault)  # this device's first id draws it: drawn now, both runs make the same ids
    if prepare is not None:
        prepare(vault)
    before = snapshot(vault)
    times = {rel: (vault / rel).stat().st_mtime_ns for rel in before}
    code, out, err = tried(vault, *args)
    there = snapshot(vault)
    if declines:
        assert (code, out, err, there) == (None, b"", b"", before)
    put_back(vault, before, times)
    assert snapshot(vault) == before
    alone = subprocess.run([sys.executable, "-m", "vault_tools", *args, "--vault", str(vault)], cwd=vault,
                           input=b"Readers wait.", capture_output=True, timeout=60)
    assert snapshot(vault) != before, alone.stderr  # what the try declined to write, or had its caller write
    if not declines:
        assert (code, masked(out), masked(err)) == (alone.returncode, masked(alone.stdout), masked(alone.stderr))
        assert unstamped(there) == unstamped(snapshot(vault))


@contextlib.contextmanager
def ledger_lock_held(vault: Path):
    """Another process holding the vault's ledger lock (a writer halfway through a command) while the block runs."""
    holder = subprocess.Popen([sys.executable, "-c", "import sys, time; from pathlib import Path\n"
                               "from vault_tools.vault import Vault\n"
                               "with Vault(Path(sys.argv[1])).ledger.locked():\n print('held', flush=True); time.sleep(60)",
                               str(vault)], stdout=subprocess.PIPE)
    try:
        assert holder.stdout.readline() == b"held\n"
        yield
    finally:
        holder.kill()
        holder.wait()
        holder.stdout.close()


def test_an_ask_is_tried_there_only_while_its_caller_holds_the_ledger_lock(runtime, vault):
    """The caller takes the ledger lock before sending a try (the resident process, under it, takes none): the
    try never reads a vault a writer has left halfway (a note written, its ledger line not yet), and a caller
    that cannot take the lock runs the command itself, which waits for it as before."""
    decision(vault, 1, summary=FOOTER)
    refused = ("ask", "Should the article footer name the editor?", "--topic", "article-footer")
    with watching(vault):
        time.sleep(2.1)
        with ledger_lock_held(vault):
            started = time.monotonic()
            assert asked_there(*refused, "--vault", str(vault), cwd=vault) == (None, b"", b"")
            assert time.monotonic() - started < 2  # not tried: the command runs here, and waits for the lock
        code, _, err = asked_there(*refused, "--vault", str(vault), cwd=vault)
        assert code == 1 and b"topic article-footer is settled" in err
        assert not (vault / ".vault-tools" / "ledger.lock").exists() or _lock_free(vault)  # let go once answered


def _lock_free(vault: Path) -> bool:
    import fcntl

    with open(vault / ".vault-tools" / "ledger.lock", "rb") as handle:
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return False
    return True


def test_a_try_declined_for_a_device_tag_to_draw_makes_no_folder(tmp_path):
    """In the shared layout a device's first id draws its tag, kept under `.vault-tools/devices/` or in the git
    directory (outside the vault the caller writes in): a command that would draw one declines before making
    even the folder, and its caller runs it."""
    vault = make_vault(tmp_path / "vault", shared=True)
    shutil.rmtree(vault / ".vault-tools" / "devices", ignore_errors=True)
    before = snapshot(vault)
    assert tried(vault, "ask", "Should articles carry the author's photo?", "--topic", "author-photos") == (None, b"", b"")
    assert snapshot(vault) == before and not (vault / ".vault-tools" / "devices").exists()


def test_the_ledgers_copy_is_written_by_the_caller_too(vault, monkeypatch):
    """The copy of this device's ledger file the tripwire puts lines back from is appended to by the caller,
    as the ledger itself, never by the resident process."""
    device_tag(vault)
    made = spy_on_writes_made_here(monkeypatch)
    for topic, summary in (("article-images", "Articles use only images we took."),
                           ("podcast-length", "Podcast episodes run under forty minutes.")):
        assert tried(vault, "rule", "--topic", topic, "--summary", summary)[0] == 0
    copies = [path for path in made if "ledger-copies" in path]
    assert len(copies) == 2 and Path(copies[0]).read_bytes().count(b"\n") == 4  # each ruling: ruled, sealed


def test_a_cache_written_in_a_try_does_not_decline_it(vault):
    """The config read afresh after an edit is cached (derived data, as any reader writes it): the refused ask
    tried just after the edit is still answered there."""
    decision(vault, 1, summary=FOOTER)
    config = config_file(vault)
    config.write_text(config.read_text(encoding="utf-8") + "\n# the owner's note\n", encoding="utf-8")
    code, _, err = tried(vault, "ask", "Should the article footer name the editor?", "--topic", "article-footer")
    assert code == 1 and b"topic article-footer is settled" in err


def test_the_console_script_leaves_cleanly_while_a_module_is_still_being_loaded():
    """Answered by the resident process, the console script leaves while the thread loading the command's own
    code may be halfway through a module: leaving touches nothing such a module has not defined yet."""
    code = ("import sys, types\n"
            "sys.modules['vault_tools.reading'] = types.ModuleType('vault_tools.reading')  # halfway loaded\n"
            "sys.argv = ['vault-tools', 'version']\n"
            "from vault_tools.launch import script\n"
            "script()\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=60)
    assert (done.returncode, done.stderr) == (0, b"")


def test_a_caller_that_may_not_write_gets_its_own_processes_error_and_nothing_is_written(runtime, vault,
                                                                                          monkeypatch):
    """The caller makes the writes with its own rights: where it may not (a sandbox, a read-only mount), the
    command says so as its own process would, naming the file, and nothing is written, not even by the resident
    process, which could."""
    decision(vault, 1, summary=FOOTER)
    device_tag(vault)

    def refused(asked, data, inside):
        return [PermissionError(13, "Permission denied", path) for path in asked["paths"]]
    monkeypatch.setattr(durable, "make_asked", refused)
    with watching(vault):
        time.sleep(2.1)
        before = snapshot(vault)
        code, out, err = asked_there("rule", "--topic", "article-images", "--summary",
                                     "Articles use only images we took.", "--vault", str(vault), cwd=vault)
        assert code not in (0, None) and out == b"", err
        lines = err.decode().splitlines()
        assert len(lines) == 1 and "permission denied" in lines[0] and "D-0002" in lines[0], lines
        assert snapshot(vault) == before


NOTE_WRITTEN = b"---\ntype: decision\n---\n"


def asked_of_a_stand_in(vault: Path, note: Path, after: bytes, *args: str) -> tuple[int | None, bytes, bytes]:
    """`args` sent, as the front door sends them, to a stand-in listening where the vault's resident process
    would: it takes the command, asks for `note` to be written (`NOTE_WRITTEN`), sends `after` (b"": nothing,
    it is gone) without waiting to hear back, and closes once the caller has answered or gone."""
    path = resident_address.socket_path(str(vault.resolve()))
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(1)

    def stand_in():
        connection, _ = listener.accept()
        with connection, connection.makefile("rb") as reader:
            reader.readline()
            asked = {"op": "files", "paths": [str(note)], "sizes": [len(NOTE_WRITTEN)], "folders": True}
            connection.sendall(b"+" + json.dumps({"write": asked, "size": len(NOTE_WRITTEN)}).encode() + b"\n"
                               + NOTE_WRITTEN + after)
            reader.readline()
    server = threading.Thread(target=stand_in)
    server.start()
    try:
        return asked_there(*args, "--vault", str(vault), cwd=vault)
    finally:
        server.join(timeout=30)
        listener.close()


def test_a_resident_process_that_stops_answering_after_a_write_is_not_run_again_here(runtime, vault):
    """Once the caller has made a write for the command, the command is not run again in the caller's process
    when the resident process goes away before answering (it would be recorded twice): the caller says what
    was written and exits with an error."""
    note = vault / "Decisions" / "D-0009 Half.md"
    code, out, err = asked_of_a_stand_in(vault, note, b"", "rule", "--topic", "article-images", "--summary",
                                         "Articles use only images we took.")
    assert (code, out) == (1, b"") and str(note).encode() in err and b"vault-tools lint" in err, err
    assert note.read_bytes() == NOTE_WRITTEN
    assert list((vault / "Decisions").glob("*.md")) == [note]  # and nothing recorded here besides
    assert _lock_free(vault)


def test_a_caller_that_stops_answering_is_asked_nothing_more(monkeypatch):
    """Once an exchange with the caller fails (it stalled past the time allowed, or went away), the resident
    process asks it for nothing more: a caller that wakes up later makes no write the command counted as not
    made. Each write asked for carries the time after which the caller makes none of it."""
    monkeypatch.setattr(resident_process, "CALLER_WRITES_WITHIN_SECONDS", 0.2)
    here, there = socket.socketpair()
    with here, there, here.makefile("rb") as reader:
        writes = resident_process._CallerWrites(here, reader)
        asked = {"op": "files", "paths": ["/v/a.md"], "sizes": [1]}
        first = writes._asked(asked, b"a")
        assert isinstance(first[0], TimeoutError) and writes._asked(asked, b"a")[0].errno == first[0].errno
        there.settimeout(1)
        sent = there.recv(1 << 16)
    assert sent.count(b"\n") == 1 and json.loads(sent.split(b"\n")[0])["write"]["by"] < time.monotonic() + 30


def test_a_write_asked_for_outside_the_vault_or_on_a_changed_file_is_not_made(tmp_path):
    """What the caller is asked to write stays within its vault, and an append lands only where the file still
    holds what the resident process read: else nothing is written and the error is sent back."""
    vault = tmp_path / "vault"
    (vault / "ledger").mkdir(parents=True)
    outside = tmp_path / "elsewhere.md"
    found = durable.make_asked({"op": "files", "paths": [str(outside), str(vault / "in.md")], "sizes": [3, 2]},
                               b"outin", str(vault))
    assert isinstance(found[0], PermissionError) and found[1] is None
    assert not outside.exists() and (vault / "in.md").read_bytes() == b"in"
    escape = vault / "link"
    escape.symlink_to(tmp_path)
    assert isinstance(durable.make_asked({"op": "files", "paths": [str(escape / "x.md")], "sizes": [1]}, b"x",
                                         str(vault))[0], PermissionError)
    assert not (tmp_path / "x.md").exists()
    ledger = vault / "ledger" / "dev.jsonl"
    ledger.write_bytes(b'{"a":1}\n')
    line = b'{"b":2}\n'
    assert isinstance(durable.make_asked({"op": "append", "paths": [str(ledger)], "sizes": [len(line)], "at": 0},
                                         line, str(vault))[0], OSError)
    assert ledger.read_bytes() == b'{"a":1}\n'
    assert durable.make_asked({"op": "append", "paths": [str(ledger)], "sizes": [len(line)], "at": 8}, line,
                              str(vault)) == [None]
    assert ledger.read_bytes() == b'{"a":1}\n{"b":2}\n'
    new_file = vault / "ledger" / "new" / "other.jsonl"  # refused: neither it nor its folder made
    assert isinstance(durable.make_asked({"op": "append", "paths": [str(new_file)], "sizes": [len(line)], "at": 5,
                                          "folders": True}, line, str(vault))[0], OSError)
    assert not new_file.parent.exists()
    linked = vault / "ledger" / "linked.jsonl"  # an append follows a link: one out of the vault is refused
    target = tmp_path / "target.txt"
    target.write_bytes(b"")
    linked.symlink_to(target)
    assert isinstance(durable.make_asked({"op": "append", "paths": [str(linked)], "sizes": [len(line)], "at": 0},
                                         line, str(vault))[0], PermissionError)
    assert target.read_bytes() == b""
    late = {"op": "files", "paths": [str(vault / "late.md")], "sizes": [1], "by": time.monotonic() - 1}
    assert isinstance(durable.make_asked(late, b"x", str(vault))[0], TimeoutError)
    assert not (vault / "late.md").exists()
    (vault / ".git" / "hooks").mkdir(parents=True)  # the vault's own git directory: never the caller's to write
    for name in (".git/hooks/pre-commit", ".git"):
        hook = {"op": "files", "paths": [str(vault / name)], "sizes": [1]}
        assert isinstance(durable.make_asked(hook, b"x", str(vault))[0], PermissionError), name
    assert not (vault / ".git" / "hooks" / "pre-commit").exists() and (vault / ".git").is_dir()
    (vault / "afile").write_bytes(b"")  # a file where the folder of an append should be: refused, not raised
    assert isinstance(durable.make_asked({"op": "append", "paths": [str(vault / "afile" / "x.jsonl")],
                                          "sizes": [1], "at": 0}, b"x", str(vault))[0], OSError)
    with pytest.raises(ValueError):  # sizes that add up but are not sizes
        durable.make_asked({"op": "files", "paths": [str(vault / "a.md"), str(vault / "b.md")], "sizes": [3, -1]},
                           b"ab", str(vault))


def test_a_caller_killed_halfway_leaves_the_resident_process_answering_as_a_fresh_one(runtime, vault):
    """The console script killed once it made the first write of a recorded question (its note, not yet its
    ledger line), as a kill -9 of the command's own process would leave it: the resident process is not held
    up, the question is not recorded twice, and what it answers next is what a process of its own answers."""
    decision(vault, 1, summary=FOOTER)
    device_tag(vault)
    with watching(vault):
        time.sleep(2.1)
        root = str(vault.resolve())
        lock = resident._ledger_lock_held(root)
        assert lock is not None
        request = resident._request(["ask", "Should articles carry the author's photo?", "--topic", "author-photos",
                                     "--vault", root])
        connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        connection.settimeout(30)
        connection.connect(resident_address.socket_path(root))
        connection.sendall(json.dumps(request).encode() + b"\n")
        with connection.makefile("rb") as reader:
            assert reader.read(1) == b"+"
            head = json.loads(reader.readline())
            assert head["write"]["op"] == "files" and "Decisions" in head["write"]["paths"][0]
            assert durable.make_asked(head["write"], reader.read(head["size"]), root) == [None]
        connection.close()  # killed: its socket and its lock go with it
        lock.let_go()
        time.sleep(4)  # the watcher's pass over the note it left
        for args in (("context",), ("lookup", "author-photos"), ("show", "D-0002"), ("search", "photo")):
            code, out, err = asked_there(*args, "--vault", root, cwd=vault)  # answered there, not held up
            alone = console_script(*args, "--vault", root, cwd=vault, alone=True)
            assert (code, out.decode(), err.decode()) == (alone.code, alone.out, alone.err), args
        asked = console_script("ask", "Should articles carry the author's photo?", "--topic", "author-photos",
                               "--vault", root, cwd=vault)
        assert asked.code != 0 and "already open" in asked.err, asked  # the note it left stands for the question
    assert len(list((vault / "Decisions").glob("D-0002*.md"))) == 1


def test_a_write_made_after_the_resident_process_gave_up_on_it_is_said(runtime, vault):
    """A caller that stalled in the middle of a write (a frozen process, a hung disk) may finish it after the
    resident process stopped waiting and went on as if it were not made: the resident process says in its
    answer how many writes it heard back about, and the caller names each file it made beyond them."""
    note = vault / "Decisions" / "D-0009 Late.md"
    said = b"error: the note could not be written\n"  # the command failed on that write, as far as it knows
    answer = json.dumps({"exit": 3, "writes_answered": 0, "out": 0, "err": len(said)}).encode() + b"\n" + said
    code, out, err = asked_of_a_stand_in(vault, note, answer, "ask", "Should articles carry the author's photo?",
                                         "--topic", "author-photos")
    lines = err.decode().splitlines()
    assert (code, out) == (3, b"") and lines[0] == "error: the note could not be written", lines
    assert lines[1].startswith(f"error: {note}: written after") and note.exists()


def test_a_write_asked_for_beyond_what_the_caller_takes_is_not_made(tmp_path, monkeypatch):
    """What the caller reads from the resident process is bounded: a write of more bytes than any command makes
    is not read, nor made, and the command, having written nothing, runs in the caller's own process."""
    monkeypatch.setattr(resident, "WRITE_LIMIT", 4096)  # 64 MiB in use: a smaller bound, the same rule
    path = str(tmp_path / "r.sock")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(1)
    target = tmp_path / "big.md"

    def too_big():
        size = resident.WRITE_LIMIT + 1
        connection, _ = listener.accept()
        with connection, contextlib.suppress(OSError):  # the caller hangs up on it
            connection.makefile("rb").readline()
            connection.sendall(b"+" + json.dumps({"write": {"op": "files", "paths": [str(target)], "sizes": [size]},
                                                  "size": size}).encode() + b"\n" + bytes(size))
    server = threading.Thread(target=too_big)
    server.start()
    try:
        writes = resident._Writes(str(tmp_path))
        assert resident._asked(path, {"argv": ["ask"]}, writes) == (None, b"", b"")
    finally:
        server.join(timeout=30)
        listener.close()
    assert writes.made == [] and not target.exists()


@pytest.mark.parametrize("args", [
    ("rule", "--topic", "article-images", "--summary", "Articles use only images we took."),
    ("ask", "Should articles carry the author's photo?", "--topic", "author-photos")])
def test_a_note_saved_while_a_command_writes_there_is_on_the_pages_once_the_watcher_passes(vault, monkeypatch,
                                                                                          args):
    """Run there, `ask` and `rule` make their pages from what they read and wrote without walking the vault
    again to look for a note saved meanwhile: the watcher beside the resident process makes the pages again
    from the vault as it is, after its debounce, as after any save. The owner's question, saved while the
    command records, is on them then."""
    decision(vault, 1, summary=FOOTER)
    question = decision(vault, 2, status="open", topics=("reader-replies",),
                        summary="Should the agent answer reader replies?")
    assert console_script("seal", cwd=vault, alone=True).code == 0
    real_append, walks = ledger_module.Ledger.append, []

    def append(self, events, *more, **options):
        done = real_append(self, events, *more, **options)
        question.write_text(question.read_text(encoding="utf-8").replace("reader replies?", "reader replies by mail?"),
                            encoding="utf-8")
        return done
    monkeypatch.setattr(ledger_module.Ledger, "append", append)
    monkeypatch.setattr(vault_module.Vault, "unchanged_since", lambda self, state: walks.append(state) or True)
    assert tried(vault, *args)[0] == 0
    assert walks == []
    monkeypatch.undo()
    for note in (vault / "Decisions").glob("*.md"):  # the watcher's pass comes after its debounce
        os.utime(note, (time.time() - 10, time.time() - 10))
    done = subprocess.run([sys.executable, "-m", "vault_tools", "watch", "--once", "--vault", str(vault)],
                          capture_output=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "reader replies by mail?" in (vault / "Pinned" / "Open questions.md").read_text(encoding="utf-8")
    assert subprocess.run([sys.executable, "-m", "vault_tools", "build", "--check", "--vault", str(vault)],
                          capture_output=True, timeout=60).returncode == 0


def test_once_the_commands_stop_the_resident_process_reads_what_they_changed(runtime, vault):
    """A ruling run there changes the notes the search index was last brought up to date with; once the agent's
    commands stop for `READ_AGAIN_AFTER_SECONDS`, the resident process reads the vault as the reading commands read it, so
    the next command finds the ruling indexed already (and the notes read) rather than paying for it."""
    index = vault / ".vault-tools" / "cache" / "search-v3.sqlite"

    def indexed() -> set[str]:
        try:
            with contextlib.closing(sqlite3.connect(f"{index.as_uri()}?mode=ro", uri=True)) as rows:
                return {row[0] for row in rows.execute("SELECT path FROM files")}
        except sqlite3.Error:  # not made yet
            return set()
    decision(vault, 1, topics=("reader-replies",), summary="The agent answers reader replies within a day.")
    assert console_script("search", "replies", "--vault", str(vault), cwd=vault, alone=True).code == 0  # built
    with watching(vault):
        ruled = console_script("rule", "--topic", "article-footer", "--summary", FOOTER, "--vault", str(vault),
                               cwd=vault)
        assert ruled.code == 0, ruled.err
        note = next((vault / "Decisions").glob("D-0002*.md")).relative_to(vault).as_posix()
        assert note not in indexed()  # its check searched the index before the ruling was written
        deadline = time.monotonic() + resident_process.READ_AGAIN_AFTER_SECONDS + 10
        while note not in indexed():
            assert time.monotonic() < deadline, "the resident process did not read the vault again"
            time.sleep(0.2)


def test_reading_the_vault_again_writes_nothing_in_it(vault, monkeypatch):
    """What the resident process reads while no command waits is read as the reading commands read it: the vault is left
    as it was (its caches aside), even where a writer would tidy something up."""
    decision(vault, 1, summary=FOOTER)
    write(vault / "Decisions" / f"{durable.TEMP_PREFIX}left-by-a-kill{durable.TEMP_SUFFIX}", "half a note")
    assert console_script("lookup", "article-footer", "--vault", str(vault), cwd=vault, alone=True).code == 0
    monkeypatch.setattr(vault_module, "KEEP_LAST_READ", True)
    monkeypatch.setattr(vault_module, "_last_reads", {})
    before = snapshot(vault)
    resident_process._read_vault_again(str(vault), str(vault), dict(os.environ), 0o22)
    assert snapshot(vault) == before
    assert str(vault) in vault_module._last_reads  # read, and kept for the next command
    # what a command says once (a Python without FTS5) is still said to the next command that searches
    without_fts5 = {**os.environ, NO_FTS5_ENV: "1"}
    resident_process._read_vault_again(str(vault), str(vault), without_fts5, 0o22)
    searched = subprocess.run([sys.executable, "-m", "vault_tools", "search", "footer", "--vault", str(vault)],
                              env={**without_fts5, resident_address.NO_RESIDENT_ENV: "1"}, capture_output=True,
                              timeout=60)
    assert "no FTS5" in searched.stderr.decode(), searched.stderr


def test_a_read_ahead_leaves_a_large_change_to_the_command_that_needs_it(vault, monkeypatch):
    """Read ahead of any command, a large read (an index not built yet, a pull bringing many notes) would hold
    up the agent's next command for as long: it is left to the command that needs it, and a small one is made."""
    decision(vault, 1, summary=FOOTER)
    for module in (vault_module, index_module):  # what is read is past the racy window, so it is kept
        monkeypatch.setattr(module, "time", ClockAhead(PAST_RACY_SECONDS))
    monkeypatch.setattr(vault_module, "KEEP_LAST_READ", True)
    monkeypatch.setattr(vault_module, "_last_reads", {})
    index = vault / ".vault-tools" / "cache" / "search-v3.sqlite"

    def indexed() -> set[str]:
        with contextlib.closing(sqlite3.connect(f"{index.as_uri()}?mode=ro", uri=True)) as rows:
            return {row[0] for row in rows.execute("SELECT path FROM files")}

    def kept() -> set[str]:
        return set(vault_module._last_reads[str(vault)][2])

    def searched() -> None:  # what a search does, the index brought up to date with the notes it read
        ws = console.workspace(vault)
        SearchIndex(ws.vault, ws.state()).search("topic")
    read_ahead(console.workspace(vault))
    assert not index.exists()  # never built: the first search builds it
    searched()
    pulled = {decision(vault, number, topics=(f"topic-{number}",)).relative_to(vault).as_posix()
              for number in range(2, READ_AHEAD_MOST + 3)}
    read_ahead(console.workspace(vault))
    assert not pulled & (indexed() | kept())
    searched()
    saved = decision(vault, 99, topics=("late-topic",)).relative_to(vault).as_posix()
    read_ahead(console.workspace(vault))
    assert saved in indexed() and saved in kept()


def sealed_and_read_by_a_kept_reader(vault: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A ruling and an open question sealed by a process of their own; from here on this process keeps its read
    and its ledger reader from command to command, as the resident process does."""
    decision(vault, 1, summary=FOOTER)
    decision(vault, 2, status="open", topics=("reader-replies",), summary="Should the agent answer reader replies?")
    assert console_script("seal", "--vault", str(vault), cwd=vault, alone=True).code == 0
    monkeypatch.setattr(vault_module, "KEEP_LAST_READ", True)
    monkeypatch.setattr(vault_module, "_last_reads", {})
    monkeypatch.setattr(vault_module, "_kept_ledgers", {})


def test_a_kept_ledger_reader_whose_device_tag_changed_reads_as_a_new_process(vault, monkeypatch):
    """This device's tag decides which ledger file is its own (a torn last line there is an error; in another
    device's file, a line still arriving). Once the tag is gone (the devices folder removed; a git folder made
    has the same effect), a reader kept from command to command answers as a process of its own does."""
    sealed_and_read_by_a_kept_reader(vault, monkeypatch)
    kept = vault_module.Vault(vault).ledger
    assert kept.summaries() and kept.own_name() is not None  # its own file found, by its tag
    own = ledger_file(vault)
    shutil.rmtree(vault / ".vault-tools" / "devices")
    with own.open("a", encoding="utf-8") as ledger:
        ledger.write('{"event": "ruled", "id": "D-00')  # a torn last line, in what is no longer this device's file
    monkeypatch.setattr(vault_module, "KEEP_LAST_READ", False)
    alone = vault_module.Vault(vault).ledger.summaries()
    monkeypatch.setattr(vault_module, "KEEP_LAST_READ", True)
    again = vault_module.Vault(vault).ledger
    assert again is not kept and again.summaries() == alone


def ledger_lines_parsed(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The text of each ledger read from here on, as it is parsed."""
    from vault_tools import ledger_file as ledger_file_module

    parsed: list[str] = []
    real = ledger_file_module.parse_ledger

    def parse_ledger(text: str, *args: object, **kwargs: object) -> object:
        parsed.append(text)
        return real(text, *args, **kwargs)

    monkeypatch.setattr(ledger_file_module, "parse_ledger", parse_ledger)
    return parsed


def test_a_read_ahead_leaves_a_ledger_replaced_whole_to_the_next_command(vault, monkeypatch):
    """A ledger file replaced whole (a checkout, a sync engine writing a new file) is read again whole: ahead of
    any command, past `READ_AHEAD_LEDGER_BYTES` that is left to the command that needs it; lines appended to
    the file it read are read ahead."""
    from vault_tools.commands import read as read_module
    sealed_and_read_by_a_kept_reader(vault, monkeypatch)
    read_ahead(console.workspace(vault))  # the kept ledger reader has read the ledger
    ledger = ledger_file(vault)
    monkeypatch.setattr(read_module, "READ_AHEAD_LEDGER_BYTES", ledger.stat().st_size - 1)
    parsed = ledger_lines_parsed(monkeypatch)
    replaced = ledger.with_name(ledger.name + ".new")
    replaced.write_bytes(ledger.read_bytes())
    replaced.replace(ledger)  # the same lines, in a new file
    read_ahead(console.workspace(vault))
    assert parsed == []
    console.workspace(vault).histories()  # the next command, as the resident process runs it, reads it whole
    assert len(parsed) == 1
    withdrawn = console_script("withdraw", "D-0002", "--reason", "The agent does not answer replies at all.",
                               "--vault", str(vault), cwd=vault, alone=True)  # a line another process appends
    assert withdrawn.code == 0, withdrawn.err
    parsed.clear()
    read_ahead(console.workspace(vault))
    assert len(parsed) == 1 and '"withdrawn"' in parsed[0] and '"ruled"' not in parsed[0]  # the line appended alone


@pytest.mark.parametrize("shared", [True, False])
def test_after_its_own_append_a_line_another_process_appends_is_read_alone(tmp_path, monkeypatch, shared):
    """The resident process records a question (its reader appends to the ledger file), then another process
    appends a line (the watcher, `withdraw`): the reader, ahead of any command or in the next one, reads that
    line alone, not the whole file again (the digest of what it read goes on with what it appended)."""
    from vault_tools.commands import read as read_module
    from vault_tools.commands.ask import ask

    vault = make_vault(tmp_path / "vault", shared=shared)
    sealed_and_read_by_a_kept_reader(vault, monkeypatch)
    read_ahead(console.workspace(vault))
    ask(console.workspace(vault), "Which colour should the newsletter header use?", ["newsletter-header"])
    ledger = ledger_file(vault)
    monkeypatch.setattr(read_module, "READ_AHEAD_LEDGER_BYTES", ledger.stat().st_size // 2)
    parsed = ledger_lines_parsed(monkeypatch)
    withdrawn = console_script("withdraw", "D-0002", "--reason", "The agent does not answer replies at all.",
                               "--vault", str(vault), cwd=vault, alone=True)
    assert withdrawn.code == 0, withdrawn.err
    read_ahead(console.workspace(vault))
    assert len(parsed) == 1 and '"withdrawn"' in parsed[0] and '"asked"' not in parsed[0], parsed
    shown = console_script("show", "D-0002", "--json", "--vault", str(vault), cwd=vault, alone=True)
    assert json.loads(shown.out)["status"] == "withdrawn"
    kept = {history.id: history for history in console.workspace(vault).histories().values()}
    assert kept["D-0002"].events[-1].event == "withdrawn"  # the kept reader holds it, read ahead
    events = console.workspace(vault).vault.ledger.read()  # the lines it wrote as it made them, then the read one
    monkeypatch.setattr(vault_module, "_kept_ledgers", {})
    fresh = console.workspace(vault).vault.ledger.read()  # every line read from the file
    assert [(event, event.line, event.source, event.position) for event in events] == \
        [(event, event.line, event.source, event.position) for event in fresh]


def test_a_resident_process_whose_own_folder_was_removed_still_answers(runtime, vault, tmp_path):
    """The folder the watcher was started from is removed (a temp folder, a checkout moved): the resident
    process still runs each command in the command's own folder and answers as its own process does."""
    decision(vault, 1, summary=FOOTER)
    started_in = tmp_path / "gone-soon"
    started_in.mkdir()
    watcher = subprocess.Popen([sys.executable, "-m", "vault_tools", "watch", "--vault", str(vault)], cwd=started_in,
                               stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        socket_file = Path(resident_address.socket_path(str(vault.resolve())))
        deadline = time.monotonic() + 30
        while not socket_file.exists():
            assert time.monotonic() < deadline and watcher.poll() is None, "no resident process listened"
            time.sleep(0.05)
        shutil.rmtree(started_in)
        there = asked_there("lookup", "article-footer", "--vault", str(vault), cwd=vault)
        alone = console_script("lookup", "article-footer", "--vault", str(vault), cwd=vault, alone=True)
        assert (there[0], there[1].decode(), there[2].decode()) == (alone.code, alone.out, alone.err)
    finally:
        watcher.send_signal(signal.SIGTERM)
        watcher.wait(timeout=30)


def test_told_to_stop_while_reading_ahead_it_stops_at_once(runtime, vault, monkeypatch):
    """SIGTERM while the resident process reads ahead: it ends once that read is done, not after waiting a
    second more for a command."""
    decision(vault, 1, summary=FOOTER)
    ended: list[float] = []

    def read_ahead_then_told_to_stop(*_: object) -> None:
        resident_process._told_to_stop.append(True)  # as the SIGTERM handler does mid-read
        ended.append(time.monotonic())
    monkeypatch.setattr(resident_process, "_told_to_stop", [])
    monkeypatch.setattr(resident_process, "_read_again", [(0.0, str(vault), dict(os.environ), 0o22)])
    monkeypatch.setattr(resident_process, "_read_vault_again", read_ahead_then_told_to_stop)
    monkeypatch.setattr(resident_process, "_warm_up", lambda: None)
    resident_process.serve(str(vault.resolve()), os.getppid())
    assert ended and time.monotonic() - ended[0] < 0.5


def test_a_read_ahead_leaves_an_index_being_written_or_damaged_to_the_next_search(vault, monkeypatch):
    """Another process writing the search index: the read ahead does not wait for it (a command arriving would).
    A damaged index is left for the next search, which builds it again and says so."""
    decision(vault, 1, summary=FOOTER)
    assert console_script("search", "footer", "--vault", str(vault), cwd=vault, alone=True).code == 0
    decision(vault, 2, topics=("reader-replies",), summary="The agent answers reader replies within a day.")
    index = vault / ".vault-tools" / "cache" / "search-v3.sqlite"
    with contextlib.closing(sqlite3.connect(index, isolation_level=None)) as writer:
        writer.execute("BEGIN EXCLUSIVE")
        started = time.monotonic()
        read_ahead(console.workspace(vault))
        assert time.monotonic() - started < 1
        writer.execute("ROLLBACK")
    index.write_bytes(b"not a database at all" * 100)
    read_ahead(console.workspace(vault))
    assert index.read_bytes().startswith(b"not a database")
    searched = console_script("search", "replies", "--vault", str(vault), cwd=vault, alone=True)
    assert searched.code == 0 and "was damaged; it was built again" in searched.err, searched.err


def test_after_a_ruling_and_the_read_ahead_every_reader_answers_as_a_fresh_process(runtime, vault):
    """A ruling run there, then the read ahead once the commands stop: what the readers answer there from what
    it kept (the notes, the ledger, the index's decisions in effect) is what a fresh process answers."""
    decision(vault, 1, topics=("reader-replies",), summary="The agent answers reader replies within a day.")
    assert console_script("search", "replies", "--vault", str(vault), cwd=vault, alone=True).code == 0
    with watching(vault):
        ruled = console_script("rule", "--topic", "article-footer", "--summary", FOOTER, "--vault", str(vault),
                               cwd=vault)
        assert ruled.code == 0, ruled.err
        time.sleep(resident_process.READ_AGAIN_AFTER_SECONDS + 1.5)  # the read ahead is over by then
        ruling = made_id(vault, "D-0002")
        for args, code in ((("lookup", "article-footer"), 0), (("show", ruling), 0), (("search", "footer"), 0),
                           (("context",), 0), (("ask", FOOTER, "--topic", "footers"), 1)):
            there = asked_there(*args, "--vault", str(vault), cwd=vault)
            alone = console_script(*args, "--vault", str(vault), cwd=vault, alone=True)
            assert (there[0], there[1].decode(), there[2].decode()) == (code, alone.out, alone.err), args
            assert alone.code == code and (ruling in alone.out + alone.err or args[0] == "context"), args


@pytest.mark.parametrize("mode", ["--no-rebase", "--rebase"])
def test_what_a_pull_brought_is_answered_there_as_alone(runtime, tmp_path, capsys, mode):
    """Two clones carried by git, the agent's commands on A answered by A's watcher's resident process: what B
    recorded, pulled into A (merged, or A's own commits replayed on B's), is answered there as a process of its
    own answers it, and a ruling recorded there after the pull takes an id no clone gave."""
    from .git_repo import git_env
    from .test_machines import clone, make_origin

    origin = make_origin(tmp_path, capsys)
    a, b = clone(origin, "A"), clone(origin, "B")
    in_a = ("--vault", str(a.root))
    with watching(a.root):
        time.sleep(2.1)  # past the racy window: what the resident process reads it keeps
        here = console_script("rule", "--topic", "podcast-music", "--summary", "The podcast has no theme tune.",
                              "--source", "chat", *in_a, cwd=a.root)
        assert here.code == 0, here.err
        assert asked_there("lookup", "podcast-music", *in_a, cwd=a.root)[0] == 0  # its kept read has A's ruling
        there_ruled = b.rule("--topic", "sponsor-slot", "--summary", "Sponsors never choose the slot.")
        there_asked = b.ask("Should the agent answer reader replies?", "reader-replies")
        b.commit("recorded on B")
        a.commit("recorded on A")
        pulled = subprocess.run(["git", "pull", "-q", mode, "--no-edit", str(b.root), "main"], cwd=a.root,
                                capture_output=True, text=True, env=git_env(), timeout=120)
        assert pulled.returncode == 0, pulled.stderr
        time.sleep(3)  # the watcher's pass over what the pull brought is over
        for args in (("lookup", "sponsor-slot"), ("show", there_ruled, "--json"), ("show", there_asked),
                     ("search", "sponsors slot"), ("context", "--json"), ("lookup", "podcast-music"),
                     ("ask", "Do sponsors choose the slot?", "--topic", "sponsor-placement")):
            there = asked_there(*args, *in_a, cwd=a.root)
            alone = console_script(*args, *in_a, cwd=a.root, alone=True)
            assert there[0] is not None, f"{args}: not answered there"
            assert (there[0], there[1].decode(), there[2].decode()) == (alone.code, alone.out, alone.err), args
        assert there_ruled in console_script("lookup", "sponsor-slot", *in_a, cwd=a.root).out
        after = console_script("rule", "--topic", "newsletter-length", "--summary", "The newsletter stays under "
                               "a thousand words.", "--source", "chat", *in_a, cwd=a.root)
        assert after.code == 0, after.err
        numbers = [int(made.split("-")[1]) for made in (here.out.split()[0], there_ruled, there_asked)]
        assert int(after.out.split()[0].split("-")[1]) > max(numbers), after.out


def test_the_console_script_finds_the_vault_the_command_finds(tmp_path, monkeypatch):
    """The console script finds the vault to ask about without `record_files` (`vault_root.vault_named`): the
    folder `find_vault` gives, from a note's folder, through a symbolic link, with `--vault` given relative or
    with `~`, below the ceiling and not above it, and none where there is none."""
    vault = tmp_path / "notes" / "vault"
    (vault / ".obsidian").mkdir(parents=True)
    (vault / "Projects" / "deep").mkdir(parents=True)
    shared = tmp_path / "shared"
    (shared / "vault-tools" / "ledger").mkdir(parents=True)
    (shared / "inside").mkdir()
    (tmp_path / "link").symlink_to(vault / "Projects")
    (tmp_path / "plain").mkdir()
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv(CEILING_ENV, str(tmp_path))
    for folder in (vault, vault / "Projects" / "deep", tmp_path / "link", shared / "inside"):
        monkeypatch.chdir(folder)
        assert vault_named(None) == str(find_vault(None)), folder
    monkeypatch.chdir(tmp_path)
    for given in ("notes/vault", "~/notes/vault", "link", str(shared)):
        assert vault_named(given) == str(find_vault(Path(given))), given
    monkeypatch.chdir(tmp_path / "plain")
    assert vault_named(None) is None
    assert vault_named("no-such-folder") is None
    monkeypatch.setenv(CEILING_ENV, str(vault / "Projects"))  # a vault above the ceiling is not looked for
    monkeypatch.chdir(vault / "Projects" / "deep")
    assert vault_named(None) is None


@pytest.mark.skipif(os.geteuid() == 0, reason="run as root, every folder can be stat'ed: a record that may not be read "
                    "does not happen")
def test_a_record_that_cannot_be_read_is_not_taken_for_no_record(tmp_path):
    """A shared record whose folder may not be read is an error naming it, never no record: the command would
    otherwise work on the vault further up, or write a second record beside the first."""
    outer = tmp_path / "outer"
    (outer / ".obsidian").mkdir(parents=True)
    inner = outer / "inner"
    (inner / "vault-tools" / "ledger").mkdir(parents=True)
    (inner / "vault-tools" / "config.yaml").write_text("timezone: UTC\n", encoding="utf-8")
    (inner / "notes").mkdir()
    (inner / "vault-tools").chmod(0)
    try:
        ran = vt("ask", "Should the inner project use the new storage engine?", "--topic", "storage-engine",
                 cwd=inner / "notes")
    finally:
        (inner / "vault-tools").chmod(0o755)
    assert ran.code != 0 and "vault-tools" in ran.err, ran
    assert sorted(p.name for p in outer.iterdir()) == [".obsidian", "inner"]  # nothing written in the vault above
    assert sorted(p.name for p in inner.iterdir()) == ["notes", "vault-tools"]


def test_a_name_too_long_on_the_way_up_is_an_error_not_no_vault(tmp_path):
    """Only a file that is not there is passed over on the way up to a vault, as pathlib takes it: any other
    error (here a name longer than the file system takes) is raised, by the console script's walk and the
    command's alike."""
    too_long = str(tmp_path / ("x" * 300))
    with pytest.raises(OSError):
        vault_folder_above(too_long, None)
    with pytest.raises(OSError):
        find_vault(None, Path(too_long))
