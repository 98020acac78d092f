"""Checks of the values a caller typed, made before anything is read or written."""
from __future__ import annotations

from collections.abc import Iterable

from ..cjk import text_size
from ..errors import UsageError
from ..model import (
    ID_PATTERN,
    MAX_SUMMARY,
    MAX_TEXT,
    MAX_TOPIC_CHARS,
    MAX_TOPICS,
    MIN_TEXT,
    TERM_KEY_PATTERN,
    TERM_PREFIX,
    TOPIC_PATTERN,
)


def check_id(value: str) -> str:
    value = value.strip()
    if value[:2].lower() == "d-":  # typed in lower case: ids are `D-` and a lower-case clone tag
        value = "D-" + value[2:].lower()
    if not ID_PATTERN.match(value):
        raise UsageError(f"{value!r} is not a decision id (like D-0007 or D-0007-k7q2)")
    return value


def check_name(value: str | None) -> str | None:
    """Who is recording something (`--by`): one short line."""
    if value is None:
        return None
    value = value.strip()
    if not value or "\n" in value or "\r" in value or len(value) > 100:
        raise UsageError(f"--by must be a name on one line (at most 100 characters): {value!r}")
    return value


def check_topics(topics: Iterable[str]) -> tuple[str, ...]:
    found = tuple(dict.fromkeys(topic.strip() for topic in topics))  # in order, each once
    if not found:
        raise UsageError("give at least one --topic")
    if len(found) > MAX_TOPICS:
        raise UsageError(f"give at most {MAX_TOPICS} topics ({len(found)} given)")
    for topic in found:
        if not TOPIC_PATTERN.match(topic):
            raise UsageError(f"topic {topic!r} is not a kebab-case key (like article-footer)")
        if len(topic) > MAX_TOPIC_CHARS:
            raise UsageError(f"topic {topic[:20]!r}... is over {MAX_TOPIC_CHARS} characters")
    return found


def check_text(name: str, value: str | None, *, required: bool = False) -> str | None:
    if value is None:
        if required:
            raise UsageError(f"{name} is required")
        return None
    value = value.strip()
    if "\n" in value or "\r" in value:
        raise UsageError(f"{name} must be one line")
    if text_size(value) < MIN_TEXT:
        raise UsageError(f"{name} must be at least {MIN_TEXT} characters ({text_size(value)} given, a Chinese, Japanese "
                         f"or Korean character counting two): {value!r}")
    most = MAX_SUMMARY if name == "summary" else MAX_TEXT
    if len(value) > most:
        raise UsageError(f"{name} must be at most {most:,} characters ({len(value):,} given)")
    return value


def parse_terms(option: str, given: Iterable[str]) -> dict[str, str]:
    """`KEY=VALUE` pairs (a term's key may be given with or without `term_`), refused when malformed."""
    terms: dict[str, str] = {}
    for item in given:
        key, equals, value = item.partition("=")
        key = key.strip().removeprefix(TERM_PREFIX)
        if not equals or not TERM_KEY_PATTERN.match(key) or not value.strip():
            raise UsageError(f"{option} {item!r}: expected KEY=VALUE with a lowercase key like budget=500")
        if key in terms:
            raise UsageError(f"{option}: {key} is given twice")
        terms[key] = value.strip()
    return terms
