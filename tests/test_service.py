"""`vault-tools service install|remove|status`: the watcher run at login for one vault.

The command runs in a real process with HOME (and XDG_CONFIG_HOME) pointed at a temp folder, so the unit it
writes lands there; the launchd plist and the refusal on another platform are checked through the pure
functions that build them. Where systemctl must fail, a fake `systemctl` that exits 1 is first on PATH; where it
must work, the machine's own `systemctl --user` is used, and that test is skipped when there is none.
"""
from __future__ import annotations

import json
import os
import plistlib
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.helpers import Result, make_vault, snapshot
from vault_tools.commands import service as services
from vault_tools.errors import UsageError

LINUX = sys.platform.startswith("linux")
on_linux = pytest.mark.skipif(not LINUX, reason="the command writes a systemd unit on Linux only; the launchd "
                                                "plist is checked through the pure function")
WATCH = ["-m", "vault_tools", "watch", "--vault"]


def run_service(*args: str, cwd: Path, home: Path, env: dict[str, str] | None = None,
                timeout: float = 60) -> Result:
    """`python -m vault_tools service ARGS` in a real process whose home is `home` (XDG_CONFIG_HOME unset
    unless `env` sets it)."""
    return run_at_home("service", *args, cwd=cwd, home=home, env=env, timeout=timeout)


def run_at_home(*args: str, cwd: Path, home: Path, env: dict[str, str] | None = None, timeout: float = 60) -> Result:
    """`python -m vault_tools ARGS` in a real process whose home is `home` (XDG_CONFIG_HOME unset unless `env`
    sets it)."""
    base = {key: value for key, value in os.environ.items() if key != "XDG_CONFIG_HOME"}
    full = {**base, "HOME": str(home), "COLUMNS": "200", "NO_COLOR": "1", **(env or {})}
    done = subprocess.run([sys.executable, "-m", "vault_tools", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=timeout, env=full)
    return Result(done.returncode, done.stdout, done.stderr)


def files_under(folder: Path) -> dict[str, bytes]:
    return {path.relative_to(folder).as_posix(): path.read_bytes()
            for path in sorted(folder.rglob("*")) if path.is_file() or path.is_symlink()}


def fake_tool(folder: Path, name: str, code: int, said: str = "") -> dict[str, str]:
    """A `name` script first on PATH that says `said` on stderr and exits `code`: the env to run with."""
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / name
    script.write_text(f"#!/bin/sh\necho '{said}' >&2\nexit {code}\n", encoding="utf-8")
    script.chmod(0o755)
    return {"PATH": f"{folder}{os.pathsep}{os.environ.get('PATH', '')}"}


def systemd_words(line: str) -> list[str]:
    """A command line as systemd reads it (systemd.service(5), "Command lines"): `%%` is `%`, words are bare or
    in double quotes with C escapes, and `$$` is `$`. Fails on anything else (a lone `%` or `$`)."""
    assert "%" not in line.replace("%%", ""), line
    line = line.replace("%%", "%")
    words, index = [], 0
    while index < len(line):
        if line[index] == " ":
            index += 1
            continue
        word = ""
        if line[index] == '"':
            index += 1
            while line[index] != '"':
                if line[index] == "\\":
                    escape = line[index + 1]
                    if escape == "x":
                        word += chr(int(line[index + 2:index + 4], 16))
                        index += 4
                        continue
                    word += {"\\": "\\", '"': '"'}[escape]
                    index += 2
                    continue
                word += line[index]
                index += 1
            index += 1
        else:
            while index < len(line) and line[index] != " ":
                assert line[index] not in '\\"', line
                word += line[index]
                index += 1
        assert "$" not in word.replace("$$", ""), word
        words.append(word.replace("$$", "$"))
    return words


def unit_lines(text: str) -> dict[str, str]:
    return dict(line.split("=", 1) for line in text.splitlines() if "=" in line and not line.startswith("#"))


@pytest.fixture
def home(tmp_path) -> Path:
    folder = tmp_path / "home"
    folder.mkdir()
    return folder


@pytest.fixture
def spaced_vault(tmp_path) -> Path:
    """A vault whose path has a space, a `%` and a `$`: what systemd would read as specifiers and variables."""
    return make_vault(tmp_path / "my 100% $vault")


def unit_path(home: Path, vault: Path) -> Path:
    return home / ".config" / "systemd" / "user" / f"vault-tools-watch-{services.vault_hash(vault)}.service"


# -- the unit ------------------------------------------------------------------------------------------

@on_linux
def test_install_writes_a_user_unit_running_this_python_on_the_vault(spaced_vault, home, tmp_path) -> None:
    vault_before = snapshot(spaced_vault)
    done = run_service("install", "--no-start", cwd=spaced_vault, home=home)  # the vault found from here
    assert done.code == 0, done.err
    path = unit_path(home, spaced_vault)
    assert list(files_under(home)) == [path.relative_to(home).as_posix()]  # its own file, and nothing else
    assert snapshot(spaced_vault) == vault_before
    text = path.read_text(encoding="utf-8")
    lines = unit_lines(text)
    assert systemd_words(lines["ExecStart"]) == [sys.executable, *WATCH, str(spaced_vault)]
    assert lines["ExecStart"].endswith(' --vault "' + str(spaced_vault).replace("%", "%%").replace("$", "$$") + '"')
    assert lines["Description"] == f"vault-tools watcher for {str(spaced_vault).replace('%', '%%')}"
    assert (lines["Restart"], lines["RestartSec"], lines["WantedBy"]) == ("on-failure", "30", "default.target")
    # it says where the unit is, where the log goes, and how to start it
    assert str(path) in done.out
    assert str(spaced_vault / ".vault-tools" / "watch.log") in done.out
    assert f"journalctl --user -u {path.name}" in done.out
    assert f"systemctl --user enable --now {path.name}" in done.out
    if shutil.which("systemd-analyze"):  # systemd's own reading of the file: no complaint
        checked = subprocess.run(["systemd-analyze", "verify", str(path)], capture_output=True, text=True)
        assert (checked.returncode, checked.stderr) == (0, ""), checked.stderr


@on_linux
def test_install_from_elsewhere_names_the_same_unit_and_follows_xdg_config_home(vault, home, tmp_path) -> None:
    config = tmp_path / "config"
    done = run_service("install", "--no-start", "--vault", str(vault), "--json", cwd=tmp_path, home=home,
                       env={"XDG_CONFIG_HOME": str(config)})
    assert done.code == 0, done.err
    answer = json.loads(done.out)
    path = config / "systemd" / "user" / f"vault-tools-watch-{services.vault_hash(vault)}.service"
    assert answer["unit"] == str(path) and path.is_file()
    assert (answer["kind"], answer["written"], answer["started"]) == ("systemd", "created", None)
    assert answer["logs"][0] == str(vault / ".vault-tools" / "watch.log")
    assert files_under(home) == {}


@on_linux
def test_a_second_install_changes_nothing_and_a_moved_python_is_rewritten(vault, home) -> None:
    assert run_service("install", "--no-start", cwd=vault, home=home).code == 0
    path = unit_path(home, vault)
    first, written_at = path.read_bytes(), path.stat().st_mtime_ns
    again = run_service("install", "--no-start", cwd=vault, home=home)
    assert again.code == 0 and again.out.startswith(f"unchanged: {path}")
    assert (path.read_bytes(), path.stat().st_mtime_ns) == (first, written_at)

    path.write_bytes(first.replace(sys.executable.encode(), b"/old/place/bin/python"))  # the Python moved
    stale = json.loads(run_service("status", "--json", cwd=vault, home=home).out)
    assert (stale["installed"], stale["up_to_date"]) == (True, False)
    moved = run_service("install", "--no-start", cwd=vault, home=home)
    assert moved.code == 0 and moved.out.startswith(f"rewrote {path} (it differed")
    assert path.read_bytes() == first


@on_linux
def test_wiring_an_agent_in_says_how_to_run_the_watcher_at_login_until_it_is_installed(vault, home) -> None:
    """The agent's commands are answered by the watcher's resident process: `init --agent` says how to start it
    at login where no unit is installed for the vault, and says nothing of it once one is (nor on `--remove`)."""
    wired = run_at_home("init", "--agent", "claude", cwd=vault, home=home)
    assert wired.code == 0 and "`vault-tools service install` starts it at every login" in wired.err
    removed = run_at_home("init", "--agent", "claude", "--remove", cwd=vault, home=home)
    assert removed.code == 0 and "service install" not in removed.err
    assert run_service("install", "--no-start", cwd=vault, home=home).code == 0
    again = run_at_home("init", "--agent", "codex", cwd=vault, home=home)
    assert again.code == 0 and "created or updated" in again.err and "service install" not in again.err


@on_linux
def test_status_says_whether_it_is_installed_and_up_to_date(vault, home) -> None:
    before = run_service("status", cwd=vault, home=home)
    assert before.code == 0 and before.out.startswith("not installed:")
    assert json.loads(run_service("status", "--json", cwd=vault, home=home).out)["installed"] is False
    assert files_under(home) == {}  # status writes nothing
    run_service("install", "--no-start", cwd=vault, home=home)
    after = run_service("status", cwd=vault, home=home)
    assert after.code == 0
    assert after.out.splitlines()[0] == f"installed: {unit_path(home, vault)} (up to date)"
    assert after.out.splitlines()[1].startswith("running: ")
    answer = json.loads(run_service("status", "--json", cwd=vault, home=home).out)
    assert (answer["installed"], answer["up_to_date"]) == (True, True)
    assert answer["running"] in (True, False, None)


@on_linux
def test_remove_leaves_nothing_behind(vault, home, tmp_path) -> None:
    before = files_under(home)
    vault_before = snapshot(vault)
    assert run_service("install", "--no-start", cwd=vault, home=home).code == 0
    done = run_service("remove", cwd=vault, home=home, env=fake_tool(tmp_path / "bin", "systemctl", 0))
    assert done.code == 0, done.err
    assert done.out.startswith(f"removed {unit_path(home, vault)}")
    assert files_under(home) == before
    assert snapshot(vault) == vault_before
    nothing = run_service("remove", cwd=vault, home=home)
    assert nothing.code == 0 and nothing.out.startswith("nothing to remove:")
    assert json.loads(run_service("remove", "--json", cwd=vault, home=home).out)["removed"] is False


@on_linux
def test_remove_when_systemctl_cannot_stop_it_still_deletes_its_file_and_link(vault, home, tmp_path) -> None:
    """The link `enable` made earlier goes too when `disable` cannot run; the owner is told how to stop it."""
    assert run_service("install", "--no-start", cwd=vault, home=home).code == 0
    path = unit_path(home, vault)
    wants = path.parent / "default.target.wants"
    wants.mkdir()
    (wants / path.name).symlink_to(path)
    env = fake_tool(tmp_path / "bin", "systemctl", 1, "Failed to connect to bus: No medium found")
    done = run_service("remove", cwd=vault, home=home, env=env)
    assert done.code == 0
    assert files_under(home) == {}
    assert not os.path.lexists(wants / path.name)
    assert f"warning: could not stop {path.name}" in done.err
    assert f"systemctl --user stop {path.name}" in done.err


# -- starting it -----------------------------------------------------------------------------------------

@on_linux
def test_install_when_systemctl_fails_keeps_the_unit_exits_1_and_gives_the_command(vault, home, tmp_path) -> None:
    env = fake_tool(tmp_path / "bin", "systemctl", 1, "Failed to connect to bus: No medium found")
    done = run_service("install", cwd=vault, home=home, env=env)
    path = unit_path(home, vault)
    assert done.code == 1
    assert path.is_file()
    assert str(path) in done.out
    [line] = done.err.splitlines()
    assert line.startswith(f"error: could not start {path.name}: `systemctl --user daemon-reload` exited 1: "
                           "Failed to connect to bus")
    assert line.endswith(f"run `systemctl --user daemon-reload && systemctl --user enable --now {path.name}`")


@pytest.mark.skipif(not LINUX or shutil.which("systemctl") is None, reason="no systemctl on this machine")
def test_install_when_the_real_systemctl_finds_no_user_bus(vault, home) -> None:
    """The machine's own systemctl, given no way to its user bus (no XDG_RUNTIME_DIR, no DBUS address)."""
    env = {key: value for key, value in os.environ.items()
           if key not in ("XDG_RUNTIME_DIR", "DBUS_SESSION_BUS_ADDRESS", "XDG_CONFIG_HOME")}
    env.update({"HOME": str(home), "NO_COLOR": "1"})
    done = subprocess.run([sys.executable, "-m", "vault_tools", "service", "install"], cwd=vault, env=env,
                          capture_output=True, text=True, timeout=60)
    path = unit_path(home, vault)
    assert done.returncode == 1
    assert path.is_file()
    [line] = done.stderr.splitlines()
    assert f"could not start {path.name}" in line
    assert line.endswith(f"run `systemctl --user daemon-reload && systemctl --user enable --now {path.name}`")


@on_linux
def test_install_without_systemctl_says_it_is_missing(vault, home, tmp_path) -> None:
    empty = tmp_path / "no-tools"
    empty.mkdir()
    done = run_service("install", "--json", cwd=vault, home=home, env={"PATH": str(empty)})
    assert done.code == 1
    answer = json.loads(done.out)
    assert (answer["written"], answer["started"]) == ("created", False)
    assert answer["problem"] == "systemctl is not installed here"
    assert "systemctl is not installed here" in done.err
    assert unit_path(home, vault).is_file()


def user_systemd_answers() -> bool:
    if not LINUX or shutil.which("systemctl") is None:
        return False
    return subprocess.run(["systemctl", "--user", "show-environment"], capture_output=True).returncode == 0


@pytest.mark.skipif(not user_systemd_answers(), reason="no working `systemctl --user` here (no user bus): "
                                                      "starting the unit cannot be tried")
def test_install_starts_the_watcher_where_systemctl_user_works(vault) -> None:
    """The machine's own user manager reads the user's own folder: the real HOME, the unit removed after."""
    real_home = Path.home()
    name = f"vault-tools-watch-{services.vault_hash(vault)}.service"
    env = {"XDG_CONFIG_HOME": os.environ["XDG_CONFIG_HOME"]} if os.environ.get("XDG_CONFIG_HOME") else None
    try:
        done = run_service("install", cwd=vault, home=real_home, env=env)
        assert done.code == 0, done.err
        assert f"started {name}" in done.out
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if json.loads(run_service("status", "--json", cwd=vault, home=real_home, env=env).out)["running"]:
                break
            time.sleep(0.5)
        else:
            pytest.fail("the watcher's unit never became active")
        deadline = time.monotonic() + 30
        while not (vault / ".vault-tools" / "watch.pid").exists() and time.monotonic() < deadline:
            time.sleep(0.5)
        assert (vault / ".vault-tools" / "watch.pid").exists()  # the watcher itself runs on this vault
    finally:
        removed = run_service("remove", cwd=vault, home=real_home, env=env)
    assert removed.code == 0 and removed.err == "", removed.err
    assert f"stopped {name}" in removed.out
    assert json.loads(run_service("status", "--json", cwd=vault, home=real_home, env=env).out)["installed"] is False


# -- the pure parts ----------------------------------------------------------------------------------------

def test_the_launchd_plist_reads_back_with_plistlib(tmp_path) -> None:
    vault = make_vault(tmp_path / "My Notes")
    home = tmp_path / "Users" / "Jane Doe"
    unit = services.build_unit("darwin", "/opt/py 3/bin/python3", vault, vault / ".vault-tools" / "watch.log",
                               home, {"XDG_CONFIG_HOME": "/elsewhere"}, uid=501)
    label = f"local.vault-tools.watch.{services.vault_hash(vault)}"
    assert (unit.kind, unit.name) == ("launchd", label)
    assert unit.path == home / "Library" / "LaunchAgents" / f"{label}.plist"
    agent = plistlib.loads(unit.data)
    output = str(home / "Library" / "Logs" / f"vault-tools-watch-{services.vault_hash(vault)}.log")
    assert agent == {"Label": label, "ProgramArguments": ["/opt/py 3/bin/python3", *WATCH, str(vault)],
                     "RunAtLoad": True, "KeepAlive": {"SuccessfulExit": False}, "ThrottleInterval": 30,
                     "StandardOutPath": output, "StandardErrorPath": output}
    assert unit.logs == (str(vault / ".vault-tools" / "watch.log"), output)
    assert unit.start_line() == (f"launchctl enable gui/501/{label} && "
                                 f"launchctl bootstrap gui/501 {shlex.quote(str(unit.path))}")
    assert "'" in unit.start_line()  # the space in the home folder is quoted for the shell
    assert unit.stop_line() == f"launchctl bootout gui/501/{label}"
    assert not home.exists()  # building writes nothing


def test_another_platform_is_refused_with_the_guide_and_nothing_is_written(tmp_path, vault) -> None:
    for platform in ("win32", "cygwin", "freebsd14"):
        with pytest.raises(UsageError) as refused:
            services.build_unit(platform, sys.executable, vault, vault / "log", tmp_path / "home", {})
        assert refused.value.exit_code == 2
        message = str(refused.value)
        assert "\n" not in message
        assert "Linux (systemd) and macOS (launchd)" in message and "docs/owner-guide.md" in message
    assert services.unit_kind("linux") == "systemd" and services.unit_kind("darwin") == "launchd"
    # the command itself, in a process that believes it runs on Windows
    home = tmp_path / "home"
    home.mkdir()
    program = ("import sys; from vault_tools import cli; import vault_tools.cli.running; sys.platform = 'win32'; "
               "sys.exit(cli.run(['service', 'install', '--vault', sys.argv[1]]))")
    done = subprocess.run([sys.executable, "-c", program, str(vault)], capture_output=True, text=True,
                          env={**os.environ, "HOME": str(home)}, timeout=60)
    assert done.returncode == 2
    [line] = done.stderr.splitlines()
    assert "not win32" in line and "docs/owner-guide.md" in line
    assert files_under(home) == {}


def test_systemd_quoting_keeps_every_character_literal() -> None:
    for argument in ("plain/path-1.0", "with space", "100%", "$HOME", 'say "hi"', "back\\slash", "new\nline",
                     "%h ${X} $$", ""):
        quoted = services.systemd_quote(argument)
        assert systemd_words(quoted) == [argument], quoted
    assert services.systemd_quote("/usr/bin/python3") == "/usr/bin/python3"
    assert services.systemd_quote("/my 100% $vault") == '"/my 100%% $$vault"'
    text = services.systemd_unit_text("/usr/bin/python3", Path("/odd\\name\\"))
    assert "Description=vault-tools watcher for /odd\\name\n" in text  # no trailing `\`: a continuation
    assert systemd_words(unit_lines(text)["ExecStart"])[-1] == "/odd\\name\\"


def test_each_vault_has_its_own_stable_unit_name(tmp_path, monkeypatch) -> None:
    one, two = make_vault(tmp_path / "one"), make_vault(tmp_path / "two")
    (tmp_path / "link").symlink_to(one)
    monkeypatch.chdir(tmp_path)
    names = {services.build_unit("linux", sys.executable, path, path / "log", tmp_path, {}).name
             for path in (one, Path("one"), tmp_path / "link")}
    assert names == {f"vault-tools-watch-{services.vault_hash(one)}.service"}
    assert services.vault_hash(two) != services.vault_hash(one)
    assert len(services.vault_hash(one)) == services.HASH_LENGTH


@on_linux
def test_a_mistyped_action_or_option_is_one_line_exit_2_and_nothing_is_written(tmp_path, vault) -> None:
    home = tmp_path / "home"
    home.mkdir()
    for args, said in ((["instal"], "unknown action 'instal'"), (["remove", "--no-start"], "--no-start goes with install")):
        done = run_service(*args, "--vault", str(vault), cwd=tmp_path, home=home)
        assert done.code == 2, done
        [line] = done.err.splitlines()
        assert said in line
        assert files_under(home) == {}
