"""Words inside Chinese, Japanese and Korean text, for the readers that match words (search, the same-matter check,
the hooks).

These scripts do not put spaces between words (Korean does, but hangs particles on them: 택배는), so a run of
their characters is one "word" to a tokenizer that splits on spaces, and no word inside a sentence is ever
found. As Lucene's CJK analyzer does, a run is read as its overlapping pairs of characters (bigrams): `謝礼を支払う`
is 謝礼 礼を を支 支払 払う, so a word of two characters or more is found as the sequence of its pairs. Pure: text in,
pairs out. The choice and how it was measured: docs/design/0041-words-inside-cjk-text.md.
"""
from __future__ import annotations

import re
from functools import cache

# Han (with extension A and compatibility), kana (with the prolonged sound mark and half-width katakana), Hangul
_RUN = "[\u3040-\u30ff\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff66-\uff9f\u1100-\u11ff\u3130-\u318f\uac00-\ud7af]+"
_HANGUL = "[\u1100-\u11ff\u3130-\u318f\uac00-\ud7af]"


@cache
def _pattern(source: str) -> re.Pattern[str]:
    """Compiled when first needed: these character classes take 2-4 ms to compile, which every command would
    pay at start-up, and a process that meets no CJK text (nothing but ASCII, most of them) never needs."""
    return re.compile(source)


def has_cjk(text: str) -> bool:
    return not text.isascii() and _pattern(_RUN).search(text) is not None


def runs(text: str) -> list[str]:
    return _pattern(_RUN).findall(text) if not text.isascii() else []


def pairs(run: str) -> list[str]:
    """The overlapping pairs of a run's characters, in order (a run of one character is itself)."""
    return [run[index:index + 2] for index in range(len(run) - 1)] if len(run) > 1 else [run]


def cjk_terms(text: str) -> list[str]:
    """Every pair of every run in `text`, in order: what the index and the matchers compare."""
    return [pair for run in runs(text) for pair in pairs(run)]


# Grammar, which says nothing of the matter: Chinese particles and question words (a pair holding one is left
# out), and Korean polite endings (as pairs)
_FUNCTION_CHARS = frozenset("的了吗嗎呢吧么麼是在和与與或就都也")
_ENDINGS = frozenset({"나요", "가요", "어요", "아요", "니다", "습니", "세요", "까요", "는가", "은가", "인가"})


def content_pairs(text: str) -> list[str]:
    """`cjk_terms` less grammar: pairs of kana alone (する, には, ます), pairs holding a Chinese particle (的, 吗), and
    Korean polite endings (나요, 니다), none of which says anything of the matter."""
    return [pair for pair in cjk_terms(text) if not all("\u3040" <= char <= "\u309f" for char in pair)
            and not _FUNCTION_CHARS & set(pair) and pair not in _ENDINGS]


def query_forms(run: str) -> list[list[str]]:
    """The pair sequences a run asked for may be found as: itself, and for Korean also without a trailing
    particle (택배를 finds 택배는). A run of one character is too short to be told from others: none."""
    if len(run) < 2:
        return []
    forms = [pairs(run)]
    if len(run) >= 3 and _pattern(_HANGUL).match(run[-1]):
        forms.append(pairs(run[:-1]))
    return forms


PASSAGE_CHARS = 40  # of the text on each side of a marked passage


def marked_passage(text: str, asked: str, around: int = PASSAGE_CHARS) -> str | None:
    """The stretch of `text` where the Chinese, Japanese or Korean words of `asked` are found, marked `**...**` as
    search marks a match, with up to `around` characters on each side (`…` where cut): the decision's own text,
    never the index's pairs. None when no word of `asked` is in `text`."""
    wanted = {pair for run in runs(asked) for form in query_forms(run) for pair in form}
    covered = [False] * len(text)
    for match in _pattern(_RUN).finditer(text):
        run = match.group()
        for index in range(len(run) - 1):
            if run[index:index + 2] in wanted:
                covered[match.start() + index] = covered[match.start() + index + 1] = True
    spans, start = [], None
    for index, inside in enumerate([*covered, False]):
        if inside and start is None:
            start = index
        elif not inside and start is not None:
            spans.append((start, index))
            start = None
    if not spans:
        return None
    begin, end = max(0, spans[0][0] - around), min(len(text), spans[0][1] + around)
    shown = [text[begin:spans[0][0]]]
    for (first, last), following in zip(spans, [*(s[0] for s in spans[1:]), None], strict=True):
        if first >= end:
            break
        shown.append(f"**{text[first:last]}**")
        shown.append(text[last:min(end, following) if following is not None else end])
    passage = " ".join("".join(shown).split())
    return ("…" if begin > 0 else "") + passage + ("…" if end < len(text) else "")


def text_size(text: str) -> int:
    """A text's length as the minimum of a summary or a reason counts it: a Chinese, Japanese or Korean character
    as two, since it says about as much as a word of a few letters."""
    return len(text) + sum(map(len, runs(text)))
