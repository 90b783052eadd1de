"""Turn-taking: who says the untagged lines of a conversation, from the tagged lines around them.

The sieve's earlier stages (:mod:`verified_tts.casting.sieve`) give a speaker to the lines they can
tell by a tag, a pronoun, the narration's subject or continued speech: the anchors.
:func:`fill_turns` then fills the lines between them as two people take turns. A chapter falls into
scenes of dialogue lines; a short paragraph of narration between two lines ("Freddy nodded.") does
not end a scene, a long one does, and so does a long narration that opens a line (not one that comes
after its quotes: the line is still answered). In a scene, an untagged line is said by the nearest
anchor's speaker when an even number of lines lies between them, else by that speaker's partner:
the one the anchor before the line answered, when the line just before the anchor is tagged to
someone else (A, B, then B's answerer is A again, whoever speaks after), else whom the anchor
addressed by name, else the nearest other speaker in the scene before the line (the one the
anchor's speaker was answering), else after it, else the last other person the narration named
before or in the scene. The anchors on both sides vote; a line that answers a line addressed to
someone by name ("..., Lizzy?") is theirs, unless narration comes between the two; a line that
names someone, calling them or not ("So George says."), is not theirs: a turn that falls to them
goes to the nearest other tagged speaker but those of the lines just before and after it; a turn
that gives the answer to a woman when the line before called its listener "sir" (or to a man after
"ma'am") is less sure. Confidence is how often such turns were right on the development novels:
by how many people talk, whether both sides agree, whether the line is the anchor's speaker again
or the partner's answer, higher when the line before named the one whose turn it is, lower with
every line counted from the anchor.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

__all__ = ["Guess", "Line", "fill_turns"]

SCENE_BREAK = 700  # characters of narration between two lines that end a scene
_STEP = 0.015  # confidence lost per line counted from an anchor
_NEAR = 6  # lines either side whose tagged speakers count as the people talking
# confidence by how many people were heard near the line (3: three or more; 1: the partner was
# only named), whether tagged lines on both sides agree on the turns, and whether the line is the
# anchor's own speaker again (an even count of lines away) or their partner's answer: how often
# such turns were right on the development novels, next to a tag one line away (two people
# between agreeing tags, an answer: 88%; two people after the last tag, an answer: 64%; three or
# more with tags that disagree, an answer: 47%, the same speaker again: 60%)
_SURE = {
    (1, False, False): 0.6, (1, False, True): 0.8,
    (1, True, False): 0.69, (1, True, True): 0.81,
    (2, False, False): 0.64, (2, False, True): 0.72,
    (2, True, False): 0.88, (2, True, True): 0.88,
    (3, False, False): 0.47, (3, False, True): 0.6,
    (3, True, False): 0.66, (3, True, True): 0.64,
}  # fmt: skip
# an anchor less sure than a tag makes its turns less sure, but by half as much: a turn counted
# from a pronoun tag of 0.6 was right 59% of the time where one from a tag was right 70%
_ANCHOR_WEIGHT = 0.5
# a turn that answers the line before, which named its speaker, is surer: right 92% of the time
# on the development novels, whatever the people and tags around it
_ADDRESSED = 0.2
# a line that names the one whose turn it is, given to the nearest other speaker: right 60% of
# the time on the development novels
_UNNAMED = 0.5
_CALLED_AMISS = 0.2  # a turn given to a woman the line before called "sir" (or the reverse)
_COURTESY = {"male": "'sir'", "female": "'ma'am'"}
_RECENT = 4  # narration paragraphs before a scene whose names can be in it


@dataclass(frozen=True)
class Guess:
    """Who speaks a paragraph's quotes (None: nobody found), why, and how sure (0..1)."""

    speaker: str | None
    reason: str
    confidence: float
    addressees: tuple[str, ...] = ()
    tagged: bool = False  # an explicit tag or continued speech decided it
    pronoun: str | None = None  # the gender of a pronoun tag ("she said") that decided it
    # quotes of the paragraph a tag of their own gives to someone else: (span, speaker, why)
    own: tuple[tuple[int, str, str], ...] = ()


@dataclass(frozen=True)
class Line:
    """A paragraph as the turn stage sees it: its guess (None for narration), the narration's
    length and the characters it names (in order)."""

    guess: Guess | None
    narration: int
    named: tuple[str, ...] = ()
    continues: bool = False  # goes on with the speech of the line before: not a turn of its own
    calls: str | None = None  # the gender of whom the line calls "sir" or "ma'am"
    trail: int | None = None  # the narration after its last quote (None: all of it)
    # a turn that is no paragraph's quotes: a narration in which someone speaks ("She asked what
    # he meant."), or the last quote of the paragraph before, another's; its guess is dropped
    reported: bool = False
    said: tuple[str, ...] = ()  # the characters its quotes name: not who says them


def _scenes(lines: Sequence[Line]) -> list[list[int]]:
    """Indices of dialogue lines, grouped into scenes."""
    scenes: list[list[int]] = []
    gap = SCENE_BREAK + 1
    for index, line in enumerate(lines):
        if line.guess is None:
            gap += line.narration
            continue
        if line.continues and not line.guess.speaker:
            continue
        # the narration before the line's first quote counts towards the gap before it
        lead = line.narration - (line.narration if line.trail is None else line.trail)
        if gap + lead > SCENE_BREAK or not scenes:
            scenes.append([])
        scenes[-1].append(index)
        # a long narration ends the scene after the line, unless it comes before the line's
        # quotes ('... a different explanation: "It was all pride!"'), which others answer
        after = line.narration if line.trail is None else line.trail
        gap = after if after > SCENE_BREAK else 0
    return scenes


def _present(lines: Sequence[Line], scene: list[int]) -> list[str]:
    """Characters named around a scene: in the narration just before it and inside it, the most
    named first."""
    first = scene[0]
    start = first
    seen = 0
    while start > 0 and lines[start - 1].guess is None and seen < _RECENT:
        start -= 1
        seen += 1
    names: list[str] = []
    for index in range(start, scene[-1] + 1):
        names.extend(lines[index].named)
    counts = Counter(names)  # the most named first, then the latest
    return sorted(dict.fromkeys(reversed(names)), key=lambda n: -counts[n])


def _partner(
    speaker: str,
    guesses: Sequence[Guess],
    anchors: Sequence[int],
    position: int,
    present: Sequence[str],
) -> str | None:
    """The other person talking with ``speaker`` near ``position``: whom their lines addressed by
    name, the nearest other speaker of the scene before the line (the one they were answering),
    else after it, or the latest other person named around it."""
    for anchor in sorted(anchors, key=lambda i: abs(i - position))[:2]:
        if guesses[anchor].speaker == speaker:
            for who in guesses[anchor].addressees:
                if who != speaker:
                    return who
    others = [i for i in anchors if guesses[i].speaker != speaker]
    before = [i for i in others if i < position]  # whom they were answering, if anyone
    if others:
        return guesses[min(before or others, key=lambda i: abs(i - position))].speaker
    return next((who for who in present if who != speaker), None)


def _answered(guesses: Sequence[Guess], anchor: int, position: int) -> str | None:
    """Whom the anchor before a line was answering: the speaker the sieve gave the line just
    before the anchor, if someone else (the line answers the anchor back for them)."""
    if anchor >= position or anchor == 0:
        return None
    before, speaker = guesses[anchor - 1].speaker, guesses[anchor].speaker
    if before and before != speaker:
        return before
    return None


def _nearest_unnamed(
    guesses: Sequence[Guess], anchors: Sequence[int], position: int, named: Sequence[str]
) -> str | None:
    """The tagged speaker nearest a line whom it does not name, other than those of the lines
    just before and after it (one does not answer oneself)."""
    beside = {guesses[a].speaker for a in anchors if abs(a - position) == 1}
    for anchor in sorted(anchors, key=lambda a: abs(a - position)):
        if guesses[anchor].speaker not in (*named, *beside):
            return guesses[anchor].speaker
    return None


def _break(lines: Sequence[Line], scene: Sequence[int], left: int, right: int) -> int:
    """Where two anchors that cannot both keep the turns were parted: after the line before the
    longest narration between them, else halfway."""
    gaps = [
        (sum(lines[i].narration for i in range(scene[p] + 1, scene[p + 1])), p)
        for p in range(left, right)
    ]
    longest, at = max(gaps, key=lambda g: (g[0], -g[1]))
    return at if longest else (left + right - 1) // 2


def _fill_scene(
    lines: Sequence[Line], scene: Sequence[int], untie: bool, gender: Callable[[str], str | None]
) -> dict[int, Guess]:
    """Guesses for the untagged lines of one scene, by paragraph index."""
    guesses = [lines[i].guess for i in scene]
    anchors = [p for p, g in enumerate(guesses) if g.speaker]
    present = _present(lines, scene)
    filled: dict[int, Guess] = {}
    if not anchors:
        return filled
    # each untagged line belongs to the anchor it is counted from, and how far it is from it
    # position -> (anchor, closed: between two anchors that agree, the other one of those)
    owner: dict[int, tuple[int, bool, int | None]] = {}
    for p in range(anchors[0]):
        owner[p] = (anchors[0], False, None)
    for p in range(anchors[-1] + 1, len(guesses)):
        owner[p] = (anchors[-1], False, None)
    for left, right in zip(anchors, anchors[1:], strict=False):
        if right - left < 2:
            continue
        same = guesses[left].speaker == guesses[right].speaker
        if same == ((right - left) % 2 == 0):  # the turns between them agree with both
            for p in range(left + 1, right):
                near, far = (left, right) if p - left <= right - p else (right, left)
                owner[p] = (near, True, far)
        else:
            cut = _break(lines, scene, left, right)
            for p in range(left + 1, right):
                owner[p] = (left if p <= cut else right, False, None)
    for position, (anchor, closed, far) in owner.items():
        guess = guesses[position]
        if guess.pronoun and not untie:  # "she said" with no woman in sight: not a turn's
            continue
        speaker = guesses[anchor].speaker
        distance = abs(position - anchor)
        if distance % 2 == 0:
            who = speaker
            why = f"turn-taking: {who} again, {distance} lines from their tagged one"
        else:
            other = guesses[far].speaker if far is not None else speaker
            answered = _answered(guesses, anchor, position)
            if answered:
                other = answered
            if other == speaker:
                other = _partner(speaker, guesses, anchors, position, present)
            who = other
            why = f"turn-taking: {who} answers {speaker}"
        heard = {guesses[a].speaker for a in anchors if abs(a - position) <= _NEAR}
        parties = min(len(heard), 3) if who in heard else 1  # a partner only named: unsure
        sure = 1 - _ANCHOR_WEIGHT * (1 - min(guesses[anchor].confidence / 0.95, 1.0))
        again = distance % 2 == 0
        confidence = _SURE[parties, closed, again] * sure - _STEP * (distance - 1 - again)
        before = guesses[position - 1] if position > 0 else None
        # narration between the two lines ("Miss Bartlett read the letter in silence.") lets
        # the one addressed answer without words: the turns go on from whoever speaks next
        between = position > 0 and any(
            lines[i].guess is None for i in range(scene[position - 1] + 1, scene[position])
        )
        named = False
        if before and before.addressees and before.addressees[0] != before.speaker and not between:
            addressed = before.addressees[0]  # "..., Lizzy?" is answered by Lizzy
            if addressed == who:
                confidence = min(confidence + _ADDRESSED, 0.95)
                named = True
            elif addressed not in guess.addressees:
                who, why = addressed, f"{addressed} answers, addressed by name in the line before"
                confidence = 0.6
                named = True
        called = lines[scene[position - 1]].calls if position > 0 and not between else None
        if called and who and not named and gender(who) not in (None, called):
            # the line before called its listener "sir", and the turns give the answer to a woman
            why = f"{why}, though the line before calls its listener {_COURTESY[called]}"
            confidence -= _CALLED_AMISS
        named_in_line = (*guess.addressees, *lines[scene[position]].said)
        if who is not None and who in named_in_line:
            # the line calls or names the one whose turn it is, so it is not theirs: the turns
            # went astray, and it is likelier the nearest other speaker's
            why = f"turn-taking: the line names {who}, whose turn it is"
            who = _nearest_unnamed(guesses, anchors, position, named_in_line)
            why = f"{why}; {who} speaks nearest"
            confidence = _UNNAMED
        if who is None:
            continue
        filled[scene[position]] = replace(
            guess, speaker=who, reason=why, confidence=round(max(confidence, 0.0), 3)
        )
    return filled


def fill_turns(lines: Sequence[Line], gender: Callable[[str], str | None]) -> list[Guess | None]:
    """Each paragraph's guess with the untagged lines of every scene filled by turn-taking. A
    pronoun tag ("she said") is read first as a turn: when the one whose turn it is has the
    pronoun's gender, it is them; else the pronoun's own resolution stands."""
    untied = [
        replace(line, guess=replace(line.guess, speaker=None))
        if line.guess and line.guess.pronoun
        else line
        for line in lines
    ]
    turns = _fill(untied, untie=True, gender=gender)
    settled = []
    for line, turn in zip(lines, turns, strict=True):
        guess = line.guess
        turned = turn.speaker if turn and guess and guess.pronoun else None
        if turned and gender(turned) == guess.pronoun and turned != guess.speaker:
            pronoun = "she" if guess.pronoun == "female" else "he"
            reason = f"'{pronoun}' with a speech verb: {turned}, whose turn it is"
            # right 62% of the time on the development novels (90 of 144)
            guess = replace(guess, speaker=turned, reason=reason, confidence=0.62)
        settled.append(replace(line, guess=guess))
    return _fill(settled, untie=False, gender=gender)


def _fill(
    lines: Sequence[Line], untie: bool, gender: Callable[[str], str | None]
) -> list[Guess | None]:
    """Turns for every scene; ``untie``: also for lines a pronoun tag left to the turns."""
    result = [line.guess for line in lines]
    for scene in _scenes(lines):
        for index, guess in _fill_scene(lines, scene, untie, gender).items():
            result[index] = guess
    return result
