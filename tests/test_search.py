"""Beam search (``--search beam``) on the real vLLM engine with the tiny random Orpheus layout.

One engine and one speaker verifier per test process. The tiny model speaks noise, so what these
tests check is the search itself: it ends, keeps at most W beams a step, never passes its budget,
gives the same beams for the same seeds, resumes from the store after an interruption, sends
prefix requests that the engine's prefix cache serves (its own per-request counts), and prunes a
branch whose voice does not match the speaker reference. The Whisper partial-transcript score of a
beam is checked without the engine, on Piper speech whose words are known.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from orpheus_fixtures import engine_test_options, tiny_models, vllm_skip_reason

from verified_tts.config import build_config
from verified_tts.errors import UserError
from verified_tts.generators.base import SynthesisRequest
from verified_tts.selection.search import SearchOptions, prefix_error
from verified_tts.storage.keys import continuation_seed
from verified_tts.storage.store import Store
from verified_tts.text.book import Segment

VLLM_MISSING = vllm_skip_reason()


def on_engine(test):
    """vLLM engine tests: marked, and skipped only under VTTS_SKIP_ENGINE (a missing vllm or
    snac fails them)."""
    skip = pytest.mark.skipif(VLLM_MISSING is not None, reason=VLLM_MISSING or "")
    return pytest.mark.vllm(pytest.mark.slow(skip(test)))


TEXT = "The birch canoe slid on the smooth planks."
VERIFIERS = {"wer": {"enabled": False}, "emotion": {"enabled": False}}


def _config(**search):
    models = tiny_models()
    table = {
        "generator": {
            "name": "orpheus",
            "model": str(models.model),
            "codec": str(models.codec),
            "voice": "tara",
            "orpheus": engine_test_options(),
        },
        "verifiers": VERIFIERS,
        "search": {"strategy": "beam", "width": 2, "expansions": 2, "chunk_s": 0.3, **search},
    }
    return build_config(table, candidates=4)


@pytest.fixture(scope="module")
def loaded():
    from verified_tts.generators.orpheus import shutdown_engine
    from verified_tts.pipeline import Synthesizer

    # test_orpheus's engine when it ran before in this process (the same settings)
    synthesizer = Synthesizer.load(_config())
    yield synthesizer
    shutdown_engine()  # free the engine's memory before the next module's tests


def _synth(loaded, reference=..., **search):
    config = _config(**search)
    return loaded.variant(config, voice_reference=reference)


def _segment(text: str = TEXT) -> Segment:
    return Segment(0, 0, 0, text, text, "paragraph", 1, "end")


def _steps(store: Store, key: str) -> list[dict]:
    rows = store._db.execute(
        "SELECT step, record FROM search_steps WHERE utterance = ? ORDER BY step", (key,)
    ).fetchall()
    import json

    return [json.loads(r) for _, r in rows]


# --- no engine needed -----------------------------------------------------------------------------


def test_options_and_errors():
    with pytest.raises(UserError, match="--search must be one of"):
        SearchOptions(strategy="greedy")
    with pytest.raises(UserError, match="width and expansions"):
        SearchOptions(width=0)
    with pytest.raises(UserError, match="unknown option 'widht'"):
        SearchOptions.from_mapping({"widht": 2})
    with pytest.raises(UserError, match="--budget"):
        SearchOptions(budget_s=-1)
    # best-of-N keys are unchanged unless a budget is set
    assert SearchOptions().identity() is None
    assert SearchOptions(budget_s=5).identity() == {"budget_s": 5}


def test_seeds_derive_from_utterance_step_beam_expansion():
    seeds = {continuation_seed("u", s, b, e) for s in range(3) for b in range(2) for e in range(4)}
    assert len(seeds) == 24 and continuation_seed("u", 1, 0, 0) == continuation_seed("u", 1, 0, 0)
    assert continuation_seed("v", 1, 0, 0) != continuation_seed("u", 1, 0, 0)


def test_prefix_error_catches_a_skipped_word_not_a_cut_one():
    assert prefix_error(TEXT, "the birch canoe sl") == 0.0  # the cut word is not held against it
    assert prefix_error(TEXT, "the canoe slid on the") == pytest.approx(0.25)  # "birch" skipped
    assert prefix_error(TEXT, "") == 0.0
    assert prefix_error(TEXT, "a dog ran home fast") == 1.0


def test_resumed_grammar_starts_on_the_frame_position():
    from verified_tts.generators.codec_lm_grammar import Grammar, resumed_grammar

    spec = {"segments": [{"cycle": [[[0, 10]], [[10, 20]], [[20, 30]]], "min": 3, "step": 3}],
            "stop": [99]}  # fmt: skip
    resumed = Grammar.from_spec(resumed_grammar(spec, [1, 11]))
    assert resumed.start == (0, 2)
    assert not resumed.mask(*resumed.start, 100)[5] and resumed.mask(*resumed.start, 100)[25]
    with pytest.raises(ValueError):
        resumed_grammar(spec, [15])


def test_espeak_cannot_search(small_book: Path, tmp_path: Path):
    from verified_tts.generators import load_generator
    from verified_tts.pipeline import Synthesizer
    from verified_tts.verification import LoadedVerifiers

    config = build_config({"verifiers": {}}, search="beam")
    synth = Synthesizer(load_generator(config.generator), LoadedVerifiers((), {}), config)
    utterances = synth.plan([_segment()])
    with pytest.raises(UserError, match="--search beam needs a codec-LM generator") as err:
        synth.run(utterances, Store(tmp_path / "store"))
    assert "\n" not in str(err.value)


class _SpokenPrefixes:
    """A prefix backend whose "tokens" name partial utterances that Piper speaks: the search's
    own scoring (decode, the real Whisper verifier on partial audio, prefix_error, the weighted
    score) runs on real speech whose words are known."""

    seconds_per_token = 1 / 82
    frame_tokens = 7

    def __init__(self, generator, prefixes):
        self.generator, self.prefixes = generator, prefixes

    def chunk_tokens(self, seconds):
        return 7 * max(1, round(seconds / self.seconds_per_token / 7))

    def decode(self, items):
        requests = [
            SynthesisRequest(request.utterance_key, k, 7, self.prefixes[tokens[0]])
            for k, (request, tokens) in enumerate(items)
        ]
        return self.generator.sample(requests)


def test_partial_transcripts_score_beams_by_the_words_heard(synthesizer_factory, tmp_path):
    from verified_tts.generators import load_generator
    from verified_tts.pipeline import Synthesizer
    from verified_tts.selection.beam_search import BeamSearch, _Beam, _State
    from verified_tts.selection.strategy import RenderContext
    from verified_tts.storage.results import RunStats

    shared = synthesizer_factory(search="beam")
    assert shared.verifiers.get("wer") is not None and "wer" in shared.config.search.process
    # Piper, the embedded default voice: Whisper tiny.en (the default verifier) hears its words
    piper = load_generator(build_config({}).generator)
    synth = Synthesizer(piper, shared.verifiers, shared.config)
    text = "It's easy to tell the depth of a well."
    prefixes = ["It's easy to tell the depth of", "A dog ran home fast and then"]
    search = BeamSearch(synth.config.search, _SpokenPrefixes(piper, prefixes))
    [utterance] = synth.plan([_segment(text)])
    request = SynthesisRequest(utterance.key, 0, 0, utterance.segment.spoken)
    state = _State(utterance, "test", cap=140)
    children = [(state, _Beam(f"s1b0e{k}", [k])) for k in range(len(prefixes))]
    requests = [replace(request, index=k) for k in range(len(prefixes))]
    context = RenderContext(
        generator=piper,
        verifiers=shared.verifiers,
        policy=synth.policy,
        store=Store(tmp_path / "store"),
        stats=RunStats(),
        n=1,
        policy_id="test",
    )
    (right, right_score), (wrong, wrong_score) = search._score(children, requests, context)
    # the right start of the sentence costs nothing (its last word, which a chunk may cut, is
    # not held against it); the wrong one costs about a word for every word heard
    assert right["prefix_error"] == 0.0
    assert wrong["prefix_error"] >= 0.8
    # with no speaker reference, the words alone rank the beams
    assert right_score - wrong_score == pytest.approx(
        synth.config.search.text_weight * wrong["prefix_error"], abs=1e-3
    )


# --- on the engine --------------------------------------------------------------------------------


@on_engine
@pytest.mark.parametrize("width,expansions", [(2, 2)])
def test_search_runs_to_the_end_within_width(loaded, tmp_path, width, expansions):
    synth = _synth(loaded, width=width, expansions=expansions)
    store = Store(tmp_path / "store")
    [utterance] = synth.plan([_segment()])
    [result] = synth.run([utterance], store)
    steps = _steps(store, utterance.key)
    assert steps and not steps[-1]["live"]  # ended: no live beam left
    for record in steps:
        assert len(record["live"]) <= width
    finished = steps[-1]["finished"]
    assert len(result.candidates) == len(finished) >= 1
    assert all(b["reason"] in ("stop", "length") for b in finished)
    chunk = synth._beam_search().chunk
    for c in result.candidates:
        search = c.info["search"]
        assert search["step"] == len(search["path"]) >= 1
        assert c.info["tokens"] <= chunk * search["step"]
        assert all("speaker" not in p["scores"] for p in search["path"])  # no reference here
    # prefix requests: from step 2 on, every prompt holds its parent's tokens, which the
    # engine's prefix cache serves in whole KV blocks (vLLM's own per-request count of cached
    # prompt tokens; a prefix shorter than one block cannot hit)
    search = result.candidates[0].info["search"]
    assert 0 < search["cached_prompt_tokens"] < search["prompt_tokens"]
    stats = synth.generator.stats()
    assert stats["cached_prompt_tokens"] >= search["cached_prompt_tokens"]
    assert synth.stats.tokens_generated == search["search_tokens"]


@on_engine
def test_search_respects_the_budget(loaded, tmp_path):
    synth = _synth(loaded, width=2, expansions=3, budget_s=1.0)
    store = Store(tmp_path / "store")
    [utterance] = synth.plan([_segment()])
    [result] = synth.run([utterance], store)
    budget = synth._beam_search().budget
    spent = result.candidates[0].info["search"]["search_tokens"]
    assert 0 < spent <= budget
    # best-of-N under a budget samples only the candidates whose worst case (their token cap)
    # fits: a hard cap, as for the beams. 1 s holds none of this sentence's 140-token candidates.
    cap = synth._beam_search().backend.max_tokens(
        SynthesisRequest(utterance.key, 0, 0, utterance.segment.spoken, "tara")
    )
    assert budget < cap == 140
    bon = loaded.variant(replace(synth.config, search=SearchOptions(budget_s=1.0)))
    with pytest.raises(UserError, match="cannot hold one best-of-N candidate") as refused:
        bon.run(bon.plan([_segment()]), Store(tmp_path / "bon"), n=8)
    assert "\n" not in str(refused.value) and bon.stats.tokens_generated == 0
    # 3.5 s (287 tokens) holds two of them whole
    bon = loaded.variant(replace(synth.config, search=SearchOptions(budget_s=3.5)))
    [plain] = bon.run(bon.plan([_segment()]), Store(tmp_path / "bon"), n=8)
    fits = bon._beam_search().budget // cap
    assert len(plain.candidates) == fits == 2
    assert 0 < bon.stats.tokens_generated <= bon._beam_search().budget


@on_engine
def test_same_seeds_same_beams_and_resume_after_interruption(loaded, tmp_path, monkeypatch):
    synth = _synth(loaded)
    [utterance] = synth.plan([_segment()])
    [full] = synth.run([utterance], Store(tmp_path / "a"))
    digests = [c.info["token_digest"] for c in full.candidates]

    interrupted = _synth(loaded)
    backend = interrupted._beam_search().backend
    real, calls = backend.extend, []

    def extend_then_die(items):
        calls.append(len(items))
        if len(calls) == 3:
            raise KeyboardInterrupt  # killed during the third step
        return real(items)

    monkeypatch.setattr(backend, "extend", extend_then_die)
    store = Store(tmp_path / "b")
    with pytest.raises(KeyboardInterrupt):
        interrupted.run([utterance], store)
    assert len(_steps(store, utterance.key)) == 2  # two finished steps were committed
    monkeypatch.setattr(backend, "extend", real)
    resumed = _synth(loaded)
    counted = []
    resumed_backend = resumed._beam_search().backend
    monkeypatch.setattr(
        resumed_backend,
        "extend",
        lambda items: counted.append(1) or real.__func__(resumed_backend, items),
    )
    [again] = resumed.run([utterance], store)
    assert [c.info["token_digest"] for c in again.candidates] == digests
    assert again.winner == full.winner
    assert len(counted) == len(_steps(store, utterance.key)) - 2  # only the missing steps ran
    # a third run takes the decision from the store: no search, the same winner
    [third] = _synth(loaded).run([utterance], store)
    assert third.reused and third.winner == full.winner


@on_engine
def test_branch_with_the_wrong_voice_is_pruned(loaded, tmp_path):
    """The reference is one step-1 child's own voice: that child survives, its sibling (whose
    voice is then the wrong one) is pruned; swapping the reference swaps the survivor."""
    from verified_tts.generators.base import SynthesisRequest
    from verified_tts.generators.codec_lm_search import Extension
    from verifiers import Clip

    probe = _synth(loaded, width=1, expansions=2)
    [utterance] = probe.plan([_segment()])
    search = probe._beam_search()
    base = SynthesisRequest(utterance.key, 0, 0, TEXT, "tara", None)
    requests = [replace(base, seed=continuation_seed(utterance.key, 1, 0, e)) for e in range(2)]
    out = search.backend.extend([Extension(r, (), search.chunk) for r in requests])
    audio = search.backend.decode([(r, o.tokens) for r, o in zip(requests, out, strict=True)])
    speaker = loaded.verifiers.get("speaker")
    voices = speaker.embed([Clip(a.audio, a.sample_rate, TEXT) for a in audio])
    assert float(np.dot(voices[0], voices[1])) < 0.999  # two different voices to tell apart
    for chosen in (0, 1):
        synth = _synth(loaded, reference=voices[chosen], width=1, expansions=2)
        store = Store(tmp_path / f"ref{chosen}")
        synth.run([utterance], store)
        first = _steps(store, utterance.key)[0]
        [kept] = first["live"] or first["finished"]
        assert kept["id"] == f"s1b0e{chosen}"
        assert kept["path"][0]["scores"]["speaker"] == pytest.approx(1.0, abs=1e-3)
        assert first["pruned"] == 1


@on_engine
def test_ab_arms_at_equal_budget_and_manifest_search_paths(loaded, tmp_path):
    """`ab --arm best-of-n:2 --arm beam:1x2`: each arm renders under one budget; the beam arm's
    manifest records every finished candidate's search path."""
    import json

    from verified_tts.workflows.ab_search import ab_search

    book = tmp_path / "book.md"
    book.write_text(f"# One\n\n{TEXT}\n", encoding="utf-8")
    config = replace(_config(chunk_s=0.5), search=SearchOptions(chunk_s=0.5))
    result = ab_search(
        book, tmp_path / "ab", config, ["best-of-n:2", "beam:1x2"], synthesizer=loaded
    )
    data = json.loads(result.ab_json.read_text())
    budget_tokens = data["budget_s_per_utterance"] * 24_000 / 2048 * 7
    assert [a["arm"] for a in data["arms"]] == ["best-of-n:2", "beam:1x2"]
    for arm in data["arms"]:
        assert 0 < arm["tokens_generated"] <= arm["utterances"] * budget_tokens + 1e-6
    manifest = json.loads((tmp_path / "ab" / "arms" / "beam-1x2" / "manifest.json").read_text())
    for utterance in manifest["utterances"]:
        for candidate in utterance["candidates"]:
            search = candidate["info"]["search"]
            assert search["path"] and search["path"][-1]["id"] == search["beam"]
            assert search["parent"] == (search["path"][-2]["id"] if search["step"] > 1 else "root")


def test_arms_parse_and_paired_bootstrap():
    from verified_tts.paired import paired_bootstrap
    from verified_tts.selection.search import parse_arm
    from verified_tts.workflows.ab_search import arm_config

    assert parse_arm("best-of-n:8") == ("best-of-n", 8, 1)
    assert parse_arm("beam:2x4") == ("beam", 2, 4)
    for bad in ("beam:2", "best-of-n:0", "greedy:3", "beam:ax4"):
        with pytest.raises(UserError, match="--arm"):
            parse_arm(bad)
    config = build_config({"search": {"chunk_s": 0.5}})
    beam = arm_config(config, "beam:3x2", 12.0).search
    assert (beam.strategy, beam.width, beam.expansions, beam.chunk_s, beam.budget_s) == (
        "beam",
        3,
        2,
        0.5,
        12.0,
    )
    bon = arm_config(config, "best-of-n:4", 12.0)
    assert bon.candidates == 4 and not bon.selection.adaptive and bon.search.budget_s == 12.0
    mean, low, high = paired_bootstrap([0.5, 0.4, 0.6, 0.5], [0.1, 0.2, 0.1, 0.0])
    assert mean == pytest.approx(-0.4) and low <= mean <= high < 0


def test_cli_beam_with_espeak_is_one_error_line(small_book: Path, tmp_path: Path):
    import subprocess
    import sys

    command = [sys.executable, "-m", "verified_tts", "render", str(small_book)]
    command += ["--search", "beam", "--out", str(tmp_path / "out")]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert done.returncode != 0
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "codec-LM generator" in errors[0]
    assert "Traceback" not in done.stderr


@on_engine
def test_search_and_budget_requests_carry_the_lexicon_phonemes(loaded, tmp_path, monkeypatch):
    """Every request a beam search or a budgeted best-of-N makes for an utterance is that
    utterance's request (:meth:`Utterance.request`): lexicon phonemes included, as best-of-N's own
    candidates always had them."""
    phonemes = (("canoe", "kənˈuː"),)
    segment = replace(_segment(), phonemes=phonemes)
    synth = _synth(loaded, width=1, expansions=2)
    [utterance] = synth.plan([segment])
    backend = synth._beam_search().backend
    seen = []
    real_extend, real_decode = backend.extend, backend.decode
    monkeypatch.setattr(
        backend, "extend", lambda items: seen.extend(i.request for i in items) or real_extend(items)
    )
    monkeypatch.setattr(
        backend, "decode", lambda items: seen.extend(r for r, _ in items) or real_decode(items)
    )
    [result] = synth.run([utterance], Store(tmp_path / "beam"))
    assert len(seen) > len(result.candidates) >= 1
    assert {(r.utterance_key, r.phonemes) for r in seen} == {(utterance.key, phonemes)}

    # a budget that holds whole candidates (one that holds none is refused before any work)
    bon = loaded.variant(replace(synth.config, search=SearchOptions(budget_s=60.0)))
    allowance = bon.strategy.backend
    asked = []
    real_max = allowance.max_tokens
    monkeypatch.setattr(allowance, "max_tokens", lambda r: asked.append(r) or real_max(r))
    bon.run([utterance], Store(tmp_path / "bon"), n=4)
    assert asked and all(r.phonemes == phonemes for r in asked)
