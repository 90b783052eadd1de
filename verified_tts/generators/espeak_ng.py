"""The espeak-ng shared library from the ``espeakng-loader`` wheel, opened for one use at a time.

Both the espeak generator (synthesis) and the phonemizer of Piper voices
(``verified_tts.generators.piper_phonemes``) call espeak-ng through ctypes. The library keeps
static state between calls (the pitch-flutter phase, the last voice) that ``espeak_Terminate`` does
not reset, and one process shares one copy of it. So every use opens the library, initialises it,
and closes it again (dlclose), under one process-wide lock: a use never sees what an earlier one
left behind, which is what makes a seed reproduce its audio byte for byte. Opening costs a few
milliseconds. """

from __future__ import annotations

import _ctypes
import ctypes
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from verified_tts.errors import UserError

__all__ = ["AUDIO_OUTPUT_SYNCHRONOUS", "CHARS_UTF8", "EspeakLibrary", "PHONEMES_IPA"]

AUDIO_OUTPUT_SYNCHRONOUS = 2
CHARS_UTF8 = 1
PHONEMES_IPA = 0x02  # espeak_TextToPhonemes phonememode: IPA, UTF-8

# The library is process-global: one lock for every user of it.
_LOCK = threading.Lock()


@dataclass(frozen=True)
class EspeakLibrary:
    """Where the wheel keeps espeak-ng: the shared library and the folder above its data."""

    library_path: str
    data_parent: bytes  # espeak_Initialize wants the folder that *contains* espeak-ng-data

    @classmethod
    def find(cls) -> EspeakLibrary:
        try:
            import espeakng_loader
        except ImportError as error:  # a core dependency, but say how to repair the install
            raise UserError(
                "espeak-ng comes from the 'espeakng-loader' package, which is not installed: "
                "run `pip install espeakng-loader` (or reinstall verified-tts)"
            ) from error
        return cls(
            library_path=str(espeakng_loader.get_library_path()),
            data_parent=os.path.dirname(str(espeakng_loader.get_data_path())).encode(),
        )

    @property
    def data_path(self) -> Path:
        return Path(self.data_parent.decode()) / "espeak-ng-data"

    @contextmanager
    def session(self) -> Iterator[tuple[ctypes.CDLL, int]]:
        """Open and initialise the library; yield it and its sample rate; close it afterwards."""
        with _LOCK:
            lib = ctypes.CDLL(self.library_path)
            _declare(lib)
            sample_rate = int(
                lib.espeak_Initialize(AUDIO_OUTPUT_SYNCHRONOUS, 0, self.data_parent, 0)
            )
            try:
                if sample_rate <= 0:
                    raise UserError(
                        f"espeak-ng failed to initialise from {self.data_path}: "
                        "reinstall the espeakng-loader package"
                    )
                yield lib, sample_rate
            finally:
                lib.espeak_Terminate()
                _ctypes.dlclose(lib._handle)


def _declare(lib: ctypes.CDLL) -> None:
    lib.espeak_Initialize.restype = ctypes.c_int
    lib.espeak_Initialize.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_char_p, ctypes.c_int]
    lib.espeak_SetVoiceByName.argtypes = [ctypes.c_char_p]
    lib.espeak_SetParameter.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int]
    lib.espeak_Synth.argtypes = [
        ctypes.c_void_p,
        ctypes.c_size_t,
        ctypes.c_uint,
        ctypes.c_int,
        ctypes.c_uint,
        ctypes.c_uint,
        ctypes.c_void_p,
        ctypes.c_void_p,
    ]
    lib.espeak_TextToPhonemes.restype = ctypes.c_void_p  # a char* into espeak's own buffer
    lib.espeak_TextToPhonemes.argtypes = [
        ctypes.POINTER(ctypes.c_void_p),
        ctypes.c_int,
        ctypes.c_int,
    ]
