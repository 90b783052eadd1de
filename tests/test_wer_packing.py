import numpy as np
import pytest

from verified_tts.generators.base import SynthesisRequest
from verified_tts.generators.espeak import EspeakGenerator, EspeakOptions
from verified_tts.verification import load_verifiers
from verifiers.base import Clip
from verifiers.textnorm import word_error_rate
from verifiers.wer import WerOptions, load_wer_verifier
from verifiers.wer_packing import (
    PackedWindow,
    Slot,
    assemble,
    assign_segments,
    assign_words,
    plan_windows,
    tail,
    timestamped_segments,
)

RATE = 22_050
WRONG = "Help the woman get back to her feet."
SR = 16_000
SENTENCES = [
    "The birch canoe slid on the smooth planks.",
    "Glue the sheet to the dark blue background.",
    "Rice is often served in round bowls.",
]


# ------------------------------------------------------------------------------------------------
# layout


def _plan(texts, sizes, tokens=None, **kw):
    options = {"capacity": 28 * SR, "gap": int(0.8 * SR), "max_clips": 8, "max_tokens": 220}
    options.update(kw)
    return plan_windows(texts, sizes, tokens or [10] * len(texts), **options)


def test_every_clip_once_and_never_two_candidates_of_one_utterance_together():
    texts = [t for t in "abcdefghij" for _ in range(4)]  # 10 utterances x 4 candidates
    sizes = [int((2 + (i % 5) * 0.3) * SR) for i in range(len(texts))]
    windows, alone = _plan(texts, sizes)
    seen = [s.clip for w in windows for s in w.slots] + alone
    assert sorted(seen) == list(range(len(texts)))
    for window in windows:
        utterances = [texts[s.clip] for s in window.slots]
        assert len(set(utterances)) == len(utterances)
        assert window.samples <= 28 * SR and len(window.slots) <= 8


def test_same_utterances_same_order_same_offsets_in_every_window_of_a_group():
    texts = [t for t in "abcdefghijkl" for _ in range(2)]
    sizes = [int((1.5 + (i % 7) * 0.4) * SR) for i in range(len(texts))]
    windows, _ = _plan(texts, sizes, max_clips=5)
    groups = {}
    for window in windows:
        key = tuple(texts[s.clip] for s in window.slots)
        groups.setdefault(key, []).append(window)
    assert all(len(ws) == 2 for ws in groups.values())  # one window per candidate
    for ws in groups.values():
        assert [s.start for s in ws[0].slots] == [s.start for s in ws[1].slots]
        assert {s.clip for s in ws[0].slots}.isdisjoint({s.clip for s in ws[1].slots})
    # clips keep book order inside a window, and the silence between them is at least the gap
    for window in windows:
        for before, after in zip(window.slots, window.slots[1:], strict=False):
            assert after.start - before.end >= int(0.8 * SR)
            assert texts[before.clip] < texts[after.clip]


def test_grouped_by_candidate_count_and_long_clips_left_alone():
    texts = ["a", "a", "b", "b", "c", "d", "long"]
    sizes = [2 * SR] * 6 + [20 * SR]
    windows, alone = _plan(texts, sizes)
    assert alone == [6]
    layouts = sorted(tuple(texts[s.clip] for s in w.slots) for w in windows)
    assert layouts == [("a", "b"), ("a", "b"), ("c", "d")]


def test_token_budget_and_clip_count_split_windows():
    texts = list("abcdef")
    windows, _ = _plan(texts, [SR] * 6, tokens=[100] * 6, max_tokens=220)
    assert [len(w.slots) for w in windows] == [2, 2, 2]
    windows, _ = _plan(texts, [SR] * 6, max_clips=4)
    assert [len(w.slots) for w in windows] == [4, 2]


def test_assemble_and_tail_keep_boundaries():
    audio = [np.full(3, 0.5, np.float32), np.full(2, -0.5, np.float32)]
    window = PackedWindow((Slot(0, 0, 3), Slot(1, 5, 7)), 7)
    packed = assemble(window, audio)
    assert packed.tolist() == [0.5, 0.5, 0.5, 0.0, 0.0, -0.5, -0.5]
    assert tail(window, 1) == PackedWindow((Slot(1, 0, 2),), 2)


def test_transcript_pieces_go_to_the_slot_they_were_heard_in():
    begin = 1000  # first timestamp token id
    ts = lambda s: begin + int(round(s / 0.02))  # noqa: E731
    tokens = [ts(0.0), 1, 2, ts(2.4), ts(2.4), 3, ts(5.0), ts(6.2), 4, 5]
    segments = timestamped_segments(tokens, begin)
    assert segments[0] == (0.0, pytest.approx(2.4), [1, 2])
    assert segments[2][1] == float("inf") and segments[2][2] == [4, 5]
    bounds = [(0.0, 2.5), (3.3, 5.1), (5.9, 8.0)]
    per_slot, clean = assign_segments(segments, bounds)
    assert clean and per_slot == [[1, 2], [3], [4, 5]]
    # one segment over two clips: the caller must split it by word times
    _, clean = assign_segments([(0.0, 5.0, [1, 2, 3])], bounds)
    assert not clean
    words = [(" one", 0.1, 0.5), (" two", 2.2, 2.9), (" three", 3.4, 3.8), (" four", 6.0, 6.3)]
    assert assign_words(words, bounds) == ["one two", "three", "four"]


# ------------------------------------------------------------------------------------------------
# the real bundled tiny.en on real espeak audio


@pytest.fixture(scope="module")
def clips():
    generator = EspeakGenerator(EspeakOptions())
    requests = [
        SynthesisRequest(f"u{i}", k, 100 * i + k, text)
        for i, text in enumerate(SENTENCES)
        for k in range(2)
    ]
    audio = [c.audio for c in generator.sample(requests)]
    made = [Clip(a, RATE, SENTENCES[j // 2]) for j, a in enumerate(audio)]
    # an utterance whose candidates say other sentences than its text: packing must not lend
    # them the words of the clips beside them
    made += [Clip(audio[0], RATE, WRONG), Clip(audio[2], RATE, WRONG)]
    return made


@pytest.fixture(scope="module")
def verifiers_both():
    return load_wer_verifier(WerOptions(packing=False)), load_wer_verifier(WerOptions(packing=True))


@pytest.fixture(scope="module")
def scored(verifiers_both, clips):
    alone, packed = verifiers_both
    return alone.score(clips), packed.score(clips)


def test_packed_transcripts_belong_to_their_own_clip(scored, clips):
    _, packed = scored
    assert all(s.detail["packed"] == 4 for s in packed)  # 4 utterances, 2 windows
    for clip, score in zip(clips[:6], packed[:6], strict=True):
        own = word_error_rate(clip.text, score.detail["transcript"])
        others = [word_error_rate(t, score.detail["transcript"]) for t in SENTENCES]
        assert own == min(others) and own <= 0.6, (clip.text, score.detail["transcript"])
    # the mismatched candidates: transcripts of what they say, not of the woman sentence
    for score, said in zip(packed[6:], SENTENCES[:2], strict=True):
        assert score.metrics["wer"] >= 0.8
        assert word_error_rate(said, score.detail["transcript"]) <= 0.4


def test_packed_logprob_tracks_per_clip_logprob(scored):
    alone, packed = scored
    for a, p in zip(alone, packed, strict=True):
        assert set(a.metrics) == set(p.metrics)
    for scores in (alone, packed):
        right = [s.metrics["asr_logprob"] for s in scores[:6]]
        wrong = [s.metrics["asr_logprob"] for s in scores[6:]]
        assert max(wrong) < min(right) - 1.0
    right_alone = np.array([s.metrics["asr_logprob"] for s in alone[:6]])
    right_packed = np.array([s.metrics["asr_logprob"] for s in packed[:6]])
    assert np.corrcoef(right_alone, right_packed)[0, 1] > 0.3


def test_option_switch_from_the_config_table(verifiers_both):
    alone, packed = verifiers_both
    assert "packing" not in alone.identity() and "packing" in packed.identity()
    loaded = load_verifiers({"wer": {"packing": True, "pack_clips": 4}}, order=("wer",))
    assert loaded.get("wer").options.packing and loaded.get("wer").options.pack_clips == 4
    assert loaded.status["wer"]["identity"]["packing"]["clips"] == 4
    default = load_verifiers({"wer": {}}, order=("wer",))
    assert default.status["wer"]["identity"]["packing"]["clips"] == 8
    per_clip = load_verifiers({"wer": {"packing": False}}, order=("wer",))
    assert "packing" not in per_clip.status["wer"]["identity"]


def test_bad_packing_options_are_one_line_errors():
    from verified_tts.errors import UserError

    with pytest.raises(UserError, match="pack_seconds"):
        load_wer_verifier(WerOptions(packing=True, pack_seconds=45.0))
    with pytest.raises(UserError, match="pack_clips"):
        load_wer_verifier(WerOptions(packing=True, pack_clips=0))


def test_packed_windows_on_two_workers_score_as_one(scored, clips):
    # one window per call, the calls on two workers at once: same scores, in the clips' order
    two = load_wer_verifier(WerOptions(packing=True, workers=2, batch_size=1))
    again = two.score(clips)
    assert [s.metrics for s in again] == [s.metrics for s in scored[1]]
    assert [s.detail for s in again] == [s.detail for s in scored[1]]
