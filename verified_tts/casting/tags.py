"""Speech tags: the narration beside a quote that says who spoke it, and with what verb.

:func:`speech_tag` reads the narration just after a quote (", said Emma", ", Emma said", ", said she
warmly", "said the unsympathetic Marilla", "was Mr. Allen's consolation", "was his reply", "was
uttered by Catherine") or just before one ("Emma replied:", "Then said Emma,", "she heard Harriet
say,", "Isabella, embracing Catherine, thus began:", "Mr. Allen, who had heard it all, said,", "She
turned to George:", "at last Miss Bartlett rose with a sigh, and said:", "the Rabbit noticed Alice,
and called out to her in an angry tone,", "her voice said:") and gives the words that name the
speaker (a name, a description such as "the boatman" or "her mother", a relation of a named
character such as "Daisy's mother" for "answered Daisy's mamma", a pronoun or "I") with the verb;
whom those words stand for is :mod:`verified_tts.casting.sieve`'s business.
"""

from __future__ import annotations

import re

from verified_tts.casting.characters import KIN
from verified_tts.casting.mentions import NAME, names_no_one, without_openers
from verified_tts.text.dialogue import SPEECH_VERBS
from verified_tts.text.names import clean_name

__all__ = ["PRONOUNS", "SENTENCE_END", "SUBJECT", "VERBS", "speech_tag"]

_MORE_VERBS = frozenset(
    [
        "rejoined",
        "resumed",
        "pursued",
        "cried",
        "observed",
        "interposed",
        "returned",
        "exclaimed",
        "whispered",
        "sneered",
        "answered",
        "replied",
        "said",
        "added",
        "continued",
        "asked",
        "inquired",
        "enquired",
        "began",
        "repeated",
        "urged",
        "remarked",
        "explained",
        "admitted",
        "allowed",
        "owned",
        "reasoned",
        "argued",
        "persisted",
        "proceeded",
        "ended",
        "concluded",
        "joined",
        "put",
    ]
)
VERBS = SPEECH_VERBS | _MORE_VERBS
PRONOUNS = {"he": "male", "she": "female", "He": "male", "She": "female"}
_WORD = r"(?!(?:to|and|with|at|in|on|of|for|as|but|or|who|that|which|from|by)\b)[a-z]+"
_DESCRIPTION = (  # the boatman, my waterman, the March Hare, the station-master, her mother
    r"(?:(?:the|my|our)\s+"
    rf"(?:[A-Z][a-z]+\s+[A-Z][a-z]+|[A-Z][a-z]+|(?:{_WORD}\s+){{0,2}}{_WORD}(?:-[a-z]+)?)"
    rf"|(?:[Hh]is|[Hh]er|[Tt]heir)\s+(?:{'|'.join(sorted(KIN))})\b)"
)
_WHO = rf"(?P<who>{NAME}|{_DESCRIPTION}|he|she|He|She|I)"
_NOT_SPEECH = (
    r"(?!\s+(?:nothing|no\b|not\b|little|so\b|it\b|that\b|this\b|to\s+(?:himself|herself|myself)))"
)
_ADVERBS = (
    r"(?:(?:\w+ly|then|thus|again|at last|at once|presently|now|still|too|also|only|just)\s+)?"
)
_LEAD = r"^[\W_]*(?:\([^)]*\)\W*)?(?:(?:So|Thus|Here|and|so|thus)\s+)?"
_AFTER = (  # narration that follows a quote: ", said Emma", ", Emma said", ", said she warmly"
    re.compile(
        rf"{_LEAD}{_ADVERBS}(?P<verb>[a-z]+)\s+"
        rf"(?:(?:the\s+)?(?!(?:the|my|our|a|an)\s)[a-z]+(?:-[a-z]+)?\s+(?={NAME}))?{_WHO}(?![\w'’])"
        r"(?!\s+s\s)"  # "answered Daisy s mamma": her mother, not Daisy
    ),
    re.compile(rf"^[\W_]*(?:\([^)]*\)\W*)?{_WHO}[,]?\s+{_ADVERBS}(?P<verb>[a-z]+)\b{_NOT_SPEECH}"),
    re.compile(rf"^[\W_]*(?:\([^)]*\)\W*)?{_WHO}\s+(?:had|has|then)\s+(?P<verb>[a-z]+)\b"),
)
_BEFORE = (  # narration that opens a quote: "Emma replied:", "Then said Emma,", "she said:"
    re.compile(rf"{_WHO}\s+{_ADVERBS}(?P<verb>[a-z]+)(?:\s+to\s+[\w. ]+?)?[,:;]?\s*[-—]*$"),
    re.compile(rf"(?P<verb>[a-z]+)\s+{_WHO}(?:\s+[\w ]+?)?[,:;]?\s*[-—]*$"),
)


_ENDS_IN_VERB = re.compile(
    r"\b(?P<verb>[a-z]+)(?:\s+(?:to|at)\s+(?:him|her|them|me|[\w. ]+?))?(?:,?\s+\w+ly)?"
    r"(?:\s+(?:thus|again|aloud|out|at once|at last))?[,:;]?\s*[-—]*$"
)
_POSSESSIVE_BEFORE = re.compile(  # "Emma's remark was--", "Harriet's was:"
    rf"{_WHO}(?:'s|’s|\s+s)\s+(?:\w+\s+){{0,2}}?(?P<verb>was|were)[,:;]?\s*[-—]*$"
)
SUBJECT = re.compile(
    rf"(?:^|(?<=[,;])\s*|\b(?:and|but|then|when|till|until|while|though|as|so|that)\s+)"
    rf"{_WHO}(?=[\s,])"
)
_PASSIVE = re.compile(  # "was uttered at the same moment by Catherine"
    rf"^[\W_]*(?:was|were)\s+(?:\w+\s+)?(?P<verb>[a-z]+ed)\s+(?:[^.;:!?\"“”]{{0,60}}?\s)?"
    rf"by\s+{_WHO}(?![\w'])"
)
_SAYING = re.compile(  # "heard Harriet say in a serious tone,", "Thorpe's saying very abruptly,"
    rf"{_WHO}(?:'s|’s|\s+s)?\s+(?P<verb>say|saying|cry|crying|exclaim|exclaiming|ask|asking|"
    r"add|adding|reply|replying|answer|answering)\b(?:\s+[^\"“”.!?]{0,60}?)?[,:;]?\s*[-—]*$"
)
_NOUN_TAG = re.compile(  # "was Mr. Allen's consolation", "was the immediate answer"
    rf"^[\W_]*(?:was|came)\s+{_WHO}(?:'s|’s|\s+s)\s+(?:\w+\s+)?(?P<verb>[a-z]+)\b"
)

_PRONOUN_NOUN_TAG = re.compile(  # "was his reply", "was her quick answer"
    r"^[\W_]*(?:was|came)\s+(?P<who>his|her)\s+(?:\w+\s+)?(?P<verb>reply|answer|rejoinder|"
    r"response|remark|exclamation|observation|comment|question|retort|cry)\b"
)
_POSSESSIVE_PRONOUN = {"his": "he", "her": "she"}


# a sentence ends at . ! ? but not at a title's full stop ("Then Mrs. Honeychurch ... said:")
SENTENCE_END = re.compile(r"(?<=[.!?])(?<!\bMr\.)(?<!\bMrs\.)(?<!\bDr\.)(?<!\bSt\.)(?<!\bRev\.)\s+")


_RELATIVE = re.compile(  # "Mr. Allen, who, on hearing the reason, said", "Sir Harry--who ...--came"
    rf"(?P<who>{NAME})\s*(?:,|--|—)\s*who\b[^\"“”]*(?:,|--|—)\s*$"
)
_COORDINATED = re.compile(  # "Seven looked up and said", "Five, looking round, called"
    rf"(?:^|\b(?:[Oo]n|[Aa]t|[Ww]hich|[Tt]hat|[Ww]hen)\s+|\W\s*)(?P<who>{NAME})"
    r"(?:\s+[a-z]+(?:\s+[a-z]+){0,5}?\s+and(?:\s+then)?\s+|\s*,[^,]*,\s*)$"
)


# one name before "were" or "are" is no subject of its own: it shares a verb with another ("where
# she and Eleanor were sitting") or wishes ("as if Emma were"), and neither one speaks
_PLURAL_VERB = re.compile(r"\s+(?:were|are)\b")


def _subject_of_clause(text: str) -> tuple[str, str] | None:
    """The subject of a sentence that ends in a speech verb ("Isabella, embracing Catherine, thus
    began:"): the last name or pronoun that opens a clause before the verb; else a name with a
    relative clause just before the verb ("Mr. Allen, who had heard it all, said"), or one that
    did something and then spoke ("Seven looked up and said")."""
    sentence = SENTENCE_END.split(text)[-1]
    sentence = re.split(r"(?<=[.!?])\s*(?:--|—)\s*", sentence)[-1]  # "together.--Emma took"
    end = _ENDS_IN_VERB.search(sentence)
    colon = re.search(r":\s*[-—]*\s*$", sentence)  # "She turned to George:" hands the quote on
    if not end or (end.group("verb") not in VERBS and not colon):
        return None
    head = sentence[: end.start()]
    found = [
        m for m in SUBJECT.finditer(head)
        if (m.group("who") in PRONOUNS or not names_no_one(m.group("who")))
        and not _PLURAL_VERB.match(head, m.end())
    ]  # fmt: skip
    relative = _RELATIVE.search(head)
    if found and not relative:
        return found[-1].group("who"), end.group("verb")
    match = relative or _COORDINATED.search(head)
    return (match.group("who"), end.group("verb")) if match else None


# the verb that ends a narration before a quote, its particle and what trails it ("and said,
# without opening its eyes,", "called out to her in an angry tone,", "and saying,")
_LAST_VERB = re.compile(
    r"\b(?P<verb>said|say|saying|cried|crying|exclaimed|exclaiming|called|calling|shouted|"
    r"shouting|whispered|whisper|whispering|remarked|remarking|observed|observing|added|adding|"
    r"replied|replying|answered|answering|asked|asking|began|beginning|continued|continuing|"
    r"murmured|muttered|went|interrupted|exclaim|cry|call|shout|add|reply|answer|ask)"
    r"(?:\s+(?:out|up|on|again|aloud|thus|at once|at last|suddenly|\w+ly))?"
    r"(?P<tail>(?:,?\s+(?:to|in|with|without|at|from|as|across|over|through|while|after)\b"
    r"[^.!?;:\"“”]{0,45}?)?)(?:,?\s+\w+ly)?[,:]?\s*[-—]*$"
)
_OPENER = r"(?:(?:at last|at length|then|now|presently|suddenly|soon|again|instantly)\s+)?"
# the subject of a main clause: at the sentence's start, or after "and", "but" or a semicolon,
# and doing something (a verb in lower case, an aside between commas or dashes, "'s")
_CLAUSE_SUBJECT = re.compile(
    rf"(?:^[\W_]*(?:(?:[Aa]nd|[Bb]ut|[Tt]hen|[Ss]o|Even|Here|Now|At last|At length)\s+)?|"
    rf"(?:[,;]\s*|\b)(?:and|but)\s+{_OPENER}|;\s*{_OPENER})"
    rf"{_WHO}(?=\s+(?!were\b|are\b)[a-z]|\s*,|\s*--|\s*—)"
)
# any subject doing something, where no main clause's is found ("Very soon the Rabbit noticed
# Alice, ... and called out", "before John Thorpe came running upstairs, calling out,")
_ANY_SUBJECT = re.compile(
    r"(?<!\bto )(?<!\bat )(?<!\bwith )(?<!\bof )(?<!\bfor )(?<!\bfrom )(?<!\bby )"
    r"(?<!\bon )(?<!\bin )(?<!\bupon )(?<!\binto )(?<!\bthan )(?<!\bas )(?<!\bwhen )"
    r"(?<!\bwhile )(?<!\bif )(?<!\bthat )(?<!\ba )(?<!\ban )"
    rf"\b{_WHO}(?=\s+(?:\w+ly\s+)?[a-z])"
)
# "the White Rabbit, who said", "Frank was heard to say", "overhearing Mr. Weston whisper", not
# "a Being who whispered"
_WHO_SAID = re.compile(rf"(?<!\ba )(?<!\ban ){_WHO},?\s+who\s+(?:[^,;:\"“”]{{0,40}}\s)?$")
_HEARD = re.compile(rf"{_WHO}\s+(?:was|were)\s+heard\s+to\s+$")
_BARE = re.compile(rf"(?<!\ba )(?<!\ban ){_WHO}\s+$")
_BARE_VERBS = frozenset(
    ["say", "whisper", "exclaim", "cry", "call", "shout", "add", "reply", "answer", "ask"]
)
# whose voice speaks: a name or description, "old" aside ("old Mr. Emerson" is Mr. Emerson, where
# "young Mr. Emerson" may be his son)
_VOICE_OF = re.compile(rf"\s+of\s+(?:old\s+)?(?P<who>{NAME}|{_DESCRIPTION})")
_VOICE = re.compile(r"\b(his|her)\s+voice\s+$")  # "and her voice said:"


def _clean(who: str) -> str:
    """Words that name a speaker without a sentence's opening word ("And Frank Churchill", "The
    Dormouse": "the Dormouse")."""
    first, _, rest = who.partition(" ")
    if first in ("And", "But", "Then", "So", "Even", "Here", "Now") and rest:
        return _clean(rest)
    return f"the {rest}" if first == "The" and rest else who


def _clause_tag(text: str, beside: bool = False) -> tuple[str, str] | None:
    """(words, verb) for a narration whose last sentence ends in a speech verb, said by the
    subject of its main clause ("at last Miss Bartlett rose with a sigh, and said:", "The
    Dormouse shook its head, and said, without opening its eyes,", "the White Rabbit, who said
    in a low voice,", "her voice said:"); None when no subject of a clause opens it. ``beside``:
    only a speaker named right beside the verb ("..., who said", "was heard to say", "heard
    Harriet whisper")."""
    sentence = SENTENCE_END.split(text.strip())[-1]
    sentence = re.split(r"(?<=[.!?])\s*(?:--|—)\s*", sentence)[-1]  # "her father.--Mr. Knightley"
    end = _LAST_VERB.search(sentence)
    if end is None or (end.group("verb") == "went" and "on" not in end.group(0)):
        return None
    head = sentence[: end.start()]
    verb = end.group("verb")
    for pattern in (_WHO_SAID, _HEARD, _BARE):
        match = pattern.search(head)
        who = _clean(match.group("who")) if match else ""
        if match and (who in PRONOUNS or not names_no_one(who)):
            return who, verb
    if beside:
        return None
    if verb in _BARE_VERBS and not re.search(r"\b(?:and|to)\s+(?:\w+ly\s+)?$", head):
        return None  # "Alice heard it say": whoever "it" is, not Alice
    voice = _VOICE.search(head)
    if voice:
        return _POSSESSIVE_PRONOUN[voice.group(1)], verb
    for pattern in (_CLAUSE_SUBJECT, _ANY_SUBJECT):
        found = [
            _clean(m.group("who")) for m in pattern.finditer(head)
            if m.group("who") in PRONOUNS or not names_no_one(_clean(m.group("who")))
        ]  # fmt: skip
        if found:
            return found[-1], verb
    return None


_KIN_WORDS = {"mamma": "mother", "mama": "mother", "papa": "father"}
# "answered Daisy's mamma", "said Emma's father": a relation of a named character
_NAMED_KIN = re.compile(
    rf"^[\W_]*(?P<verb>[a-z]+)\s+(?:the\s+)?(?P<who>{NAME})(?:'s|’s|\s+s)\s+"
    rf"(?P<noun>{'|'.join(sorted(KIN | set(_KIN_WORDS)))})\b"
)


def speech_tag(narration: str, after: bool) -> tuple[str, str] | None:
    """(words naming the speaker, verb) of a speech tag at the start (``after`` a quote) or end of
    narration, or None."""
    text = narration[:120] if after else narration[-200:]
    noun = _NOUN_TAG.match(text) if after else None
    if noun:
        return noun.group("who"), noun.group("verb")
    noun = _PRONOUN_NOUN_TAG.match(text) if after else None
    if noun:
        return _POSSESSIVE_PRONOUN[noun.group("who")], noun.group("verb")
    passive = _PASSIVE.match(text) if after else None
    if passive and passive.group("who") != "I":
        return passive.group("who"), passive.group("verb")
    if after:
        kin = _NAMED_KIN.match(text)
        if kin and kin.group("verb") in VERBS and not names_no_one(kin.group("who")):
            noun = _KIN_WORDS.get(kin.group("noun").lower(), kin.group("noun").lower())
            return f"{clean_name(kin.group('who'))}'s {noun}", kin.group("verb")
    for pattern in _AFTER if after else _BEFORE:
        match = pattern.search(text)
        if match and re.search(r"['’]s$", match.group("who")):
            continue  # "answered Daisy's mamma": a possessive is not who spoke
        # right after a quote, any verb in the past before a name tells who spoke ("asserted
        # Freddy"); elsewhere only a speech verb does ("Freddy nodded" may be a new turn)
        inverted = after and pattern is _AFTER[0]
        # and so does one after a pronoun that goes on the quote's sentence ('"...!" he quavered')
        going_on = after and pattern is _AFTER[1] and re.match(r"[^\w]*[a-z]", text) is not None
        if match and match.group("who").lower() == "the voice":  # "the voice of old Mr. Emerson"
            owner = _VOICE_OF.match(text, match.end("who"))
            if owner and match.group("verb").lower() in VERBS:
                return owner.group("who"), match.group("verb")
        if match and (
            match.group("verb").lower() in VERBS
            or (
                (inverted or going_on)
                and match.group("verb").endswith("ed")
                and match.group("who") != "I"
            )
        ):
            return without_openers(match.group("who")), match.group("verb")
    if not after:
        possessive = _POSSESSIVE_BEFORE.search(text)
        if possessive:
            return possessive.group("who"), "'s ... was"
        saying = _SAYING.search(text)
        if saying and saying.group("who") not in ("I", "he", "she", "He", "She"):
            return clean_name(saying.group("who")), saying.group("verb")
    if after:
        return None
    clause = _clause_tag(text, beside=True) or _subject_of_clause(text)
    if clause and clause[0] not in PRONOUNS and names_no_one(clause[0]):
        clause = None  # "Thus the half-hour crept away, and at last Miss Bartlett ... said:"
    return clause or _clause_tag(text)
