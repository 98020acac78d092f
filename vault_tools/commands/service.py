"""`service`: the watcher run at login for one vault, as a per-user systemd unit (Linux) or launchd agent (macOS).

Pure functions build the unit's text from the platform, the Python to run, the vault and where things go
(`build_unit`); `install`, `remove` and `status` write or delete that one file (through `durable`) and ask
`systemctl --user` or `launchctl` to start, stop or describe it. Nothing here prints: each returns what it did.
The unit's name carries a short hash of the vault's resolved path, so several vaults each have their own.
"""
from __future__ import annotations

import hashlib
import os
import plistlib
import shlex
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from .. import durable
from ..errors import UsageError

SYSTEMD = "systemd"
LAUNCHD = "launchd"
KINDS = {"linux": SYSTEMD, "darwin": LAUNCHD}  # sys.platform's name to the kind of unit written there
GUIDE = 'docs/owner-guide.md, "Running the watcher at login"'
RESTART_SECONDS = 30  # as the owner's guide wrote it by hand: a watcher that fails is started again this long after
TOOL_SECONDS = 30  # the longest a call of systemctl or launchctl may take
HASH_LENGTH = 10
# What a systemd command line may hold unquoted (systemd.service(5), "Command lines"); anything else is quoted.
_BARE = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./:=,+@")


@dataclass(frozen=True)
class Unit:
    """What `install` writes for one vault on one platform, and how the service tool names it."""

    kind: str  # SYSTEMD or LAUNCHD
    name: str  # the systemd unit's name, or the launchd agent's label
    path: Path  # the file
    data: bytes  # its content
    vault: Path
    logs: tuple[str, ...]  # where the watcher's output goes, said for the owner
    domain: str = ""  # launchd: the user's GUI domain, `gui/UID`

    def start_commands(self, rewritten: bool = False) -> list[list[str]]:
        """The calls that enable and start it (and, `rewritten`, make a running one take the new file)."""
        if self.kind == SYSTEMD:
            calls = [["systemctl", "--user", "daemon-reload"], ["systemctl", "--user", "enable", "--now", self.name]]
            return calls + ([["systemctl", "--user", "restart", self.name]] if rewritten else [])
        # `enable` first: an agent once disabled (`load -w`'s opposite) is not started by `bootstrap`
        return [["launchctl", "enable", f"{self.domain}/{self.name}"],
                ["launchctl", "bootstrap", self.domain, str(self.path)]]

    def stop_commands(self) -> list[list[str]]:
        if self.kind == SYSTEMD:
            return [["systemctl", "--user", "disable", "--now", self.name]]
        return [["launchctl", "bootout", f"{self.domain}/{self.name}"]]

    def start_line(self) -> str:
        """The start, as a line the owner can paste into a shell."""
        return " && ".join(shlex.join(call) for call in self.start_commands())

    def stop_line(self) -> str:
        """What stops it once its file is gone (systemd still knows a loaded unit, launchd a label)."""
        if self.kind == SYSTEMD:
            return " && ".join(shlex.join(["systemctl", "--user", verb, *([self.name] if verb == "stop" else [])])
                               for verb in ("stop", "daemon-reload"))
        return shlex.join(self.stop_commands()[0])

    @property
    def enabled_link(self) -> Path | None:
        """systemd: the link `enable` makes for `WantedBy=default.target`."""
        return self.path.parent / "default.target.wants" / self.name if self.kind == SYSTEMD else None


# -- the unit's text ------------------------------------------------------------------------------------

def unit_kind(platform: str) -> str:
    """SYSTEMD or LAUNCHD for `sys.platform`; a usage error (exit 2) anywhere else."""
    if platform.startswith("linux"):
        return SYSTEMD
    if platform in KINDS:
        return KINDS[platform]
    raise UsageError(f"vault-tools service supports Linux (systemd) and macOS (launchd), not {platform}; "
                     f"to run the watcher at login here, see {GUIDE}")


def vault_hash(vault: Path) -> str:
    """A short hash of the vault's resolved path: the same vault always gets the same one."""
    return hashlib.sha256(str(vault.resolve()).encode("utf-8", "surrogateescape")).hexdigest()[:HASH_LENGTH]


def systemd_specifiers(text: str) -> str:
    """`text` with no systemd specifier in it: `%` written `%%` (every setting expands them)."""
    return text.replace("%", "%%")


def systemd_escape(text: str) -> str:
    """`text` kept literal in a command line: `%` as `%%`, and `$` (a variable there) as `$$`."""
    return systemd_specifiers(text).replace("$", "$$")


def systemd_quote(argument: str) -> str:
    """One word of a systemd command line (systemd.service(5), "Command lines"): bare when it can be, else in
    double quotes with C escapes for `\\`, `"` and control characters; `%` and `$` doubled either way."""
    if argument and all(char in _BARE for char in argument):
        return systemd_escape(argument)
    escaped = []
    for char in argument:
        if char in '\\"':
            escaped.append("\\" + char)
        elif ord(char) < 0x20 or ord(char) == 0x7F:
            escaped.append(f"\\x{ord(char):02x}")
        else:
            escaped.append(char)
    return '"' + systemd_escape("".join(escaped)) + '"'


def watch_arguments(python: str, vault: Path) -> list[str]:
    """The watcher's command: this Python running vault-tools on the vault, by absolute paths."""
    return [python, "-m", "vault_tools", "watch", "--vault", str(vault)]


def _one_line(text: str) -> str:
    """`text` fit for one line of a unit file: no control character, no `\\` at its end (a continuation)."""
    return "".join(char if ord(char) >= 0x20 and ord(char) != 0x7F else "?" for char in text).rstrip("\\")


def systemd_unit_text(python: str, vault: Path) -> str:
    """The systemd user unit that runs the watcher on `vault` at login, restarted when it fails."""
    command = " ".join(systemd_quote(argument) for argument in watch_arguments(python, vault))
    return (
        "# Written by `vault-tools service install`; `vault-tools service remove` stops it and deletes this file.\n"
        "[Unit]\n"
        f"Description=vault-tools watcher for {systemd_specifiers(_one_line(str(vault)))}\n"
        "\n"
        "[Service]\n"
        f"ExecStart={command}\n"
        "Restart=on-failure\n"
        f"RestartSec={RESTART_SECONDS}\n"
        "\n"
        "[Install]\n"
        "WantedBy=default.target\n")


def launchd_plist(label: str, python: str, vault: Path, output: Path) -> bytes:
    """The launchd agent that runs the watcher on `vault` at login, started again when it fails."""
    agent = {
        "Label": label,
        "ProgramArguments": watch_arguments(python, vault),
        "RunAtLoad": True,
        "KeepAlive": {"SuccessfulExit": False},
        "ThrottleInterval": RESTART_SECONDS,
        "StandardOutPath": str(output),
        "StandardErrorPath": str(output),
    }
    return plistlib.dumps(agent, fmt=plistlib.FMT_XML, sort_keys=False)


def systemd_folder(home: Path, env: Mapping[str, str]) -> Path:
    """Where systemd reads a user's own units: `$XDG_CONFIG_HOME/systemd/user` (an absolute one), else
    `~/.config/systemd/user`."""
    config = env.get("XDG_CONFIG_HOME", "")
    base = Path(config) if config and os.path.isabs(config) else home / ".config"
    return base / "systemd" / "user"


def build_unit(platform: str, python: str, vault: Path, log: Path, home: Path, env: Mapping[str, str],
               uid: int = 0) -> Unit:
    """The unit `install` writes for `vault` on `platform` (`sys.platform`), running `python` (absolute);
    `log` is the watcher's own log file. A usage error on a platform with neither systemd nor launchd."""
    kind = unit_kind(platform)
    vault = vault.resolve()
    digest = vault_hash(vault)
    if kind == SYSTEMD:
        name = f"vault-tools-watch-{digest}.service"
        text = systemd_unit_text(python, vault)
        return Unit(SYSTEMD, name, systemd_folder(home, env) / name, text.encode("utf-8", "surrogateescape"),
                    vault, (str(log), f"journalctl --user -u {name}"))
    label = f"local.vault-tools.watch.{digest}"
    output = home / "Library" / "Logs" / f"vault-tools-watch-{digest}.log"
    return Unit(LAUNCHD, label, home / "Library" / "LaunchAgents" / f"{label}.plist",
                launchd_plist(label, python, vault, output), vault, (str(log), str(output)), f"gui/{uid}")


def this_vaults_unit(vault: Path, watch_log: Path) -> Unit:
    """The unit `vault-tools service install` writes for `vault` when run by this Python for this user
    (`watch_log`: the watcher's own log file); a usage error where there is neither systemd nor launchd."""
    return build_unit(sys.platform, os.path.abspath(sys.executable), vault, watch_log, Path.home(), os.environ,
                      os.getuid())


def watcher_unit_missing(vault: Path, watch_log: Path) -> bool:
    """Whether this system could run the watcher at login for `vault` and no unit for it is installed."""
    try:
        return not this_vaults_unit(vault, watch_log).path.exists()
    except UsageError:
        return False  # neither systemd nor launchd: nothing `service install` could do


# -- the service tools ----------------------------------------------------------------------------------

@dataclass(frozen=True)
class Call:
    """One run of systemctl or launchctl: whether it exited 0, whether it ran at all, its output, and what
    went wrong in one line."""

    ok: bool
    ran: bool  # False: the tool is missing, could not start or did not answer
    out: str
    problem: str  # empty when ok


def call(arguments: Sequence[str]) -> Call:
    """Run a service tool; a missing tool, a timeout or a non-zero exit is a `Call` that is not ok."""
    try:
        done = subprocess.run(list(arguments), capture_output=True, text=True, timeout=TOOL_SECONDS,
                              stdin=subprocess.DEVNULL, check=False)
    except FileNotFoundError:
        return Call(False, False, "", f"{arguments[0]} is not installed here")
    except subprocess.TimeoutExpired:
        return Call(False, False, "", f"`{shlex.join(arguments)}` did not answer in {TOOL_SECONDS} s")
    except OSError as error:
        return Call(False, False, "", f"{arguments[0]} could not run: {error.strerror or error}")
    if done.returncode == 0:
        return Call(True, True, done.stdout, "")
    said = " ".join((done.stderr.strip() or done.stdout.strip()).split())
    return Call(False, True, done.stdout, f"`{shlex.join(arguments)}` exited {done.returncode}"
                                          + (f": {said}" if said else ""))


def _run_all(calls: list[list[str]]) -> str:
    """Run the calls in order, stopping at the first that fails; its problem, or "" when all went well."""
    for arguments in calls:
        done = call(arguments)
        if not done.ok:
            return done.problem
    return ""


# -- install, remove, status ----------------------------------------------------------------------------

@dataclass(frozen=True)
class Installed:
    unit: Unit
    written: str  # "created", "rewritten" or "unchanged"
    started: bool | None  # None: not asked to start it
    problem: str = ""  # why it could not be started


def install(unit: Unit, start: bool = True) -> Installed:
    """Write the unit when it is missing or differs from `unit.data`, then (`start`) enable and start it."""
    try:
        before: bytes | None = unit.path.read_bytes()
    except FileNotFoundError:
        before = None
    written = "unchanged" if before == unit.data else ("created" if before is None else "rewritten")
    if written != "unchanged":
        durable.write_atomic(unit.path, unit.data)
    if not start:
        return Installed(unit, written, None)
    if unit.kind == LAUNCHD:
        loaded = call(["launchctl", "print", f"{unit.domain}/{unit.name}"]).ok
        if loaded and written == "unchanged":
            return Installed(unit, written, True)
        if loaded:  # launchd reads the file when it loads it: the old one is taken out first
            call(unit.stop_commands()[0])
    problem = _run_all(unit.start_commands(rewritten=written == "rewritten"))
    return Installed(unit, written, not problem, problem)


@dataclass(frozen=True)
class Removed:
    unit: Unit
    removed: bool  # False: nothing was installed
    stopped: bool | None  # None: nothing to stop
    problem: str = ""  # why it could not be stopped


def remove(unit: Unit) -> Removed:
    """Stop and disable the unit where the service tool answers, then delete its file (and systemd's link to
    it, when `disable` could not take it away)."""
    link = unit.enabled_link
    ours = link is not None and link.is_symlink() and Path(os.readlink(link)).name == unit.name
    if not unit.path.exists() and not ours:
        return Removed(unit, False, None)
    problem = ""
    if unit.kind == SYSTEMD:
        problem = _run_all(unit.stop_commands())
    else:
        loaded = call(["launchctl", "print", f"{unit.domain}/{unit.name}"])
        problem = _run_all(unit.stop_commands()) if loaded.ok or not loaded.ran else ""
    if link is not None and ours:
        link.unlink()
    unit.path.unlink(missing_ok=True)
    if unit.kind == SYSTEMD and not problem:
        call(["systemctl", "--user", "daemon-reload"])  # forget the unit now its file is gone
    return Removed(unit, True, not problem, problem)


@dataclass(frozen=True)
class Status:
    unit: Unit
    installed: bool
    up_to_date: bool | None  # None: not installed
    running: bool | None  # None: the service tool did not say
    state: str  # what the service tool said of it, or why it could not say


SYSTEMD_STATES = frozenset({"active", "reloading", "inactive", "failed", "activating", "deactivating",
                            "maintenance", "refreshing"})


def status(unit: Unit) -> Status:
    """Whether the unit is installed, the same as `install` would write, and running."""
    try:
        data: bytes | None = unit.path.read_bytes()
    except FileNotFoundError:
        data = None
    installed = data is not None
    up_to_date = data == unit.data if installed else None
    if unit.kind == SYSTEMD:
        done = call(["systemctl", "--user", "is-active", unit.name])
        state = done.out.strip()
        if state in SYSTEMD_STATES:  # `is-active` exits 3 for any state but active
            return Status(unit, installed, up_to_date, state == "active", state)
        return Status(unit, installed, up_to_date, None, done.problem or state)
    done = call(["launchctl", "print", f"{unit.domain}/{unit.name}"])
    if done.ok:
        states = [line.split("=", 1)[1].strip() for line in done.out.splitlines()
                  if line.strip().startswith("state =")]
        state = states[0] if states else "loaded"
        return Status(unit, installed, up_to_date, state == "running", state)
    if not done.ran:
        return Status(unit, installed, up_to_date, None, done.problem)
    return Status(unit, installed, up_to_date, False, "not loaded")
