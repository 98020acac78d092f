"""What a text is about, as the readers that match by matter compare it: its words folded, stopwords out, word
endings taken off, everyday synonyms brought to one word, and the kind of thing a name is added beside it.

Pure: text in, words and scores out. Two measures use these words:

- `similarity`: how much of a question a decision says (the same-matter check of `ask`, lint VT044 and the
  question hooks; see `commands/same.py` and docs/design/0031-the-same-matter-check.md). Two floors: at
  `SAME_MATTER_THRESHOLD` a question is the same matter; at `POSSIBLE_MATCH_THRESHOLD` it may be, and the
  asker is shown the decision to judge (design 0042).
- `relevance`: how strongly an owner's message bears on a decision (the `user-prompt-submit` hook): the
  rarity of the words they share in the vault (a word half the decisions use says little), a word of the
  decision's topic counting more. `MESSAGE_FLOOR` was chosen on tests/data/owner_messages.json.
"""
from __future__ import annotations

import enum
import math
import re
import unicodedata
from collections.abc import Callable, Iterable, Mapping
from functools import lru_cache
from typing import Generic, NamedTuple, TypeVar

from .cjk import content_pairs, has_cjk

STOPWORDS = frozenset("""a about above after again all also am an and any are as at be been before being
below between both but by can could did do does doing down during each either ever few for from further had
has have having he her here hers him his how i if in into is it its itself just me more most my no nor not
now of off on once only or other our ours out over own same she should so some such than that the their
theirs them then there these they this those through to too under until up us very was we were what when
where which while who whom why will with would you your yours anything something thing things decide decided
decision decisions ever go goes going went gone without never nobody nothing none neither""".split())  # noqa: SIM905 (a list of words reads better as text)
# (a negation says which way a text goes, not what it is about: "without SLF4J" is still about SLF4J)

_WORD = re.compile(r"\w+", re.UNICODE)


def fold(text: str) -> str:
    """Lower case with accents taken off, as the index compares words; characters that are not shown (a
    zero-width space inside "foot\u200bers", a variation selector) dropped, so a word reads as it looks."""
    if text.isascii():
        return text.lower()  # what the general path gives for plain ASCII, at a fraction of its cost
    decomposed = unicodedata.normalize("NFKD", _INVISIBLE.sub("", text).casefold())
    return "".join(c for c in decomposed if not unicodedata.combining(c) and unicodedata.category(c) != "Cf")


# Unicode's Default_Ignorable_Code_Point characters (DerivedCoreProperties.txt): never shown, whatever the font.
_INVISIBLE = re.compile("[\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u202a-\u202e"
                        "\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0\uFFF0-\uFFF8\U0001BCA0-\U0001BCA3"
                        "\U0001D173-\U0001D17A\U000E0000-\U000E0FFF]")


def words(text: str) -> list[str]:
    """The words of a text as the index sees them (folded; `article-footer` is two words), stopwords out."""
    return [w for w in _WORD.findall(fold(text))
            if w not in STOPWORDS and (not w.isdigit() or len(w) == 4)]  # a year counts; other numbers do not


# Both chosen on the tuning part of tests/data/judgments/ (`benchmarks/judgments.py`, design 0045): the lowest
# that stop at most 1% (strong) and 5% (both) of its different matters.
SAME_MATTER_THRESHOLD = 0.71  # a question this close to a decision is the same matter: refused
POSSIBLE_MATCH_THRESHOLD = 0.63  # this close, by its text alone too, it may be: refused, with the decision to judge
NEAREST = 3  # decisions a hook's denial shows
MESSAGE_FLOOR = 7.25  # `relevance` of a decision an owner's message brings in, at least
MESSAGE_SHARE = 0.8  # ... and at least this share of the best one's
MESSAGE_MAX = 5  # decisions an owner's message brings in, at most
MIN_DOCUMENTS = 100  # a vault smaller than this is weighed as one of this size (see `rarity`)

# Words that carry little of what a question is about: they count for a third of a word.
_WEAK_WORDS = frozenset("""add allow allowed always answer any approach around ask available base best choose
current day default each enough every exist extra first full general get give go good have help hour include
instead keep kind let like list long make many may mean much must need new next offer often one only
other over own part per put question rule run say see set should show start stay still support take team
time two use way week work year""".split())  # noqa: SIM905 (a list of words reads better as text)

# Everyday words for one thing, each brought to the first word of its group. Kept general (no vault's
# jargon): a word belongs here when swapping it in a question would not change what is asked.
SYNONYMS = (
    "footer bottom",
    "header top cover hero",
    "image picture photo illustration",
    "article post story piece essay",
    "author writer contributor",
    "guest outside external contributed",
    "annual yearly year",
    "month monthly",
    "week weekly",
    "price cost pricing priced charge fee",
    "discount reduced cheaper off",
    "plan tier subscription package",
    "refund money-back",
    "vat tax",
    "customer user client",
    "hire hiring employ employment recruit recruiting recruitment",
    "employee staff worker people personnel",
    "candidate applicant",
    "salary pay wage compensation paid",
    "ad advert advertisement posting",
    "remote home remotely",
    "office onsite",
    "probation probationary",
    "exercise assignment take-home",
    "expense reimburse reimbursed reimbursement",
    "meal lunch dinner food",
    "travel trip travelling traveling",
    "host hosting provider",
    "backup snapshot",
    "database db postgres",
    "deploy deployment",
    "backend server-side",
    "vm virtual-machine",
    "keep retain retention store stored",
    "delete erase remove close",
    "app application",
    "mobile native ios android",
    "translate translation localise localize localisation localization language",
    "interface ui",
    "2fa mfa two-factor multi-factor",
    "login sign-in signin",
    "session",
    "analytics statistics stats tracking",
    "website site",
    "weekend saturday sunday",
    "weekday monday-to-friday",
    "license licence",
    "password credential",
    "on-call pager",
    "rota rotation",
    "ci pipeline build",
    "nonprofit charity ngo",
    "eu europe european",
    "data information",
    "colour color",
    "organise organize",
    "emoji emoticon smiley",
    "tone voice",
    "email e-mail mail inbox",
    "reprint print-run",
)

# Names of a kind of thing, each with the everyday word for its kind, which is added beside it: a message
# naming Instagram is about social networks, and still about Instagram. A name also adds a mark of its kind
# (`named`), which only names give: "Is Substack an option?" and a question on "Buttondown or Ghost?" both
# name a newsletter service, which says more than both saying "newsletter". Kept to household names.
KINDS = (
    "social instagram facebook tiktok twitter mastodon bluesky linkedin threads youtube reddit pinterest",
    "host netlify vercel heroku aws azure hetzner digitalocean cloudflare linode",
    "email gmail outlook fastmail protonmail",
    "newsletter substack buttondown mailchimp convertkit beehiiv",
    "analytics google-analytics plausible matomo fathom",
    "payment stripe paypal",
    "chat slack discord whatsapp telegram signal",
    "video youtube vimeo",
    "repository github gitlab bitbucket",
    "shop shopify etsy gumroad woocommerce",
    "website wordpress squarespace wix webflow",
    "image midjourney dall-e",
    "stock unsplash pexels shutterstock istock",
    "storage dropbox onedrive icloud",
)

# Names above that are everyday words too ("an email thread", "a plausible reason"): names only when written
# with a capital.
EVERYDAY_NAMES = frozenset({"threads", "signal", "outlook", "plausible", "fathom"})

# Everyday words that say their kind as well (a flight is travel by plane): the kind is added, no mark.
KIND_WORDS = (
    "plane flight fly flying airline",
    "tone formal informal casual friendly",
)

# Phrases read as one word before the words are split (so "two-factor" or "from home" keep their sense).
PHRASES = (
    ("two factor", "2fa"), ("multi factor", "2fa"), ("sign in", "login"), ("log in", "login"),
    ("logged in", "login"), ("money back", "refund"), ("server side", "backend"), ("virtual machine", "vm"),
    ("from home", "remote"), ("on call", "pager"), ("on site", "office"), ("non profit", "nonprofit"),
    ("monday to friday", "weekday"), ("european union", "eu"), ("take home", "exercise"),
    ("job ad", "ad"), ("job posting", "ad"), ("dark mode", "dark theme"), ("trial period", "probation"),
    ("google analytics", "google-analytics"), ("print run", "print-run"),
)

_PHRASE = re.compile(r"\b(" + "|".join(re.escape(a) for a, _ in PHRASES) + r")\b")
_PHRASE_TO = dict(PHRASES)
_PHRASE_PARTS = [frozenset(phrase.split()) for phrase, _ in PHRASES]  # a phrase is there only where all are


def stem(word: str) -> str:
    """A light English stemmer: plurals and common verb endings off, the same on both sides of a comparison
    (`spellings` and `spelling` are both `spell`)."""
    if len(word) <= 3 or word.isdigit():
        return word
    for suffix, replacement in (("ies", "y"), ("sses", "ss"), ("ing", ""), ("ed", ""), ("es", ""), ("s", ""),
                                ("ly", "")):
        if word.endswith(suffix) and len(word) - len(suffix) >= (4 if suffix == "ly" else 3):
            if suffix == "s" and word.endswith(("ss", "us", "sis", "xis")):
                return word
            if suffix == "es" and not word.endswith(("ches", "shes", "xes", "sses", "zes")):
                continue
            base = word[: -len(suffix)] + replacement
            if suffix in ("ing", "ed") and not _VOWEL.search(base):
                return word  # spring, shed: no verb ending
            if suffix in ("ing", "ed") and len(base) > 3 and base[-1] == base[-2] and base[-1] not in "lsz":
                base = base[:-1]  # shipped -> ship
            if suffix == "s" and base.endswith(("ing", "ed")):
                return stem(base)  # meetings -> meeting -> meet
            return _without_e(base)
    return _without_e(word)


_VOWEL = re.compile("[aeiouy]")


def _without_e(word: str) -> str:
    """A final e off, as Porter's stemmer takes it (release and released, share and shared, are one word)."""
    return word[:-1] if len(word) > 4 and word.endswith("e") and not word.endswith("ee") else word


def _groups(table: Iterable[str]) -> dict[str, str]:
    canonical: dict[str, str] = {}
    for group in table:
        members = group.split()
        for member in members:
            canonical.setdefault(stem(member.replace("-", "")), stem(members[0].replace("-", "")))
    return canonical


LEXICON = _groups(SYNONYMS)
WEAK = frozenset(map(stem, _WEAK_WORDS))
NAME_OF_KIND = {name: kind for name, kind in _groups(KINDS).items() if name != kind}
KIND_OF = {**{word: kind for word, kind in _groups(KIND_WORDS).items() if word != kind}, **NAME_OF_KIND}


def named(kind: str) -> str:
    """The term a name of `kind` adds beside the kind word: no word of a text ever reads as it."""
    return f"{kind}~named"


# A decision's id named in a text (model.ID_PATTERN, unanchored; `d-` once folded): it names a note, not a
# matter ("About D-0012-4fpb, ..." adds no word), and a question or a reason naming one asks knowingly.
_DECISION_ID = re.compile(r"\b[Dd]-\d{1,9}(?:-[0-9a-z]{2,8})?\b")


def named_ids(text: str) -> list[str]:
    """The decision ids a text names, as written."""
    return _DECISION_ID.findall(text)


@lru_cache(maxsize=4096)
def terms(text: str) -> frozenset[str]:
    """The words of a text as the check compares them: folded, stopwords out, stemmed, synonyms merged, the
    kind of a named thing and its mark (`named`) added. A letter alone (the s of "what's") is no word."""
    folded = fold(text)
    if "d-" in folded:  # a decision's id (lower case once folded); looking costs a tenth of the regex
        folded = _DECISION_ID.sub(" ", folded)
    folded = folded.replace("-", " ").replace("_", " ")
    said = set(_WORD.findall(folded))
    if any(parts <= said for parts in _PHRASE_PARTS):  # else no phrase is there: the text is not looked through
        folded = _PHRASE.sub(lambda match: _PHRASE_TO[match.group(1)].replace(" ", "-"), folded)
        said = set(_WORD.findall(fold(folded.replace("-", ""))))
    elif not folded.isascii():
        said = set(_WORD.findall(fold(folded)))  # as `words` finds them (folded once more)
    said -= STOPWORDS
    cjk = not text.isascii() and has_cjk(text)
    found = set(map(_kept_term, (word for word in said if not has_cjk(word)) if cjk else said))
    found.discard("")
    kinds = _with_kind(text, found)
    found |= {KIND_OF[term] for term in kinds} | {named(NAME_OF_KIND[term]) for term in kinds if term in NAME_OF_KIND}
    return frozenset(found) | frozenset(content_pairs(text)) if cjk else frozenset(found)


@lru_cache(maxsize=65536)
def _kept_term(word: str) -> str:
    """A word's term, "" for one that counts for none: a letter alone, a number but a year."""
    return _term(word) if len(word) > 1 and (len(word) == 4 or not word.isdigit()) else ""


@lru_cache(maxsize=65536)
def _term(word: str) -> str:
    """A word as compared, stemmed and merged with its synonyms: words repeat from note to note."""
    stemmed = stem(word)
    return LEXICON.get(stemmed, stemmed)


_EVERYDAY = frozenset(map(_term, EVERYDAY_NAMES))
_SENTENCE_START = re.compile(r"(?:^|[.!?:]\s+|\n\s*)$")


def _with_kind(text: str, found: Iterable[str]) -> set[str]:
    """The terms of `text` that say a kind (`KIND_OF`). A name that is an everyday word too counts only written
    with a capital, not at the start of a sentence ("We post on Threads", not "Threads in the forum ...")."""
    kinds = set(found).intersection(KIND_OF)
    if not _EVERYDAY.isdisjoint(kinds):
        kinds -= _EVERYDAY - {_term(fold(word.group())) for word in _WORD.finditer(text) if word.group()[0].isupper()
                              and not word.group().isupper() and not _SENTENCE_START.search(text[:word.start()])}
    return kinds


Reading = tuple[tuple[tuple[str, str, "str | None"], ...], tuple[str, ...]]


def reading_of(text: str) -> Reading:
    """Each word of `text` (folded) with its term and the kind of thing it names, and its CJK pairs: what
    `as_said` looks through, worked out once for a text said against many decisions."""
    kinds = _with_kind(text, map(_term, _WORD.findall(fold(text))))
    words = []
    for word in _WORD.findall(fold(text).replace("-", " ").replace("_", " ")):
        term = _term(word)
        words.append((word, term, KIND_OF.get(term) if term in kinds else None))
    return tuple(words), tuple(content_pairs(text))


def as_said(text: str, found: Iterable[str], reading: Reading | None = None) -> tuple[str, ...]:
    """The words of `text` (as written, folded) that gave the terms `found`, in order, each once: what a
    person reads, not `articl`. `reading`: `reading_of(text)`, where the caller has it."""
    wanted, said = set(found), dict[str, None]()
    words, pairs = reading if reading is not None else reading_of(text)
    for word, term, kind in words:
        if term in wanted or kind in wanted or (kind and named(kind) in wanted):
            said.setdefault(word, None)
    said.update((pair, None) for pair in pairs if pair in wanted)
    return tuple(said)


class Tier(enum.Enum):
    """How close a question is to one decision, as the same-matter check answers."""

    SAME = "same"  # the same matter: refused, naming the decision
    POSSIBLE = "possible"  # it may be: refused once, the decision shown for the asker to judge


def tier(with_topics: float, text_alone: float, strong: float = SAME_MATTER_THRESHOLD,
         possible: float = POSSIBLE_MATCH_THRESHOLD) -> Tier | None:
    """The same-matter check's answer for a question scored against one decision, with its topic keys and
    without them: SAME when it is the same matter with them; POSSIBLE when with them or by its text alone it may
    be; None when neither. A question with no topic keys (the agents' question tools) is scored the same both
    ways."""
    if with_topics >= strong:
        return Tier.SAME
    return Tier.POSSIBLE if max(with_topics, text_alone) >= possible else None


def order(score: float, asked: frozenset[str], theirs: frozenset[str], number: int) -> tuple[float, float, int]:
    """The sort key of a decision matched by a question, best first: its score, then how much of the decision
    the question says (of two rulings a short question says all of, the one saying least besides), then the
    older."""
    return -score, -similarity(theirs, asked), number


T = TypeVar("T")


class Found(NamedTuple, Generic[T]):
    """A decision a question may be the same matter as (`matches`)."""

    decision: T
    score: float  # the question with its topic keys
    text_alone: float  # the question's text alone
    shared: tuple[str, ...]  # the words both say, as the question says them, the strongest first


def matches(text: str, topics: Iterable[str], candidates: Iterable[tuple[T, frozenset[str], int]],
            threshold: float = POSSIBLE_MATCH_THRESHOLD,
            answers: Callable[[T], bool] | None = None) -> list[Found[T]]:
    """The same-matter check, for `ask`, `rule` and the question hooks alike: the candidates (each a decision, its
    words as `decision_terms` gives them, its number) that the text may be the matter of, best first (`order`):
    scored with its topic keys and, under SAME_MATTER_THRESHOLD, by its text alone too (`tier`). Where the text
    may answer a candidate (`answers`: a ruling against an open question), it is scored both ways, the better
    counting: an answer says more than its question ("Every footer carries the bio" answers "What should every
    footer carry?")."""
    topics = tuple(topics)
    asked, alone, said = question_terms(text, topics), question_terms(text), " ".join((text, *topics))
    reading = reading_of(said)  # the same words, looked through for each decision matched
    found = []
    for decision, theirs, number in candidates:
        score, text_alone = similarity(asked, theirs), similarity(alone, theirs)
        if answers is not None and answers(decision):
            score, text_alone = max(score, similarity(theirs, asked)), max(text_alone, similarity(theirs, alone))
        kept = score if threshold >= SAME_MATTER_THRESHOLD else max(score, text_alone)
        if kept >= threshold:
            shared = tuple(sorted(asked & theirs, key=lambda term: (-weight(term), term)))
            found.append((order(kept, asked, theirs, number), Found(decision, score, text_alone,
                                                                    as_said(said, shared, reading) or shared)))
    return [item for _, item in sorted(found, key=lambda pair: pair[0])]


def question_terms(text: str, topics: Iterable[str] = ()) -> frozenset[str]:
    return terms(" ".join((text, *topics)))


def weight(term: str) -> float:
    return thirds(frozenset((term,))) / 3


def similarity(asked: frozenset[str], theirs: frozenset[str]) -> float:
    """How much of what is asked the decision says, 0..1: the weighted share of the question's words that the
    decision's words cover. A word of the question the decision does not say (the newsletter in "should the
    newsletter footer carry a sponsor?" against a ruling on article footers) pulls it down."""
    return share(thirds(asked & theirs), thirds(asked))


def shares_substance(asked: frozenset[str], theirs: frozenset[str]) -> bool:
    """Whether a text says any word of a decision that is not a weak one: the check's floor, under which two
    texts are on no shared matter (a supersession naming a ruling it shares nothing with is a mistyped id)."""
    return not (asked & theirs) <= WEAK


def thirds(found: frozenset[str]) -> int:
    """The words' weight in thirds (a weak word weighs one, another three): whole numbers, so the score is
    the same however it is summed."""
    weak = len(found & WEAK)
    return 3 * (len(found) - weak) + weak



def share(part: int, whole: int) -> float:
    return part / whole if whole else 0.0


def rarity(term: str, documents: Mapping[str, int], count: int) -> float:
    """How much a shared word says in a vault of `count` decisions, `documents[term]` of which use it: the
    log of how rare it is (bm25's idf). A vault under MIN_DOCUMENTS decisions is weighed as one of that size,
    so that in a new vault of five rulings a word two of them use is not taken for a rare one."""
    size = max(count, MIN_DOCUMENTS)
    return math.log((size + 1) / (documents.get(term, 0) + 0.5))


# A name in quotes ('The second draft', "Ten years of plain text"): its words are a title, not the matter.
_QUOTED = re.compile(r"'([^'\n]{3,80})'|\"([^\"\n]{3,80})\"|\u201c([^\u201d\n]{3,80})\u201d|\u2018([^\u2019\n]{3,80})\u2019")


class About(NamedTuple):
    """A decision as `relevance` reads it."""

    terms: frozenset[str]  # the words of its summary, topics, text and reason, less those only of a name
    topic: frozenset[str]  # the words of its topic keys (they name the matter: they count twice)
    summary: frozenset[str]  # the words of its summary (they say the matter: half as much again)
    names: tuple[str, ...]  # the titles its summary quotes, folded: they count when a message says them whole


def about(summary: str, topics: Iterable[str], text: str = "") -> About:
    """`summary` with its topic keys and `text` (the start of its sections, its reason) as `relevance` reads them.
    A word that is only in a quoted name counts only with the name: "Make the headings in the draft bold" is
    not about the article 'The second draft'."""
    names = [next(group for group in found.groups() if group) for found in _QUOTED.finditer(summary)]
    if not names:
        topic = terms(" ".join(topics))
        return About(terms(f"{summary}\n{text}") | topic, topic, terms(summary), ())
    said = terms(_QUOTED.sub(" ", f"{summary}\n{text}"))  # the words said outside any quoted name
    topic = terms(" ".join(topics)) - (terms(" ".join(names)) - said)
    return About(said | topic, topic, terms(_QUOTED.sub(" ", summary)), tuple(fold(name) for name in names))


def relevance(message: str, asked: frozenset[str], theirs: About, documents: Mapping[str, int], count: int) -> float:
    """How strongly an owner's message (`asked`: its `terms`) bears on a decision: the rarity of each word both
    say, a weak word a third, a word of the decision's topic twice, one of its summary half as much again; a
    quoted name the message says whole, twice what the rarest word does. No bare number counts (`words` drops
    them)."""
    found = sum(rarity(term, documents, count) * (1 / 3 if term in WEAK else 1.0)
                * (2.0 if term in theirs.topic else 1.5 if term in theirs.summary else 1.0)
                for term in asked & theirs.terms)
    if theirs.names:
        folded = fold(message)
        rarest = rarity("", {}, count)  # what a word no decision uses weighs
        found += sum(2 * rarest for name in theirs.names if name in folded)
    return found


def brought_in(scores: Iterable[tuple[float, int]], floor: float | None = None,
               best_share: float | None = None) -> list[tuple[float, int]]:
    """Of (relevance, position) pairs, those an owner's message brings in, best first: over the floor
    (MESSAGE_FLOOR) and within a share of the best (MESSAGE_SHARE), at most MESSAGE_MAX."""
    floor = MESSAGE_FLOOR if floor is None else floor
    best_share = MESSAGE_SHARE if best_share is None else best_share
    kept = sorted((pair for pair in scores if pair[0] >= floor), key=lambda pair: (-pair[0], pair[1]))
    return [pair for pair in kept if pair[0] >= best_share * kept[0][0]][:MESSAGE_MAX] if kept else []
