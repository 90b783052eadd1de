"""Content addresses and seeds: the stable hashes that make renders resumable and comparable.

An utterance's key hashes everything that changes its audio (normalised text, voice, emotion, the
generator's identity, the run's base seed). Candidate k's seed is a stable hash of (utterance key,
k), so candidate 0 is exactly what an N=1 render keeps and the first k candidates of an N=8 run
are an N=k run. Identity entries that change only the takes after the first (:data:`LATER_TAKES`,
e.g. Piper's prosody draws, which take 0 never makes) are hashed apart and follow the key as a
tag (``{key}_{tag}``): take 0's key and every take's seed come from the key without the tag, so
take 0 of a render with them is the same take, under the same key, as without them, and the store
reuses it; the keys of later takes carry the tag, so a changed setting never returns a stale take.
Hashes are SHA-256 over canonical JSON, so they are the same on every machine, Python version and
process. A line whose takes read some words in more than one way (pronunciation or text-form
candidates) has a key of its own over the keys of its readings, and take k of it is candidate
k div R of its reading k mod R (R readings), keyed and seeded by that reading's own key: every take
is a pure function of what it says (take 0 of each reading its plain take), and a later render
whose lexicon settles on one reading finds the takes of that reading in the store. A beam search's
keys live here too: the seed of every continuation
derives from (utterance key, step, beam, expansion), its steps are stored under a search key that
covers its settings, process verifiers and speaker reference, and each finished beam is a
candidate under its own key. A candidate's scores are stored under a score context: what they
depend on besides its audio.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

__all__ = [
    "LATER_TAKES",
    "beam_candidate_key",
    "candidate_key",
    "candidate_seed",
    "continuation_seed",
    "readings_key",
    "score_context",
    "search_key",
    "stable_hash",
    "own_key",
    "utterance_key",
]

_SEED_MASK = (1 << 31) - 1  # engines and numpy accept 31-bit seeds everywhere
# generator identity entries that change only the takes after the first (see the module doc)
LATER_TAKES = ("prosody",)
_TAG = "_"  # between an utterance's own key and the tag of what changes its later takes


def stable_hash(value: Any, length: int = 16) -> str:
    """Hex SHA-256 of ``value`` as canonical JSON (sorted keys, no whitespace)."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:length]


def utterance_key(
    spoken: str,
    *,
    voice: str | None,
    emotion: str | None,
    generator: Mapping[str, Any],
    base_seed: int = 0,
    target_duration_s: float | None = None,
    phonemes: Sequence[tuple[str, str]] = (),
) -> str:
    """The content address of one utterance under one generator configuration.

    A dubbing slot (``target_duration_s``) and lexicon phonemes enter the key only when there
    are some, so the same line in two slots is judged twice and other keys do not depend on them.
    The generator's :data:`LATER_TAKES` entries, where it has any, follow the key as a tag.
    """
    own = dict(generator)
    later = {name: own.pop(name) for name in LATER_TAKES if name in own}
    content = {
        "spoken": spoken,
        "voice": voice,
        "emotion": emotion,
        "generator": own,
        "seed": base_seed,
    }
    if target_duration_s is not None:
        content["target_duration_s"] = round(float(target_duration_s), 3)
    if phonemes:  # lexicon phonemes change a phoneme generator's audio
        content["phonemes"] = [list(pair) for pair in phonemes]
    key = stable_hash(content)
    return f"{key}{_TAG}{stable_hash(later, 8)}" if later else key


def own_key(utterance: str) -> str:
    """The utterance's key without the tag of what changes only its later takes."""
    return utterance.split(_TAG, 1)[0]


def readings_key(reading_keys: Sequence[str]) -> str:
    """The key of a line read in several ways: a hash of its readings' utterance keys, in order
    (the first is the line as the book says it)."""
    return stable_hash({"readings": list(reading_keys)})


def candidate_seed(utterance: str, index: int) -> int:
    """Seed of candidate ``index`` of an utterance: stable, independent of N, and the same
    whatever changes only the takes after the first (their draws come from this seed)."""
    digest = hashlib.sha256(f"{own_key(utterance)}:{index}".encode()).digest()
    return int.from_bytes(digest[:8], "big") & _SEED_MASK


def candidate_key(utterance: str, index: int) -> str:
    """Content address of one candidate (its seed follows from the same two values); take 0's
    leaves out the tag of what changes only the later takes."""
    return f"{own_key(utterance) if index == 0 else utterance}-{index:03d}"


def continuation_seed(utterance: str, step: int, beam: int, expansion: int) -> int:
    """Seed of expansion ``expansion`` of live beam ``beam`` at search step ``step``."""
    digest = hashlib.sha256(f"{utterance}:search:{step}:{beam}:{expansion}".encode()).digest()
    return int.from_bytes(digest[:8], "big") & _SEED_MASK


def search_key(
    search: Mapping[str, Any] | None,
    process: Mapping[str, Mapping[str, Any]],
    reference: np.ndarray | None,
) -> str:
    """The key a beam search's steps are stored under: its settings, the identity of every
    process verifier and the speaker reference it was steered by (rounded, so a reference that
    differs in float noise only is the same search)."""
    reference_id = (
        None if reference is None else stable_hash(np.round(np.asarray(reference), 4).tolist())
    )
    return stable_hash(
        {
            "search": search,
            "process": {name: dict(identity) for name, identity in process.items()},
            "reference": reference_id,
        }
    )


def beam_candidate_key(utterance: str, search: str, index: int) -> str:
    """Content address of finished beam ``index`` of a search (``search``: its search key)."""
    return f"{utterance}-beam{search[:8]}-{index:03d}"


def score_context(
    verifiers: str,
    reference: np.ndarray | None,
    *,
    text: str,
    spoken: str,
    emotion: str | None,
    target_duration_s: float | None,
    short_reference: np.ndarray | None = None,
) -> str:
    """What a candidate's scores depend on besides its audio (its key covers the text and the
    generator): the verifiers' identity, the speaker reference (and the short-take one a short
    clip is judged against, named only when there is one, so other contexts keep their keys),
    the text, the emotion and the dub slot."""
    return stable_hash(
        {
            "verifiers": verifiers,
            "reference": None
            if reference is None
            else hashlib.sha256(np.ascontiguousarray(reference, np.float32)).hexdigest(),
            **(
                {}
                if short_reference is None
                else {
                    "short_reference": hashlib.sha256(
                        np.ascontiguousarray(short_reference, np.float32)
                    ).hexdigest()
                }
            ),
            "text": text,
            "spoken": spoken,
            "emotion": emotion,
            "target_duration_s": target_duration_s,
        }
    )
