"""Names of the characters in a book: what looks like a name, what a title says of gender, who
a pronoun near a name is, and which fuller name a short one belongs to.

The attribution (:mod:`verified_tts.text.attribution`) asks these questions of the book's own
text. A name must look like one in this book: capitalised in the middle of a sentence at least
twice (:func:`proper_names`), not a month, a direction or a word that opens sentences, and not a
place (after "in", "near" or "the", or ending in Harbor, River, Street). A title gives a gender
(Mrs., Sir, the Countess: :func:`title_gender`), and so do the pronouns that follow a name in
narration that names no one else (:func:`character_genders`). :func:`full_names` maps a short
name to the one fuller name it can be short for, so a character keeps one name and one voice.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence

from verified_tts.text.dialogue import ParagraphQuotes

__all__ = [
    "CAPITAL_WORD",
    "NAME",
    "NOT_NAMES",
    "PRONOUNS",
    "TITLE",
    "character_genders",
    "sole_mentions",
    "clean_name",
    "full_names",
    "gender_of",
    "is_name",
    "mentions",
    "proper_names",
    "title_gender",
]

_FEMALE = (
    "mrs mrs. miss madame mademoiselle lady countess duchess queen princess aunt mother "
    "grandmother sister mistress ma'am madam dame"
)
_FEMALE_TITLES = frozenset(_FEMALE.split())
_MALE = (
    "mr mr. monsieur sir lord count duke king prince uncle father grandfather brother "
    "captain colonel major general parson rev. dr. doctor judge squire master"
)
_MALE_TITLES = frozenset(_MALE.split())
TITLE = (
    r"(?:Mr\.|Mrs\.|Miss|Dr\.|Rev\.|Madame|Mademoiselle|Monsieur|Lady|Lord|Sir|Countess|Count|"
    r"Uncle|Aunt|Father|Mother|Parson|Captain|Colonel|Major|General|Judge|Squire|Cousin|"
    r"Grandfather|Grandmother|Grandma|Grandpa|Brother|Sister)"
)
# letters of a name, accented ones included (Léonce, Zoë); a hyphen may join two capitalised
# parts (Mary-Jane), as the words counted by proper_names do
_UPPER = "A-ZÀ-ÖØ-Þ"
_LOWER = "a-zß-öø-ÿ"
CAPITAL_WORD = rf"(?:Mc|Mac|O')?[{_UPPER}][{_LOWER}'{_UPPER}]+(?:-[{_UPPER}][{_LOWER}'{_UPPER}]+)?"
NAME = rf"(?:{TITLE}\s+)?{CAPITAL_WORD}(?:\s+(?:de|De|von|van|la|du)?\s*{CAPITAL_WORD})*"
PRONOUNS = {"he": "male", "she": "female"}
_CAPITALISED_WORDS = """
    The Then But And It He She They I We You This That There When As Yes No Oh Ah Well So If
    Why What Who How Now Here Her His Its Our Their Not Nor Or At In On Of To By For With Still
    After Before Afterward All Some One Once Perhaps Presently Suddenly Again Even Only Just Let
    Do Don't Good God Heaven Lord Sir Madam Mother Father Dear My Your Mine O A An Is Are Was
    Come Go See Look Never Ever Every Each Both Yet Though Although While Till Until Because
    Indeed Nay Alas Pray Hush Hark Aye Nonsense Impossible Certainly Surely Thank Thanks Pardon
    Goodness Gracious Really Quite Very Nothing Nobody Somebody Everybody Anybody Hallo Hullo
    Thus Such These Those Which Whose Whom Where Whatever Whenever Wherever Whether However
    Meanwhile Soon Later Instead Hence Therefore Accordingly Finally Fortunately Unfortunately
    Nevertheless Moreover Besides Otherwise Evidently Hardly Scarcely Already Always Sometimes
    Somehow Anyhow Hitherto Afterwards Maybe Neither Either None Many Most More Much Another
    Other Any Something Everything Upon From Into Over Under Through Without Within Between
    Beyond Behind Below Above Inside Outside During Since Unless Whilst Towards Toward Have Has
    Had Having Did Does Would Could Should Shall Must Were Be Being Am Can Please
"""
_CALENDAR = """
    January February March April May June July August September October November December
    Monday Tuesday Wednesday Thursday Friday Saturday Sunday North South East West Christmas
"""
# capitalised at a sentence's start or in a date, no names
NOT_NAMES = frozenset(_CAPITALISED_WORDS.split() + _CALENDAR.split())


def _sentences_words(text: str) -> Iterable[tuple[bool, str]]:
    """(starts a sentence, word) for each word of ``text``."""
    start = True
    for word in re.findall(r"[\w'’.-]+|[.!?\"“”]", text):
        if word in ".!?":
            start = True
            continue
        if word in '"“”':
            continue
        yield start, word
        start = word.endswith((".", "!", "?")) and not re.fullmatch(rf"{TITLE}", word)


def proper_names(texts: Iterable[str]) -> frozenset[str]:
    """Words capitalised in the middle of a sentence at least twice: this book's names."""
    counts: Counter[str] = Counter()
    for text in texts:
        for starts, word in _sentences_words(text):
            word = word.strip(".'’")
            if not starts and word[:1].isupper() and word not in NOT_NAMES:
                counts[word] += 1
    return frozenset(word for word, count in counts.items() if count >= 2)


def clean_name(who: str) -> str:
    return re.sub(r"['’]s$", "", re.sub(r"\s+", " ", who).strip())


def is_name(who: str, names: frozenset[str]) -> bool:
    if who.lower() in PRONOUNS:
        return True
    if who.startswith("the "):  # the captain, the old chief; not "the boy on", "the courtly"
        last = who.split()[-1]
        return last.lower() not in _FUNCTION_WORDS and not last.endswith("ly")
    if who.split()[-1] in _PLACE_WORDS:
        return False
    words = [w for w in who.split() if not re.fullmatch(TITLE, w) and w[0].isupper()]
    titled = who.split()[0] != (words[0] if words else "")
    return bool(words) and all(w in names or titled for w in words) and words[0] not in NOT_NAMES


def title_gender(name: str) -> str | None:
    """The gender a name's title says ("Mrs. Woods", "the Countess", "Uncle Tom"), or None."""
    words = name.lower().split()
    word = words[-1] if words[0] == "the" else words[0]
    if word in _FEMALE_TITLES:
        return "female"
    if word in _MALE_TITLES:
        return "male"
    return None


def gender_of(name: str, genders: dict[str, str]) -> str | None:
    return title_gender(name) or genders.get(name)


_PLACE_BEFORE = re.compile(r"\b(?:in|into|near|across|through|the|a|an)\s+$", re.IGNORECASE)
_PLACES = (
    "Harbor Harbour River Street Hill Mountain Mountains Island Park Lake City Bay Cove Valley"
)
_PLACE_WORDS = frozenset(_PLACES.split())
_FUNCTION = "on of to in at by for with from into upon as and or but that who which than latter"
_FUNCTION_WORDS = frozenset(_FUNCTION.split())


def mentions(text: str, names: frozenset[str]) -> list[str]:
    """Names in ``text`` in the order they come; one after "in", "near", "the" is a place."""
    found = []
    for match in re.finditer(NAME, text):
        before = text[max(0, match.start() - 12) : match.start()]
        titled = re.match(TITLE, match.group(0))  # the Countess is a person
        if _PLACE_BEFORE.search(before) and not titled:
            continue
        who = clean_name(match.group(0))
        if is_name(who, names) and who.split()[0] not in NOT_NAMES:
            found.append(who)
    return found


def sole_mentions(
    chapters: Sequence[Sequence[tuple[str, ParagraphQuotes]]],
    names: frozenset[str],
    find: Callable[[str, frozenset[str]], list[str]] = mentions,
) -> Iterator[tuple[str, str]]:
    """(name, the rest of the sentence after it) for every narration sentence in which ``find``
    sees that one character and no other: where a pronoun that follows is most likely theirs."""
    for chapter in chapters:
        for text, quotes in chapter:
            narration = " ".join(text[s.start : s.end] for s in quotes.spans if not s.dialogue)
            for sentence in re.split(r"(?<=[.!?])\s+", narration):
                named = set(find(sentence, names))
                if len(named) == 1:
                    name = named.pop()
                    yield name, sentence[sentence.find(name) + len(name) :]


def character_genders(
    chapters: Sequence[Sequence[tuple[str, ParagraphQuotes]]], names: frozenset[str]
) -> dict[str, str]:
    """Each character's gender where the text says: the first subject pronoun after the name in
    narration sentences that name that character alone ("Anne turned; she smiled"), kept where one
    gender outvotes the other two to one."""
    votes: dict[str, Counter[str]] = {}
    for name, after in sole_mentions(chapters, names):
        # the first he, his or she after the name is most often the name's own ("him"
        # and "her" are more often someone else: "Frank kissed her")
        word = re.search(r"\b(he|his|she)\b", after.lower())
        if word:
            male = word.group(1) != "she"
            votes.setdefault(name, Counter())["male" if male else "female"] += 1
    genders = {}
    for name, tally in votes.items():
        if tally:
            gender, count = tally.most_common(1)[0]
            if count >= 2 * (sum(tally.values()) - count):
                genders[name] = gender
    return genders


def _core(name: str) -> tuple[str | None, frozenset[str]]:
    """A name's title (if any) and its other words: ("Mr.", {"McDermott"})."""
    words = name.split()
    title = words[0] if re.fullmatch(TITLE, words[0]) and len(words) > 1 else None
    return title, frozenset(words[1:] if title else words)


def _owners(name: str, candidates: list[str], genders: dict[str, str]) -> list[str]:
    """The fuller names ``name`` could be short for."""
    title, words = _core(name)
    owners = []
    for other in candidates:
        other_title, other_words = _core(other)
        if other == name or not words <= other_words:
            continue
        if words == other_words and title is not None:  # Mr. Jewett is not short for Jewett
            continue
        if title and other_title and title != other_title:
            continue
        if title and not other_title and title_gender(name) != gender_of(other, genders):
            continue
        owners.append(other)
    return owners


def full_names(speakers: set[str], named: set[str], genders: dict[str, str]) -> dict[str, str]:
    """Each short name of a character -> the one fuller name it belongs to, where there is just
    one: Dermott and Mr. McDermott -> Dermott McDermott, Jewett -> Mr. Jewett. A title must agree
    (Mrs. Ravenel is not Mr. Ravenel, nor a man named Frank Ravenel); descriptions stay as they
    are; a name two people could own (Ravenel: Mrs. Ravenel or Frank Ravenel) stays as it is."""
    people = sorted(s for s in speakers if not s.startswith("the "))
    candidates = people + sorted(n for n in named if len(n.split()) > 1 and n not in speakers)
    full: dict[str, str] = {}
    for titled in (True, False):  # titled names first, so McDermott sees Mr. McDermott's owner
        for name in people:
            if (_core(name)[0] is not None) != titled:
                continue
            owners = {full.get(o, o) for o in _owners(name, candidates, genders)}
            owners.discard(name)
            if len(owners) == 1:  # one person it can be short for
                full[name] = owners.pop()
    for name in list(full):  # follow chains: Dermott -> McDermott -> Dermott McDermott
        seen = {name}
        while full[name] in full and full[name] not in seen:
            seen.add(full[name])
            full[name] = full[full[name]]
    return full
