"""Why a take was flagged, in a listener's words: gates, metrics and detail -> reasons.

A flagged utterance is one whose kept take failed a gate; the gate's name ("asr_min_logprob")
means nothing to a producer. :func:`candidate_reasons` turns what one take failed into sentences
about what they will hear, naming the word where there is one: "the word 'Sirrah' is unclear
(heard 'Sarah')", "reads 40% longer than expected", "1.8 s silence after 'river'".
:func:`utterance_reasons` gives an utterance's list: the kept take's reasons when it is flagged,
plus, flagged or not, the words the ASR model doubts in every take alike (a name or rare word
whose pronunciation is worth checking once, or a lexicon entry; more takes do not change it, see
:mod:`verified_tts.selection.consensus`), and a line that passed the speaker gate only because every
take of it sounds alike a little unlike the narrator (listen once). Each :class:`Reason` has a
``kind`` (stable, for programs: the review app and the dub use them), the ``word`` it is about (or
None) and its ``text``. Every phrase lives here, so the manifest, report.html, the dub and the
review app say the same thing.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from verified_tts.selection.consensus import shared_hard_word_positions, take_views, token_words

__all__ = ["Reason", "candidate_reasons", "heard_for", "utterance_reasons"]


@dataclass(frozen=True)
class Reason:
    """One thing a listener would notice: ``kind`` for programs, ``text`` for people."""

    kind: str
    text: str
    word: str | None = None
    flag: bool = True  # False: a note (check once), not a reason the take was flagged

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind, "text": self.text}
        if self.word is not None:
            out["word"] = self.word
        if not self.flag:
            out["flag"] = False
        return out


def _plain(word: str) -> str:
    return re.sub(r"[^\w'’]+", "", word.lower())


def _words(text: str) -> list[str]:
    """Words as a listener counts them: hyphens and dashes split, punctuation dropped."""
    return [w for w in re.split(r"[\s\-–—―]+", text) if _plain(w)]


def heard_for(reference: str, transcript: str, word_index: int) -> str | None:
    """What the transcript has where the reference's ``word_index``-th word (of
    :func:`_words`) is: the aligned words, "" when nothing was heard there, None when it cannot
    be told (no transcript)."""
    import jiwer

    ref = [_plain(w) for w in _words(reference)]
    said = _words(transcript)
    hyp = [_plain(w) for w in said]
    if not ref or not hyp or not 0 <= word_index < len(ref):
        return None if not hyp else ""
    chunks = jiwer.process_words(" ".join(ref), " ".join(hyp)).alignments[0]
    for chunk in chunks:
        if chunk.ref_start_idx <= word_index < chunk.ref_end_idx:
            if chunk.type == "delete":
                return ""
            if chunk.type == "equal":
                return said[chunk.hyp_start_idx + word_index - chunk.ref_start_idx]
            return " ".join(said[chunk.hyp_start_idx : chunk.hyp_end_idx])
    return None


_QUOTES_AND_STOPS = "\"'“”‘’()[],.;:!?"
_MOST_HEARD_WORDS = 3  # what a note quotes as heard in place of one word


def _percent(ratio: float) -> str:
    return f"{abs(ratio - 1.0) * 100:.0f}%"


def _word_at(text: str, fraction: float) -> str | None:
    """The word a reader has reached after ``fraction`` of the text's letters."""
    words = _words(text)
    letters = [len(_plain(w)) for w in words]
    total = sum(letters)
    if not total:
        return None
    reached = 0
    for word, count in zip(words, letters, strict=True):
        reached += count
        if reached >= fraction * total:
            return word.strip(_QUOTES_AND_STOPS)
    return words[-1].strip(_QUOTES_AND_STOPS)


def _unclear(detail: Mapping[str, Any], text: str, worst: int | None) -> Reason:
    words = token_words(detail)
    reference = str(detail.get("reference") or text)
    if worst is None or not words or not 0 <= int(worst) < len(words):
        token = str(detail.get("worst_token", "")).strip()
        return Reason("unclear_word", f"a word is unclear to the ASR model (near '{token}')")
    index, word = words[int(worst)]
    if index is None:  # a punctuation token: the pause or tone there, not a word
        return Reason("unclear_word", f"the reading sounds wrong at '{word}'", word)
    heard = heard_for(reference, str(detail.get("transcript", "")), index)
    if heard == "":
        return Reason("missing_word", f"the word '{word}' is not heard", word)
    if heard is None or _plain(heard) == _plain(word):
        return Reason("unclear_word", f"the word '{word}' is unclear", word)
    return Reason("unclear_word", f"the word '{word}' is unclear (heard '{heard}')", word)


def _duration(metrics: Mapping[str, float], name: str) -> Reason:
    ratio = float(metrics[name])
    what = "the speech runs" if name == "speech_ratio" else "reads"
    if ratio >= 1.0:
        return Reason("too_long", f"{what} {_percent(ratio)} longer than expected for its text")
    return Reason("too_short", f"{what} {_percent(ratio)} shorter than expected for its text")


def _silence(metrics: Mapping[str, float], detail: Mapping[str, Any], text: str) -> Reason:
    seconds = float(metrics["max_internal_silence_s"])
    start = detail.get("longest_silence_start_s")
    lead = float(metrics.get("leading_silence_s", 0.0))
    tail = float(metrics.get("trailing_silence_s", 0.0))
    total = float(metrics.get("duration_s", 0.0)) - lead - tail
    if start is not None and total > seconds:
        word = _word_at(text, (float(start) - lead) / (total - seconds))
        if word:
            return Reason("silence", f"{seconds:.1f} s silence after '{word}'", word)
    return Reason("silence", f"{seconds:.1f} s silence inside the sentence")


def _words_off(metrics: Mapping[str, float], detail: Mapping[str, Any], name: str) -> Reason:
    count = int(round(float(metrics[name])))
    heard = str(detail.get("transcript", "")).strip()
    plural = "s" if count != 1 else ""
    if name == "asr_insertions":
        return Reason("extra_words", f"{count} word{plural} heard that the text does not have "
                      f"(heard '{heard}')")  # fmt: skip
    return Reason("missing_words", f"{count} word{plural} of the text not heard (heard '{heard}')")


def _misheard(detail: Mapping[str, Any], text: str) -> Reason:
    """A take whose words differ from the text's: how many, and the first stretch heard wrong
    with what was heard there, e.g. "'an author' heard as 'and offer'"."""
    import jiwer

    written = _words(str(detail.get("reference") or text))
    said = _words(str(detail.get("transcript", "")))
    ref, hyp = [_plain(w) for w in written], [_plain(w) for w in said]
    if not ref or not hyp:
        return Reason("misheard", "none of the words is heard")
    chunks = [c for c in jiwer.process_words(" ".join(ref), " ".join(hyp)).alignments[0]
              if c.type in ("substitute", "delete")]  # fmt: skip
    wrong = sum(c.ref_end_idx - c.ref_start_idx for c in chunks)
    counted = f"{wrong} of {len(ref)} words" if wrong != 1 else f"1 word of {len(ref)}"
    if not chunks:  # only words added: the insertion gate's reason says which
        heard = " ".join(said)
        return Reason("misheard", f"words are heard that the text does not have (heard '{heard}')")
    first = chunks[0]
    span = [w.strip(_QUOTES_AND_STOPS) for w in written[first.ref_start_idx : first.ref_end_idx]]
    # the first word alone: the report and the review mark it in the text as it is written
    word, text_span = span[0], " ".join(span)
    if first.type == "delete":
        return Reason("misheard", f"{counted} heard differently: '{text_span}' is not heard", word)
    heard_span = " ".join(said[first.hyp_start_idx : first.hyp_end_idx]).strip(",.;:!?")
    return Reason("misheard", f"{counted} heard differently: '{text_span}' heard as "
                  f"'{heard_span}'", word)  # fmt: skip


def candidate_reasons(
    metrics: Mapping[str, float],
    detail: Mapping[str, Any],
    failed: Sequence[str],
    *,
    text: str,
    bounds: Mapping[str, Mapping[str, float]] | None = None,
    take_worst: int | None = None,
) -> list[Reason]:
    """What a listener hears in a take that failed the gates named in ``failed``; ``bounds``
    (metric -> its gate's min/max) lets a reason say what was expected, and ``take_worst`` is
    the take's worst token once the doubt its sentence's takes share is taken off
    (:class:`verified_tts.selection.consensus.TakeView`), the word an ``asr_min_take_logprob``
    failure is
    about."""
    bounds = bounds or {}
    out: list[Reason] = []
    for name in failed:
        if name not in metrics:
            continue
        value = float(metrics[name])
        if name in ("asr_min_logprob", "asr_min_take_logprob", "asr_logprob"):
            worst = detail.get("worst_token_index")
            if name == "asr_min_take_logprob" and take_worst is not None:
                worst = take_worst
            if not any(r.kind in ("unclear_word", "missing_word") for r in out):
                out.append(_unclear(detail, text, None if worst is None else int(worst)))
        elif name in ("asr_insertions", "asr_deletions"):
            out.append(_words_off(metrics, detail, name))
        elif name == "wer":
            out.append(_misheard(detail, text))
        elif name in ("duration_ratio", "speech_ratio", "pace_ratio", "voice_pace_ratio"):
            out.append(_duration(metrics, name))
        elif name == "target_duration_ratio":
            over = "over" if value >= 1.0 else "short of"
            out.append(Reason("slot", f"runs {_percent(value)} {over} its slot"))
        elif name == "max_internal_silence_s":
            out.append(_silence(metrics, detail, text))
        elif name == "leading_silence_s":
            out.append(Reason("silence", f"{value:.1f} s of silence before the speech starts"))
        elif name == "trailing_silence_s":
            out.append(Reason("silence", f"{value:.1f} s of silence after the speech ends"))
        elif name == "clipping":
            out.append(Reason("clipping", f"the audio distorts (clipped in {value:.2%} of it)"))
        elif name == "dropped_frames":
            out.append(Reason("glitch", f"{int(value)} audio frames were dropped: a click or "
                              "skip may be audible"))  # fmt: skip
        elif name in ("speaker", "speaker_take"):
            # speaker_take is the similarity lifted by what the line's takes share: say the
            # similarity itself, and the bound lowered by the same amount
            similarity = float(metrics.get("speaker", value))
            expected = bounds.get(name, {}).get("min")
            if expected is not None:
                expected -= value - similarity
            also = f", at least {expected:.2f} expected" if expected is not None else ""
            out.append(Reason("voice", f"the voice sounds unlike the narrator's (similarity "
                              f"{similarity:.2f}{also})"))  # fmt: skip
        elif name == "emotion":
            out.append(Reason("emotion", "the reading does not carry the emotion asked for"))
        else:
            out.append(Reason("other", f"{name} = {value:.3g} is outside its gate"))
    return out


def utterance_reasons(
    candidates: Sequence[tuple[Mapping[str, float], Mapping[str, Any], Sequence[str]]],
    winner: int,
    flagged: bool,
    *,
    text: str,
    bounds: Mapping[str, Mapping[str, float]] | None = None,
) -> list[Reason]:
    """An utterance's reasons: (metrics, detail, failed gates) per candidate; the kept take's
    reasons when ``flagged``, then notes on words every take leaves doubtful."""
    out = []
    if flagged:
        metrics, detail, failed = candidates[winner]
        view = take_views([d for _, d, _ in candidates])[winner]
        worst = view.worst_index if view is not None else None
        out.extend(
            candidate_reasons(metrics, detail, failed, text=text, bounds=bounds, take_worst=worst)
        )
    voice = _voice_note([metrics for metrics, _, _ in candidates], bounds or {})
    if voice is not None:
        out.append(voice)
    details = [detail for _, detail, _ in candidates]
    for index, word in shared_hard_word_positions(details):
        heard = _heard_in_every_take(details, text, index, word)
        out.append(
            Reason(
                "check_pronunciation",
                f"check the pronunciation of '{word}' once: the ASR model doubts it in every "
                f"take alike{heard} (add a lexicon entry if it is wrong)",
                word,
                flag=False,
            )
        )
    return out


def _voice_note(
    metrics: Sequence[Mapping[str, float]], bounds: Mapping[str, Mapping[str, float]]
) -> Reason | None:
    """A note when the line's best take sounds less like the narrator than the speaker gate asks
    and passes only because every take of the line shares that distance (an exclamation or a
    question read as one; :func:`verified_tts.selection.consensus.shared_voice_shortfall`)."""
    bound = bounds.get("speaker_take", {}).get("min")
    pairs = [
        (float(m["speaker"]), float(m["speaker_take"]))
        for m in metrics
        if "speaker" in m and "speaker_take" in m
    ]
    if bound is None or len(pairs) < 2:
        return None
    best, lifted = max(pairs)
    if not best < bound <= lifted:
        return None
    return Reason(
        "check_voice",
        f"listen to this line once: every take of it sounds a little unlike the narrator's voice "
        f"(similarity {best:.2f} at best, {bound:.2f} asked of a single take), as an "
        "exclamation or a question read on its own often does",
        flag=False,
    )


def _heard_in_every_take(
    details: Sequence[Mapping[str, Any]], text: str, index: int, word: str
) -> str:
    """", heard as 'capturing' in every take" when no take's transcript has ``word`` (the
    ``index``-th word of the reference) and they agree on what is there instead; ", heard as
    'Catrin' or 'Katherine'" when they differ (two at most, the commonest first); "" when a take
    hears it, a transcript is missing, or what is there is a stretch of words the alignment
    cannot pin to this one."""
    heard = []
    for detail in details:
        transcript = detail.get("transcript")
        if transcript is None:
            return ""
        said = heard_for(str(detail.get("reference") or text), str(transcript), index)
        if said is None or _plain(said) == _plain(word) or len(said.split()) > _MOST_HEARD_WORDS:
            return ""
        heard.append(said.strip(_QUOTES_AND_STOPS))
    if not any(heard):
        return ", not heard in any take"
    common = [said for said, _ in Counter(s.lower() for s in heard).most_common(2)]
    shown = [next(s for s in heard if s.lower() == c) for c in common]
    if len(common) == 1:
        return f", heard as '{shown[0]}' in every take"
    quoted = [f"'{s}'" if s else "not at all" for s in shown]
    return f", heard as {quoted[0]} or {quoted[1]}"
