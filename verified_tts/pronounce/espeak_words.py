"""What espeak-ng does with a word: read it from its dictionary or guess it by rule, per dialect.

espeak-ng's phoneme trace (``espeak_SetPhonemeTrace``, what ``espeak-ng -X`` prints) writes
``Found: 'word' [phonemes]`` when a word (or the stem it strips a suffix to) is in the voice's
dictionary, and only ``Translate 'word'`` plus the letter rules it applied when it is not. A word
read wholly by rule is a guess: the words worth offering other readings of. The trace goes to a
temporary file through the C library's ``fopen``; each word is read alone, in one opening of the
library per call. The same opening gives each English dialect's reading of the word.
"""

from __future__ import annotations

import ctypes
import os
import tempfile
from collections.abc import Sequence

from verified_tts.generators.espeak_ng import CHARS_UTF8, PHONEMES_IPA, EspeakLibrary
from verified_tts.generators.piper_phonemes import espeak_clauses_many

__all__ = ["DIALECTS", "by_rule", "dialect_readings"]

_TRACE = 0x08  # espeakPHONEMES_TRACE
# espeak-ng's English voices besides the Piper voice's own (en-us), as its data names them
DIALECTS = ("en-us", "en", "en-gb-x-rp", "en-029", "en-gb-scotland", "en-us-nyc")


def _libc() -> ctypes.CDLL:
    libc = ctypes.CDLL(None)
    libc.fopen.restype = ctypes.c_void_p
    libc.fopen.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
    libc.fclose.argtypes = [ctypes.c_void_p]
    return libc


def by_rule(
    words: Sequence[str], voice: str = "en-us", library: EspeakLibrary | None = None
) -> dict[str, bool]:
    """Per word: True where espeak-ng's ``voice`` found neither it nor a stem of it in its
    dictionary (it guessed the word from spelling rules)."""
    library = library or EspeakLibrary.find()
    libc = _libc()
    handle, path = tempfile.mkstemp(suffix=".trace")
    os.close(handle)
    traces: list[tuple[int, int]] = []
    try:
        with library.session() as (lib, _rate):
            lib.espeak_SetVoiceByName(voice.encode())
            lib.espeak_SetPhonemeTrace.argtypes = [ctypes.c_int, ctypes.c_void_p]
            for word in words:
                stream = libc.fopen(path.encode(), b"w")
                lib.espeak_SetPhonemeTrace(_TRACE, stream)
                buffer = ctypes.create_string_buffer(word.encode("utf-8") + b"\0")
                pointer = ctypes.c_void_p(ctypes.addressof(buffer))
                while pointer.value:
                    lib.espeak_TextToPhonemes(ctypes.byref(pointer), CHARS_UTF8, PHONEMES_IPA)
                lib.espeak_SetPhonemeTrace(0, None)
                libc.fclose(stream)
                with open(path, encoding="utf-8", errors="replace") as trace:
                    text = trace.read()
                traces.append((text.count("Found: '"), text.count("Translate '")))
    finally:
        os.unlink(path)
    pairs = zip(words, traces, strict=True)
    return {word: found == 0 and translated > 0 for word, (found, translated) in pairs}


def dialect_readings(
    words: Sequence[str], dialects: Sequence[str] = DIALECTS, library: EspeakLibrary | None = None
) -> dict[str, list[tuple[str, str]]]:
    """Per word, (dialect, phonemes) for each espeak-ng English dialect here, the first
    dialect's reading first; a dialect the installed data lacks is left out."""
    from verified_tts.errors import UserError

    out: dict[str, list[tuple[str, str]]] = {word: [] for word in words}
    for dialect in dialects:
        try:
            read = espeak_clauses_many(list(words), dialect, library)
        except UserError:
            continue
        for word, clauses in zip(words, read, strict=True):
            phonemes = " ".join(c.phonemes for c in clauses if c.phonemes).strip()
            if phonemes:
                out[word].append((dialect, phonemes))
    return out
