"""What a shell command plainly writes: the files and folders it writes, truncates, moves or removes.

Not a shell: it reads a command as the agent sent it (several lines, `if`/`for` bodies, runners such as
`sudo -u me` or `timeout 5`, `cd`, `sh -c` scripts, git's commands that put back or throw away, `find -delete`),
expands globs as the shell would, and misses what it cannot see (a variable, a script, `xargs` fed from a
pipe). `guard` judges what it finds.
"""
from __future__ import annotations

import glob
import os
import re
import shlex
from pathlib import Path
from typing import NamedTuple

_GLOB_CHARS = set("*?[")


class Target(NamedTuple):
    """A path a command writes: as typed, as an absolute path, and whether the command removes or moves
    everything under it when it is a folder."""

    shown: str
    path: str
    whole: bool
    source: str | None = None  # the file a copy or move brings to `path`, whose text is judged too
    text: bool = False  # the command writes text of its own there (a redirection, tee, sed -i)
    names: tuple[str, ...] = ()  # `find -name` patterns: only files so named count under a folder


_PUNCTUATION = ";&|<>()\n"


_REMOVING = {"rm", "unlink", "shred", "truncate"}  # every plain argument is written or removed whole


_KEYWORDS = {"if", "then", "else", "elif", "do", "while", "until", "{", "!", "fi", "done", "}", "esac"}


_PREFIXES = {"sudo", "doas", "command", "builtin", "env", "nohup", "time", "exec", "xargs", "nice", "ionice",
             "timeout", "eval", "stdbuf", "chronic", "caffeinate"}


_PREFIX_VALUES = {"-u", "-g", "-n", "-c", "-C", "-s", "-k", "-i", "-o", "-e", "--signal", "--kill-after", "--user"}


_SHELLS = {"sh", "bash", "zsh", "dash", "ksh", "fish"}


_MOVING = {"mv", "cp", "install", "ln", "rsync"}


_FIND_EXEC = {"-exec", "-execdir", "-ok", "-okdir"}


_DURATION = re.compile(r"^\d+(\.\d+)?[smhd]?$")


def bash_write_targets(command: str, cwd: Path, depth: int = 0) -> list[Target]:
    """The files and folders a shell command plainly writes, removes or moves."""
    try:
        lexer = shlex.shlex(command, posix=True, punctuation_chars=_PUNCTUATION)
        lexer.whitespace = " \t\r"
        lexer.whitespace_split = True
        lexer.commenters = ""
        tokens = list(lexer)
    except ValueError:
        tokens = command.replace("\n", " ; ").split()
    targets: list[Target] = []
    words: list[str] = []
    redirect = False
    here = cwd
    for token in [*tokens, ";"]:
        if redirect:
            targets += _expanded(token, here, whole=False, text=True)
            redirect = False
        elif token and set(token) <= set(_PUNCTUATION):
            if ">" in token:
                redirect = not token.endswith("&")  # `>&2` duplicates a descriptor
            elif set(token) <= {"<"}:
                words.append(token)  # what a command reads: not a command of its own
            else:
                found, here = _command_targets(words, here, depth)
                targets += found
                words = []
        else:
            words.append(token)
    return targets


def _strip_prefixes(words: list[str]) -> list[str]:
    """The command a line runs, past assignments, keywords (`then`, `do`, `!`) and runners (`sudo -u me`,
    `timeout 5`, `nice -n 5`, `env A=1`, `xargs -0`)."""
    while words:
        first = words[0].lstrip("`")
        if first in _KEYWORDS or ("=" in first and not first.startswith("-") and first.split("=")[0].isidentifier()):
            words = words[1:]
        elif first in _PREFIXES:
            words = words[1:]
            while words and words[0].startswith("-"):
                words = words[2:] if words[0] in _PREFIX_VALUES and len(words) > 1 else words[1:]
            if first == "timeout" and words and _DURATION.match(words[0]):
                words = words[1:]
        else:
            break
    return words


def _command_targets(words: list[str], cwd: Path, depth: int) -> tuple[list[Target], Path]:
    """What one simple command writes, and the folder the next one runs in."""
    words = _strip_prefixes(words)
    if not words:
        return [], cwd
    name, args = os.path.basename(words[0].lstrip("`$(")), words[1:]
    plain = [arg for arg in args if not arg.startswith("-")]

    def each(items: list[str], whole: bool, *, text: bool = False) -> list[Target]:
        return [target for item in items for target in _expanded(item, cwd, whole=whole, text=text)]

    if name in ("cd", "pushd"):
        if not plain:
            return [], Path.home() if name == "cd" else cwd
        if plain[0] == "-":
            return [], cwd  # the folder before: not known here; judged where it is
        return [], Path(os.path.normpath(cwd / os.path.expanduser(plain[0])))
    if name in _SHELLS and depth < 3:
        flag = next((i for i, arg in enumerate(args) if arg.startswith("-") and not arg.startswith("--")
                     and "c" in arg), None)
        if flag is not None and flag + 1 < len(args):
            return bash_write_targets(args[flag + 1], cwd, depth + 1), cwd
        return [], cwd
    if name in _REMOVING:
        return each(plain, True), cwd
    if name == "tee":
        return each(plain, False, text=True), cwd
    if name in ("sed", "perl") and any(_in_place(arg, name) for arg in args):
        scripted = any(arg in ("-e", "-f", "--expression", "--file") or (arg.startswith("-") and arg.endswith("e")
                                                                         and name == "perl") for arg in args)
        return each(plain if scripted else plain[1:], False, text=True), cwd
    if name in ("awk", "gawk") and "inplace" in args:
        return each([arg for arg in plain[1:] if arg != "inplace"], False, text=True), cwd
    if name == "sort":
        output = [args[i + 1] for i, arg in enumerate(args[:-1]) if arg == "-o"]
        output += [arg.split("=", 1)[1] for arg in args if arg.startswith("--output=")]
        return each(output, False), cwd
    if name == "dd":
        return each([arg[3:] for arg in args if arg.startswith("of=")], False), cwd
    if name == "git":
        return _git_targets(args, cwd), cwd
    if name == "find":
        return _find_targets(args, cwd), cwd
    if name in _MOVING:
        return _moving_targets(name, args, plain, cwd), cwd
    return [], cwd


def _in_place(arg: str, name: str) -> bool:
    if arg == "--in-place" or arg.startswith("--in-place="):
        return True
    if not arg.startswith("-") or arg.startswith("--"):
        return False
    if name == "perl" and arg[1:2] in ("M", "m", "I"):
        return False  # -Mstrict, -Ilib: a module or a folder, not flags
    return "i" in arg[1:]


def _git_targets(args: list[str], cwd: Path) -> list[Target]:
    """What a git command writes in the work tree: `rm`, `mv`, and what `checkout`, `restore`, `stash`,
    `reset --hard` and `clean -f` put back or throw away."""
    where = cwd
    rest = list(args)
    while rest and rest[0].startswith("-"):
        option = rest.pop(0)
        if option in ("-C", "-c", "--git-dir", "--work-tree") and rest:
            value = rest.pop(0)
            if option == "-C":
                where = Path(os.path.normpath(where / os.path.expanduser(value)))
    if not rest:
        return []
    sub, options = rest[0], rest[1:]
    paths = [arg for arg in options if not arg.startswith("-")]
    after_dashes = options[options.index("--") + 1:] if "--" in options else None

    def each(items: list[str]) -> list[Target]:
        return [target for item in items for target in _expanded(item, where, whole=True)]

    everything = each(["."])
    if sub == "rm":
        return [] if "--cached" in options else each(paths)
    if sub == "mv":
        return each(paths)
    if sub == "checkout":
        if after_dashes is not None:
            return each(after_dashes)
        return each([arg for arg in paths if os.path.exists(os.path.join(where, arg))])
    if sub == "restore":
        if "--staged" in options and not any(arg in ("--worktree", "-W") for arg in options):
            return []
        return each(after_dashes if after_dashes is not None else paths)
    if sub == "stash":
        action = paths[0] if paths else "push"
        if action in ("list", "show", "branch", "create", "store"):
            return []
        return everything
    if sub == "reset":
        return everything if any(arg in ("--hard", "--merge", "--keep") for arg in options) else []
    if sub == "clean":
        if not any(arg.startswith("-") and not arg.startswith("--") and "f" in arg for arg in options) and \
                "--force" not in options:
            return []
        return each(paths) if paths else everything
    return []


def _find_targets(args: list[str], cwd: Path) -> list[Target]:
    """The folders `find` searches, when it deletes what it finds or runs a writing command on it; only the
    files its `-name`/`-iname` patterns match count."""
    roots = []
    for arg in args:
        if arg.startswith("-") or arg in ("(", "!"):
            break
        roots.append(arg)
    names = tuple(args[i + 1] for i, arg in enumerate(args[:-1]) if arg in ("-name", "-iname"))
    writes = "-delete" in args
    for i, arg in enumerate(args):
        if arg in _FIND_EXEC and i + 1 < len(args):
            end = next((j for j in range(i + 1, len(args)) if args[j] in (";", "+", "\\;")), len(args))
            run = [word if word != "{}" else "found.md" for word in args[i + 1:end]]
            writes |= bool(_command_targets(run, cwd, 3)[0])
    if not writes:
        return []
    return [Target(t.shown, t.path, True, names=names) for root in (roots or ["."])
            for t in _expanded(root, cwd, whole=True)]


def _moving_targets(name: str, args: list[str], plain: list[str], cwd: Path) -> list[Target]:
    directory = next((args[i + 1] for i, arg in enumerate(args[:-1]) if arg in ("-t", "--target-directory")), None)
    sources = [arg for arg in plain if arg != directory]
    if directory is None and len(sources) >= 2:
        directory, sources = sources[-1], sources[:-1]
    if directory is None:
        return []
    destination = _expanded(directory, cwd, whole=name == "rsync" and "--delete" in args)
    found = list(destination)
    for source in sources:
        for brought in _expanded(source, cwd, whole=False):
            into = os.path.join(destination[0].path, os.path.basename(brought.path.rstrip("/")))
            found.append(Target(os.path.join(directory, os.path.basename(brought.shown.rstrip("/"))), into, False,
                                source=brought.path))
            if destination[0].path and not os.path.isdir(destination[0].path):
                found.append(destination[0]._replace(source=brought.path))
    if name == "mv":
        found += [target for source in sources for target in _expanded(source, cwd, whole=True)]
    if name == "ln" and not any(arg.startswith("-") and "s" in arg.lstrip("-")[:4] for arg in args
                                if not arg.startswith("--")) and "--symbolic" not in args:
        found += [target for source in sources for target in _expanded(source, cwd, whole=False)]  # a hard link
    return found


def _expanded(word: str, cwd: Path, *, whole: bool, text: bool = False) -> list[Target]:
    """`word` as the shell would pass it: a glob made into the paths it matches (none: the word itself)."""
    typed = os.path.expanduser(word)
    if _GLOB_CHARS & set(typed):
        matches = sorted(glob.glob(typed, root_dir=None if os.path.isabs(typed) else cwd, recursive=True))
        if matches:
            return [Target(match, os.path.normpath(os.path.join(cwd, match)), whole, text=text) for match in matches]
    return [Target(word, os.path.normpath(os.path.join(cwd, typed)), whole, text=text)]
