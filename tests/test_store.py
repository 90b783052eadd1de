import numpy as np
import pytest

from verified_tts.store import Decision, Store


def test_candidates_round_trip_and_survive_reopen(tmp_path):
    audio = (np.sin(np.linspace(0, 200, 22050)) * 0.5).astype(np.float32)
    with Store(tmp_path / "store") as store:
        stored = store.put_candidate(
            "u1-000",
            utterance="u1",
            index=0,
            seed=42,
            audio=audio,
            sample_rate=22050,
            info={"prosody": {"rate": 160}},
        )
        assert (tmp_path / "store" / stored.audio).exists()
        store.put_decision(Decision("u1", "p", 0, False, {"candidates": []}))
    with Store(tmp_path / "store") as store:
        again = store.get_candidate("u1-000")
        assert again is not None and again.seed == 42 and again.info["prosody"]["rate"] == 160
        loaded = store.load_audio(again)
        assert np.max(np.abs(loaded - audio)) < 1e-3  # 16-bit FLAC
        assert store.get_decision("u1", "p").winner == 0
        assert store.get_decision("u1", "other") is None
        assert store.get_candidate("nope") is None


def test_no_temporary_files_left_and_missing_file_means_not_generated(tmp_path):
    with Store(tmp_path) as store:
        stored = store.put_candidate(
            "k",
            utterance="u",
            index=0,
            seed=1,
            audio=np.zeros(100, np.float32),
            sample_rate=8000,
            info={},
        )
        assert sorted(p.name for p in (tmp_path / "audio").iterdir()) == ["k.flac"]
        (tmp_path / stored.audio).unlink()
        assert store.get_candidate("k") is None


def test_drop_audio_for_winners_only(tmp_path):
    with Store(tmp_path) as store:
        for k in range(3):
            store.put_candidate(
                f"u-{k}",
                utterance="u",
                index=k,
                seed=k,
                audio=np.zeros(800, np.float32),
                sample_rate=8000,
                info={},
            )
        store.drop_audio(["u-1", "u-2"])
        assert store.get_candidate("u-0").audio is not None
        dropped = store.get_candidate("u-1")
        assert dropped.audio is None
        with pytest.raises(FileNotFoundError):
            store.load_audio(dropped)
        assert not (tmp_path / "audio" / "u-1.flac").exists()


def test_scores_are_kept_per_context_and_dropped_with_a_damaged_candidate(tmp_path):
    audio = (np.sin(np.linspace(0, 200, 16000)) * 0.5).astype(np.float32)
    record = {"metrics": {"asr_logprob": -0.25}, "detail": {"transcript": "a"}, "embedding": None}
    with Store(tmp_path / "store") as store:
        store.put_candidate(
            "u1-000", utterance="u1", index=0, seed=1, audio=audio, sample_rate=16000, info={}
        )
        store.put_scores([("u1-000", "ctx", record)])
    with Store(tmp_path / "store") as store:
        assert store.get_scores("u1-000", "ctx") == record
        assert store.get_scores("u1-000", "another reference") is None
        (tmp_path / "store" / "audio" / "u1-000.flac").unlink()
        assert store.get_candidate("u1-000") is None  # damaged: generated again, scored again
        assert store.get_scores("u1-000", "ctx") is None
