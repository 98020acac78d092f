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


_EDITORS = {"vim", "vi", "nvim", "ex", "ed"}  # run on files without a screen (`vim -es`, `ed file`): they write them


_MAX_LISTED = 5000  # files of a copied folder or an archive judged one by one (the tripwire checks the rest)


_DURATION = re.compile(r"^\d+(\.\d+)?[smhd]?$")


_ANSI_C = re.compile(r"\$'((?:[^'\\]|\\.)*)'")  # bash's $'...': backslash escapes inside
_LOCALE = re.compile(r'\$"')  # bash's $"...": a translated string, the text as written where none is installed


def _plain_quoting(command: str) -> str:
    """`command` with bash's ANSI-C quoting (`$'Decisions'`, `$'\x44ecisions'`) and locale quoting (`$"Decisions"`)
    written as plain single and double quotes, as the shell reads them."""
    def decoded(found: re.Match[str]) -> str:
        try:
            text = found.group(1).encode("latin-1", "backslashreplace").decode("unicode_escape")
        except (UnicodeDecodeError, ValueError):
            text = found.group(1)
        return shlex.quote(text)
    return _LOCALE.sub('"', _ANSI_C.sub(decoded, command))


def bash_write_targets(command: str, cwd: Path, depth: int = 0) -> list[Target]:
    """The files and folders a shell command plainly writes, removes or moves."""
    command = _plain_quoting(command)
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
    loops: dict[str, list[str]] = {}  # a `for` variable -> the words it takes
    for token in [*tokens, ";"]:
        if redirect:
            targets += [t for word in _substituted([token], loops) for t in _expanded(word, here, whole=False,
                                                                                    text=True)]
            redirect = False
        elif token and set(token) <= set(_PUNCTUATION):
            if ">" in token:
                redirect = not token.endswith("&")  # `>&2` duplicates a descriptor
            elif set(token) <= {"<"}:
                words.append(token)  # what a command reads: not a command of its own
            else:
                if len(words) >= 3 and words[0] == "for" and words[2] == "in":
                    loops[words[1]] = words[3:]
                else:
                    if words and words[0] == "done":
                        found, here = _command_targets(_substituted(words, loops), here, depth)
                        targets += found
                        loops = {}  # the loop is over: its variable is any word again
                        words = []
                        continue
                    found, here = _command_targets(_substituted(words, loops), here, depth)
                    targets += found
                words = []
        else:
            words.append(token)
    return targets


def _substituted(words: list[str], loops: dict[str, list[str]]) -> list[str]:
    """`words` with each `$name` or `${name}` of a `for` loop's variable replaced by every word the loop gives it
    (`for f in Decisions/*; do rm "$f"; done` removes every note)."""
    if not loops:
        return words
    found = []
    for word in words:
        name = word[2:-1] if word.startswith("${") and word.endswith("}") else word[1:] if word.startswith("$") else ""
        found += loops.get(name, [word]) if name else [word]
    return found


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
    if name in ("tar", "bsdtar", "gtar", "unzip"):
        return _archive_targets(name, args, cwd), cwd
    if name == "patch":
        return _patch_targets(args, cwd), cwd
    if name in _EDITORS and (name in ("ed", "ex") or any(arg in ("-e", "-s", "-es", "-E", "-Es") for arg in args)
                             or any(arg.startswith("+") for arg in args)):
        return each([arg for arg in plain if not arg.startswith("+")], False, text=True), cwd
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
    forced = any(arg in ("-f", "--force", "--discard-changes") for arg in options)
    if sub in ("checkout", "switch") and forced:
        return everything  # throws away what the work tree holds since the last commit
    if sub == "read-tree" and any(arg in ("-u", "--reset") for arg in options):
        return everything
    if sub == "apply" and not any(arg in ("--check", "--stat", "--numstat", "--summary", "--cached") for arg in options):
        strip = next((arg[2:] for arg in options if arg.startswith("-p") and arg[2:].isdigit()), "1")
        return [target for patch in paths for target in _patched(patch, where, strip)]  # from stdin: unread
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
    recursive = name == "rsync" or any(arg in ("-r", "-R", "--recursive", "-a", "--archive") or (
        arg.startswith("-") and not arg.startswith("--") and set(arg[1:]) & set("rRa")) for arg in args)
    for source in sources:
        if recursive and os.path.isdir(os.path.join(cwd, os.path.expanduser(source))):
            found += _tree_targets(name, source, directory, destination[0].path, cwd)
            continue
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


def _tree_targets(name: str, source: str, directory: str, into: str, cwd: Path) -> list[Target]:
    """Each file a recursive copy of the folder `source` brings, where it lands: into `into` itself for `SRC/.`
    (and, for rsync, `SRC/`), else into `into/<the folder's name>` (into `into` when that folder does not exist
    and one folder is copied by cp: then it becomes that folder)."""
    folder = Path(os.path.normpath(os.path.join(cwd, os.path.expanduser(source))))
    contents = source.endswith(("/.", "/./")) or (name == "rsync" and source.endswith("/"))
    landing = Path(into) if contents or not os.path.isdir(into) else Path(into) / folder.name
    found: list[Target] = []
    for where, folders, files in os.walk(folder):
        folders[:] = [each for each in folders if each != ".git"]
        for file in files:
            if len(found) >= _MAX_LISTED:
                return found  # the first files judged; what the rest did is checked afterwards (`tripwire`)
            path = Path(where) / file
            landed = landing / path.relative_to(folder)
            found.append(Target(os.path.join(directory, str(landed.relative_to(into))) if landed != Path(into)
                                else directory, str(landed), False, source=str(path)))
    return found


_CLUSTER = re.compile(r"-?[A-Za-z]+")  # tar's bundled letters: `xzf`, `-xvf`


def _archive_targets(name: str, args: list[str], cwd: Path) -> list[Target]:
    """The files a `tar -x` or `unzip` extracts, where they land (`-C DIR`, `-d DIR`): read from the archive's
    list of members; an archive that cannot be read counts as writing its whole destination."""
    from .archives import member_names  # only for a command that extracts an archive

    def value_of(*options: str) -> str | None:
        return next((args[i + 1] for i, arg in enumerate(args[:-1]) if arg in options), None)

    if name == "unzip":
        if any(arg in ("-l", "-t", "-v", "-Z") for arg in args):
            return []  # lists or tests, writes nothing
        into = value_of("-d") or "."
        archive = next((arg for arg in args if not arg.startswith("-") and arg != into), None)
    else:
        clusters = [(i, arg) for i, arg in enumerate(args) if _CLUSTER.fullmatch(arg) and not arg.startswith("--")
                    and (i == 0 or arg.startswith("-"))]
        if not any("x" in arg for _, arg in clusters) and "--extract" not in args and "--get" not in args:
            return []
        into = value_of("-C", "--directory") or "."
        archive = value_of("-f", "--file") or next((args[i + 1] for i, arg in clusters
                                                    if "f" in arg and i + 1 < len(args)), None)
    destination = Path(os.path.normpath(cwd / os.path.expanduser(into)))
    members = member_names(cwd / os.path.expanduser(archive or ""), zipped=name == "unzip", most=_MAX_LISTED)
    if members is None or len(members) > _MAX_LISTED:
        return []  # an archive not there yet (a download before it), from a pipe or too large: checked afterwards
    return [Target(os.path.join(into, member), os.path.normpath(destination / member), False) for member in members]


def _patch_targets(args: list[str], cwd: Path) -> list[Target]:
    """The files `patch` changes, read from the patch (`-i FILE`, `< FILE`) in `-d DIR`, or the file it is given;
    a patch that cannot be read counts as writing the whole folder it works in."""
    strip = next((arg[2:] for arg in args if arg.startswith("-p") and arg[2:].isdigit()), "0")
    folder = next((args[i + 1] for i, arg in enumerate(args[:-1]) if arg in ("-d", "--directory")), ".")
    where = Path(os.path.normpath(cwd / folder))
    patch = next((args[i + 1] for i, arg in enumerate(args[:-1]) if arg in ("-i", "--input", "<")), None) or \
        next((arg.split("=", 1)[1] for arg in args if arg.startswith("--input=")), None)
    named = [arg for arg in args if not arg.startswith("-") and arg not in (patch, "<", folder)]
    if named:  # `patch FILE < fix.diff`: the one file it changes
        return _expanded(named[0], where, whole=False, text=True)
    return _patched(patch, where, strip) if patch else []  # a patch from a pipe or a heredoc: unread


def _patched(patch: str, where: Path, strip: str) -> list[Target]:
    """The files a unified diff names (`--- ` and `+++ ` lines), `strip` leading folders off, under `where`."""
    try:
        with open(where / os.path.expanduser(patch), encoding="utf-8", errors="replace") as handle:
            lines = handle.read(1 << 22).splitlines()
    except OSError:
        return []  # not there yet, or not a file: what it did is checked afterwards (`tripwire`)
    found = []
    for line in lines:
        if line.startswith(("+++ ", "--- ")):
            named = line[4:].split("\t")[0].strip()
            if named == "/dev/null":
                continue
            parts = named.split("/")[int(strip) if strip.isdigit() else 0:]
            if parts:
                rel = "/".join(parts)
                found.append(Target(rel, os.path.normpath(where / rel), False, text=True))
    return found


_BRACES = re.compile(r"\{([^{}]*,[^{}]*)\}")
_MAX_WORDS = 256  # words a brace expansion is followed to


def braces(word: str) -> list[str]:
    """`word` with bash's brace expansion done (`{Decisions,x}` is two words, `Decisions{,}` twice one)."""
    found: list[str] = [word]
    done: list[str] = []
    while found and len(done) + len(found) <= _MAX_WORDS:
        current = found.pop(0)
        match = _BRACES.search(current)
        if match is None:
            done.append(current)
            continue
        found += [current[:match.start()] + part + current[match.end():] for part in match.group(1).split(",")]
    return done + found


def _expanded(word: str, cwd: Path, *, whole: bool, text: bool = False) -> list[Target]:
    """`word` as the shell would pass it: braces expanded, a glob made into the paths it matches (none: the word
    itself)."""
    if "{" in word and "," in word:
        return [target for each in dict.fromkeys(braces(word)) for target in _expanded_one(each, cwd, whole=whole,
                                                                                           text=text)]
    return _expanded_one(word, cwd, whole=whole, text=text)


def _expanded_one(word: str, cwd: Path, *, whole: bool, text: bool = False) -> list[Target]:
    typed = os.path.expanduser(word)
    if _GLOB_CHARS & set(typed):
        matches = sorted(glob.glob(typed, root_dir=None if os.path.isabs(typed) else cwd, recursive=True))
        if matches:
            return [Target(match, os.path.normpath(os.path.join(cwd, match)), whole, text=text) for match in matches]
    return [Target(word, os.path.normpath(os.path.join(cwd, typed)), whole, text=text)]
