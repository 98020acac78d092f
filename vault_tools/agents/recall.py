"""Which current rulings and open questions a piece of text (a question, an owner's message) touches.

One function, `touching`, so a better matcher (the search index) can replace it. Today it compares
words: a ruling is touched when the text holds every word of a topic it settles (plural or
singular, any order), a near spelling of one of its topics, or most of its summary's words; for an
owner's message, which only adds context, one word of a topic is enough.
"""
from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from ..cjk import content_pairs
from ..topics import topic_key, topics_match
from .snapshot import QuestionView, RulingView

_WORD = re.compile(r"[^\W_]+")
# Words too common to say what a text is about.
STOPWORDS = frozenset(["a", "about", "above", "after", "again", "all", "also", "am", "an", "and", "any", "are", "as", "at", "be", "because", "been", "before", "being", "below", "between", "both", "but", "by", "can", "could", "did", "do", "does", "doing", "done", "down", "during", "each", "every", "few", "for", "from", "further", "had", "has", "have", "having", "he", "her", "here", "hers", "him", "his", "how", "i", "if", "in", "into", "is", "it", "its", "just", "me", "more", "most", "my", "no", "nor", "not", "now", "of", "off", "on", "once", "only", "or", "other", "our", "out", "over", "own", "same", "she", "should", "so", "some", "such", "than", "that", "the", "their", "them", "then", "there", "these", "they", "this", "those", "through", "to", "too", "under", "until", "up", "very", "was", "we", "were", "what", "when", "where", "which", "while", "who", "whom", "why", "will", "with", "would", "yes", "you", "your", "still", "said", "say", "says"])
MIN_WORD = 3
MAX_LOOSE = 5  # an owner's message gets at most this many rulings added


@dataclass(frozen=True)
class Touch:
    item: RulingView | QuestionView
    why: str  # "topic article-footer", "near topic article-footer", "its summary"
    topic: str  # the topic it was touched on (its first topic when touched through its summary)


def words(text: str) -> list[str]:
    """Lowercased words, each in its singular form (`footers` -> `footer`)."""
    return [topic_key(word) for word in _WORD.findall(text.lower())]


def _content(found: Sequence[str]) -> set[str]:
    return {word for word in found if len(word) >= MIN_WORD and word not in STOPWORDS}


def _cjk_content(text: str) -> set[str]:
    """The character pairs of a text's Chinese, Japanese and Korean runs that say something of the matter."""
    return set(content_pairs(text))


def _cjk_touch(here: set[str], summary: str) -> bool:
    """The message shares enough of the summary's pairs: three at least, and a third of the summary's or
    two fifths of the message's."""
    if not here:
        return False
    theirs = _cjk_content(summary)
    shared = len(theirs & here)
    return shared >= 3 and (shared * 3 >= len(theirs) or shared * 5 >= len(here) * 2)


def touching(text: str, items: Sequence[RulingView | QuestionView], *, strict: bool) -> list[Touch]:
    """The items the text touches, best first. `strict` (a question about to be put to the owner):
    a whole topic, a near topic, or most of the summary. Not strict (the owner's own message): any
    word of a topic counts too, and at most `MAX_LOOSE` are returned."""
    found_words = words(text)
    present = set(found_words)
    content = _content(found_words)
    cjk_here = _cjk_content(text)
    phrases = {n: {"-".join(found_words[i:i + n]) for i in range(len(found_words) - n + 1)} for n in (1, 2, 3)}
    scored: list[tuple[int, int, Touch]] = []
    for order, item in enumerate(items):
        best: tuple[int, str, str] | None = None
        for topic in item.topics:
            key_words = topic_key(topic).split("-")
            topic_words = set(key_words)
            if topic_words <= present:
                best = max(best or (0, "", ""), (3, f"topic {topic}", topic))
            elif (len(key_words) == 1 or topic_words & present) and any(
                    topics_match(phrase, topic) for phrase in phrases.get(len(key_words), ())):
                best = max(best or (0, "", ""), (2, f"near topic {topic}", topic))
            elif not strict and topic_words & content:
                shared = ", ".join(sorted(topic_words & content))
                best = max(best or (0, "", ""), (1, f"{shared} (topic {topic})", topic))
        summary = _content(words(item.summary))
        overlap = summary & content
        if (summary and len(overlap) >= 3 and len(overlap) * 2 >= len(summary)) or _cjk_touch(cjk_here, item.summary):
            best = max(best or (0, "", ""), (2, "its summary", item.topics[0] if item.topics else "TOPIC"))
        if best is not None:
            scored.append((best[0], -order, Touch(item, best[1], best[2])))
    scored.sort(key=lambda entry: (entry[0], entry[1]), reverse=True)
    found = [touch for _, _, touch in scored]
    return found if strict else found[:MAX_LOOSE]
