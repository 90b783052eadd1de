import json
import sqlite3

import numpy as np
import pytest
import soundfile as sf

from verified_tts.storage.store import Decision, Store, audio_digest, audio_problem


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


def _put(store, key, audio, sample_rate=16000):
    return store.put_candidate(
        key, utterance="u1", index=0, seed=1, audio=audio, sample_rate=sample_rate, info={}
    )


def test_scores_come_back_only_to_the_same_audio(tmp_path):
    audio = (np.sin(np.linspace(0, 300, 16000)) * 0.5).astype(np.float32)
    record = {"metrics": {"asr_logprob": -0.5}, "detail": {}, "embedding": None}
    with Store(tmp_path) as store:
        first = _put(store, "u1-000", audio)
        assert first.digest == audio_digest(sf.read(tmp_path / first.audio, dtype="int16")[0])
        store.put_scores([("u1-000", "ctx", record)])
    with Store(tmp_path) as store:
        (tmp_path / "audio" / "u1-000.flac").unlink()
        assert store.get_candidate("u1-000") is None and len(store.damaged) == 1
        assert store.get_scores("u1-000", "ctx") is None  # no candidate, no scores
        _put(store, "u1-000", audio)  # generated again, the same samples
        assert store.get_scores("u1-000", "ctx") == record
        store.forget("u1-000")
        _put(store, "u1-000", audio * 0.5)  # generated again, other samples: judged anew
        assert store.get_scores("u1-000", "ctx") is None


def test_a_file_with_other_samples_of_the_same_length_is_damaged(tmp_path):
    audio = (np.sin(np.linspace(0, 300, 8000)) * 0.5).astype(np.float32)
    with Store(tmp_path) as store:
        stored = _put(store, "u1-000", audio, 8000)
    sf.write(tmp_path / stored.audio, audio[::-1].copy(), 8000, subtype="PCM_16")
    with Store(tmp_path) as store:
        assert store.get_candidate("u1-000") is None
        assert store.damaged == [
            "candidate u1-000: its audio file holds other samples than were stored (digest "
            "differs); generated again"
        ]
        assert not (tmp_path / stored.audio).exists()  # dropped, to be generated again
    assert audio_problem(tmp_path / "missing.flac") == "its audio file is missing"


# The schema of stores written before digests were kept.
_OLD_SCHEMA = """
CREATE TABLE candidates (key TEXT PRIMARY KEY, utterance TEXT NOT NULL, idx INTEGER NOT NULL,
    seed INTEGER NOT NULL, sample_rate INTEGER NOT NULL, duration_s REAL NOT NULL, audio TEXT,
    info TEXT NOT NULL);
CREATE TABLE decisions (utterance TEXT NOT NULL, policy TEXT NOT NULL, winner INTEGER NOT NULL,
    flagged INTEGER NOT NULL, record TEXT NOT NULL, PRIMARY KEY (utterance, policy));
CREATE TABLE scores (candidate TEXT NOT NULL, context TEXT NOT NULL, record TEXT NOT NULL,
    PRIMARY KEY (candidate, context));
"""


def test_a_store_from_before_digests_is_migrated(tmp_path):
    audio = (np.sin(np.linspace(0, 300, 16000)) * 0.5).astype(np.float32)
    record = {"metrics": {"asr_logprob": -0.5}, "detail": {}, "embedding": None}
    (tmp_path / "audio").mkdir()
    for key in ("u1-000", "u1-001"):
        sf.write(tmp_path / "audio" / f"{key}.flac", audio, 16000, subtype="PCM_16")
    db = sqlite3.connect(tmp_path / "index.sqlite")
    db.executescript(_OLD_SCHEMA)
    for index, key in enumerate(("u1-000", "u1-001")):
        db.execute(
            "INSERT INTO candidates VALUES (?, 'u1', ?, 1, 16000, 1.0, ?, '{}')",
            (key, index, f"audio/{key}.flac"),
        )
        db.execute("INSERT INTO scores VALUES (?, 'ctx', ?)", (key, json.dumps(record)))
    db.commit()
    db.close()
    (tmp_path / "audio" / "u1-001.flac").unlink()  # damaged before the migration
    with Store(tmp_path) as store:
        intact = store.get_candidate("u1-000")
        assert intact is not None and intact.digest is not None  # taken from the whole file
        assert store.get_scores("u1-000", "ctx") == record
        assert store.get_candidate("u1-001") is None  # nothing proves what it held: judged anew
        _put(store, "u1-001", audio)
        assert store.get_scores("u1-001", "ctx") is None
    with Store(tmp_path) as store:  # the digest was written down: a later loss keeps the scores
        (tmp_path / "audio" / "u1-000.flac").unlink()
        assert store.get_candidate("u1-000") is None
        _put(store, "u1-000", audio)
        assert store.get_scores("u1-000", "ctx") == record


def test_an_empty_candidate_is_stored_without_a_digest_and_found_damaged_later(tmp_path):
    # FLAC cannot hold zero samples: the write succeeds, the read-back does not, so no digest
    # is recorded (nothing crashes mid-render) and the next run regenerates it
    with Store(tmp_path) as store:
        assert _put(store, "u1-000", np.zeros(0, np.float32)).digest is None
    with Store(tmp_path) as store:
        assert store.get_candidate("u1-000") is None
        assert "does not decode" in store.damaged[0]
