"""The vault's resident process (vault_tools/resident.py, resident_process.py): `vault-tools watch` keeps one,
the agent's commands sent to it answer byte for byte as in a process of their own, and whenever it cannot
answer (gone, other code, a folder others may enter) the command runs in its own process instead."""
from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

from vault_tools import resident, resident_address
from vault_tools.state_memo import code_fingerprint

from .helpers import FOOTER, Result, decision, snapshot, write

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


def run(*args: str, cwd: Path, alone: bool = False) -> Result:
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
            code = resident.answer_there(list(args))
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


def test_the_agents_commands_answer_there_as_they_answer_alone(runtime, vault):
    decision(vault, 1, topics=("article-footer",), summary=FOOTER)
    decision(vault, 2, status="open", topics=("reader-replies",), summary="Should the agent answer reader replies?")
    write(vault / "Notes" / "Café.md", "A plain note about the café's opening hours.\n")
    asks = [
        ("show", "D-0001"), ("show", "D-0001", "--json"), ("show", "D-0999"), ("lookup", "article-footer"),
        ("lookup", "article-footer", "--json"), ("search", "café hours"), ("search", "footer", "--json"),
        ("context",), ("context", "--json"), ("context", "--budget", "400"),
        ("ask", "What should the article footer say?", "--topic", "footer-text"),  # refused: the same matter
        ("ask", "Should the agent answer reader replies?", "--topic", "reader-replies"),  # open already
        ("rule", "--topic", "nope"),  # a usage error
        ("lookup",),  # and another
    ]
    with watching(vault):
        time.sleep(2.1)  # past the racy window: what the resident process reads it may keep
        for args in asks:
            there = asked_there(*args, "--vault", str(vault), cwd=vault)
            assert there[0] is not None, f"{args}: not answered by the resident process"
            alone = run(*args, "--vault", str(vault), cwd=vault, alone=True)
            assert (there[0], there[1].decode(), there[2].decode()) == (alone.code, alone.out, alone.err), args
            assert run(*args, "--vault", str(vault), cwd=vault) == alone, args  # the console script, end to end


def test_what_one_writes_through_it_every_reader_sees_and_an_edit_between_commands_is_seen(runtime, vault):
    with watching(vault):
        code, _, err = asked_there("rule", "--topic", "article-footer", "--summary", FOOTER, "--source", "chat",
                                   "--vault", str(vault), cwd=vault)
        assert code == 0, err
        alone = run("show", "D-0001", "--json", "--vault", str(vault), cwd=vault, alone=True)
        assert json.loads(alone.out)["summary"] == FOOTER
        note = next((vault / "Decisions").glob("D-0001*.md"))
        before = run("lookup", "article-footer", "--vault", str(vault), cwd=vault)
        assert "D-0001" in before.out
        time.sleep(2.1)
        write(vault / "Decisions" / "D-0002 Images.md", note.read_text(encoding="utf-8").replace(
            "id: D-0001", "id: D-0002").replace("article-footer", "article-images"))
        for args in (("lookup", "article-images"), ("search", "footer"), ("context",)):
            there = asked_there(*args, "--vault", str(vault), cwd=vault)
            alone = run(*args, "--vault", str(vault), cwd=vault, alone=True)
            assert there[0] is not None and (there[0], there[1].decode(), there[2].decode()) == (
                alone.code, alone.out, alone.err), args
        assert "D-0002" in run("lookup", "article-images", "--vault", str(vault), cwd=vault).out


def test_the_vault_is_found_from_the_commands_own_folder(runtime, vault):
    decision(vault, 1, summary=FOOTER)
    inside = vault / "Notes" / "deep"
    inside.mkdir(parents=True)
    with watching(vault):
        there = asked_there("show", "D-0001", cwd=inside)
        assert there[0] == 0 and FOOTER in there[1].decode()
        assert run("show", "D-0001", cwd=inside) == run("show", "D-0001", cwd=inside, alone=True)


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
    assert run("show", "D-0001", "--vault", str(vault), cwd=vault).code == 0


def test_a_reading_command_runs_here_when_the_resident_process_dies_before_answering(runtime, vault):
    """A listener that takes the command and closes without a word: `show` runs in its own process; `rule`
    says it cannot know whether the ruling was recorded (exit 4), and does not record it a second time."""
    decision(vault, 1, summary=FOOTER)
    path = resident_address.socket_path(str(vault.resolve()))
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(4)
    taken = []

    def take_and_die() -> None:
        for _ in range(2):
            connection, _ = listener.accept()
            taken.append(connection.recv(1 << 20))
            connection.close()

    thread = threading.Thread(target=take_and_die)
    thread.start()
    try:
        shown = run("show", "D-0001", "--vault", str(vault), cwd=vault)
        assert shown == run("show", "D-0001", "--vault", str(vault), cwd=vault, alone=True)
        before = snapshot(vault)
        ruled = run("rule", "--topic", "article-images", "--summary", "Articles use only images we took.",
                    "--vault", str(vault), cwd=vault)
        assert ruled.code == 4 and "ended before answering `rule`" in ruled.err
        assert snapshot(vault) == before
    finally:
        thread.join(timeout=10)
        listener.close()
    assert len(taken) == 2


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
        shown = run("show", "D-0001", "--vault", str(vault), cwd=vault)
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
                                       "umask": 0o22, "code": "other code", "encodings": ["utf-8", "utf-8"]}).encode())
        connection.shutdown(socket.SHUT_WR)
        assert json.loads(connection.makefile("rb").readline()) == {"stale": True, "out": 0, "err": 0}
        connection.close()
        deadline = time.monotonic() + 10
        while os.path.exists(path) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not os.path.exists(path)
        assert run("show", "D-0001", "--vault", str(vault), cwd=vault) == run(
            "show", "D-0001", "--vault", str(vault), cwd=vault, alone=True)


def test_commands_sent_at_once_are_each_answered_as_alone(runtime, vault):
    """An agent running commands in parallel: the resident process takes one at a time, and each gets the
    answer its own process gives (a ruling recorded meanwhile included, once)."""
    decision(vault, 1, summary=FOOTER)
    decision(vault, 2, status="open", topics=("reader-replies",), summary="Should the agent answer reader replies?")
    asks = [("show", "D-0001"), ("lookup", "article-footer"), ("context",), ("search", "footer")] * 3
    with watching(vault):
        time.sleep(2.1)
        expected = {args: run(*args, "--vault", str(vault), cwd=vault, alone=True) for args in set(asks)}
        answered: list[tuple[tuple[str, ...], Result]] = []

        def one(args: tuple[str, ...]) -> None:
            answered.append((args, run(*args, "--vault", str(vault), cwd=vault)))

        threads = [threading.Thread(target=one, args=(args,)) for args in asks]
        threads.append(threading.Thread(target=lambda: answered.append((("rule",), run(
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
    assert run("lookup", "reader-replies", "--json", "--vault", str(vault), cwd=vault, alone=True).out.count(
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
            "env": dict(os.environ), "umask": 0o22, "code": code_fingerprint(), "encodings": ["utf-8", "utf-8"]}
        ).encode())
        connection.shutdown(socket.SHUT_WR)
        assert json.loads(connection.makefile("rb").readline()) == {"elsewhere": True, "out": 0, "err": 0}
        connection.close()
        assert asked_there("show", "D-0001", "--vault", str(vault), cwd=vault)[0] == 0  # and it still answers
