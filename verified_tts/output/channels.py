"""Channel layouts a dub handles: mono, stereo, 5.1 and 7.1, in FFmpeg's channel order.

A soundtrack's layout is named by its channel count (1 mono, 2 stereo, 6 5.1, 8 7.1; the orders
are FFmpeg's and AAC's: L R C LFE Ls Rs for 5.1, L R C LFE Lb Rb Ls Rs for 7.1).
:func:`bs1770_weights` gives each channel its ITU-R BS.1770 weight (1 for left, right and centre,
1.41 (+1.5 dB) for every surround, 0 for the LFE, which the loudness leaves out);
:func:`dub_channels` places the mono dub as a dubbing stage does: in the centre channel of 5.1 and
7.1, on both channels of stereo (a phantom centre), on the one channel of mono. :func:`match_stem`
says how a music-and-effects stem fits a film of another layout: a mono stem is spread over the
film's front left and right, anything else is one line naming both layouts.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from verified_tts.errors import UserError

__all__ = [
    "LAYOUTS",
    "bs1770_weights",
    "check_layout",
    "dub_channels",
    "layout_name",
    "match_stem",
]

LAYOUTS = {1: "mono", 2: "stereo", 6: "5.1", 8: "7.1"}
_CENTRE = 2  # FL FR FC ... in both 5.1 and 7.1
_SURROUND_WEIGHT = 1.41  # +1.5 dB


def layout_name(channels: int) -> str:
    """``mono``, ``stereo``, ``5.1``, ``7.1``, or ``N channels`` for any other count."""
    return LAYOUTS.get(channels, f"{channels} channels")


def check_layout(channels: int, what: str) -> None:
    """A UserError line for a layout a dub cannot place dialogue in."""
    if channels not in LAYOUTS:
        raise UserError(
            f"{what} has {channels} audio channels: a dub is mixed in mono, stereo, 5.1 or 7.1; "
            "give a film (or stem) with one of those layouts"
        )


def bs1770_weights(channels: int) -> np.ndarray:
    """Each channel's BS.1770 weight in the sum of K-weighted powers."""
    if channels in (6, 8):
        weights = np.full(channels, _SURROUND_WEIGHT)
        weights[:3] = 1.0  # L R C
        weights[3] = 0.0  # LFE
        return weights
    return np.ones(channels)


def dub_channels(dub: np.ndarray, channels: int) -> np.ndarray:
    """The mono dub as (frames, channels): the centre of 5.1/7.1, else every channel."""
    dub = np.asarray(dub, dtype=np.float32).reshape(-1)
    if channels in (6, 8):
        out = np.zeros((dub.size, channels), dtype=np.float32)
        out[:, _CENTRE] = dub
        return out
    return np.repeat(dub[:, None], channels, axis=1)


def match_stem(
    stem_channels: int, film_channels: int, stem: str, film: str
) -> Callable[[np.ndarray], np.ndarray]:
    """How a stem's blocks become the film's layout: as they are when the layouts agree; a mono
    stem on the front left and right (each at -3 dB, the power of the one channel kept);
    anything else is a UserError naming both layouts."""
    check_layout(stem_channels, f"--background {stem}")
    if stem_channels == film_channels:
        return lambda block: block
    if stem_channels == 1:
        gain = np.float32(1 / np.sqrt(2))

        def spread(block: np.ndarray) -> np.ndarray:
            out = np.zeros((block.shape[0], film_channels), dtype=np.float32)
            out[:, 0] = out[:, 1] = block[:, 0] * gain
            return out

        return spread
    film_layout = layout_name(film_channels)
    raise UserError(
        f"--background {stem} is {layout_name(stem_channels)} but {film} is {film_layout}: give "
        f"a music-and-effects stem in {film_layout} (or a mono one, spread over front left/right)"
    )
