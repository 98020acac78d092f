"""`vault-tools/topics.yaml`: topics the owner merged, each alias read as its topic.

```yaml
article-footer: [footer-contents, post-footer]
```

Notes keep the spelling they were written with (a sealed note never changes); every comparison of
topics (`ask`, `lookup`, `lint`, `context`) reads an alias as its topic, through `topics.topic_key`.
Only `review --apply` writes the file, keeping the owner's comments and order.
"""
from __future__ import annotations

import io
from pathlib import Path
from typing import Any

from . import durable
from .errors import ConfigError
from .model import TOPIC_PATTERN
from .record_files import TOPICS_FILE, remember_settings

# Imports inside functions: ruamel.yaml is loaded only when the owner has merged topics (most vaults have none).

HEADER = ("# Topics merged by the owner: each alias is read as its topic by ask, lookup, lint and context.\n"
          "# topic: [alias, ...]\n")


def shown(path: Path) -> str:
    """The topics file as messages name it: in its record folder (`vault-tools/`, or `.vault-tools/` in a vault set
    up before the shared layout)."""
    return f"{path.parent.name}/{path.name}"


def _load_yaml(path: Path) -> Any:
    try:
        text = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        return None  # the usual case: nothing merged, and ruamel.yaml not even imported
    except (UnicodeDecodeError, OSError) as exc:
        raise ConfigError(f"cannot read: {exc}", path=shown(path)) from None
    from ruamel.yaml import YAML
    from ruamel.yaml.error import MarkedYAMLError, YAMLError

    try:
        return YAML(typ="rt").load(text)
    except MarkedYAMLError as exc:
        line = exc.problem_mark.line + 1 if exc.problem_mark else None
        raise ConfigError(f"invalid YAML: {exc.problem}", path=shown(path), line=line) from None
    except YAMLError as exc:
        raise ConfigError(f"cannot read: {exc}", path=shown(path)) from None


# docs/design/0012-topic-matching.md
def load_aliases(state_dir: Path) -> dict[str, str]:
    """Every alias -> its topic; a missing file is no aliases. A bad file is a one-line error naming its line."""
    path = state_dir / TOPICS_FILE
    data = _load_yaml(path)
    if data is None:
        return {}
    if not isinstance(data, dict) or not hasattr(data, "lc"):  # ruamel's CommentedMap: a mapping with its lines
        raise ConfigError("must map each topic to a list of its aliases", path=shown(path))
    found: dict[str, str] = {}
    for topic, aliases in data.items():
        line = data.lc.key(topic)[0] + 1
        if not isinstance(topic, str) or not TOPIC_PATTERN.match(topic):
            raise ConfigError(f"{topic!r} is not a kebab-case topic (like article-footer)", path=shown(path), line=line)
        if isinstance(aliases, str):
            aliases = [aliases]
        if not isinstance(aliases, list):
            raise ConfigError(f"{topic}: aliases must be a list of topics", path=shown(path), line=line)
        for alias in aliases:
            if not isinstance(alias, str) or not TOPIC_PATTERN.match(alias):
                raise ConfigError(f"{topic}: alias {alias!r} is not a kebab-case topic", path=shown(path), line=line)
            if alias == topic:
                continue
            if alias in found and found[alias] != topic:
                raise ConfigError(f"{alias} is an alias of both {found[alias]} and {topic}", path=shown(path), line=line)
            found[alias] = topic
    for alias, topic in found.items():
        if topic in found:
            raise ConfigError(f"{topic} is itself an alias (of {found[topic]}); list {alias} under {found[topic]}",
                              path=shown(path), line=data.lc.key(topic)[0] + 1)
    return found


def add_alias(state_dir: Path, topic: str, alias: str) -> bool:
    """Merge `alias` into `topic` (and whatever was merged into `alias` before). False if it already was."""
    from ruamel.yaml import YAML
    from ruamel.yaml.comments import CommentedMap, CommentedSeq

    path = state_dir / TOPICS_FILE
    known = load_aliases(state_dir)
    topic = known.get(topic, topic)
    if known.get(alias) == topic or alias == topic:
        return False
    data = _load_yaml(path)
    if data is None:
        data = CommentedMap()
    moved = [old for old, target in known.items() if target == alias]
    if alias in data:
        del data[alias]
    existing = data.get(topic)
    listed = list(existing) if isinstance(existing, list) else ([existing] if isinstance(existing, str) else [])
    for name in (alias, *moved):
        if name not in listed:
            listed.append(name)
    data[topic] = CommentedSeq(listed)
    data[topic].fa.set_flow_style()
    out = io.StringIO()
    yaml = YAML(typ="rt")
    yaml.width = 4096
    yaml.dump(data, out)
    text = out.getvalue()
    if not path.exists():
        text = HEADER + text
    durable.write_atomic(path, text.encode("utf-8"))
    remember_settings(state_dir.parent, None)  # vault-tools' own write: the tripwire does not take it back
    return True
