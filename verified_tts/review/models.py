"""The render's own pipeline, rebuilt for a review: its config, its models (loaded once), its store.

:class:`Models` rebuilds the render's settings from the manifest
(:func:`~verified_tts.workflows.rerender.original_config`, the one place that will read the
manifest's whole recorded configuration), loads the generator and verifiers the first time a
line must be rendered, refuses verifiers other than the render's, and renders lines the way
``rerender`` does: scored one clip at a time against the centroid of the book's other winners
(or the ``--voice-ref``). A dub's lines are rendered under the dub's policy, each in its cue's
slot.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np

from verified_tts.errors import UserError
from verified_tts.output.manifest import Manifest, UtteranceRecord, read_manifest
from verified_tts.storage.store import STORE_DIR, Store

if TYPE_CHECKING:
    from verified_tts.cast import Cast
    from verified_tts.config import RenderConfig
    from verified_tts.pipeline import Synthesizer, Utterance, UtteranceResult
    from verified_tts.review.session import ReviewSession
    from verified_tts.text.book import Segment
    from verified_tts.text.lexicon import Lexicon

__all__ = ["Models"]


class Models:
    """The render's pipeline for one review (see the module docstring)."""

    def __init__(self, session: ReviewSession, synthesizer: Synthesizer | None = None) -> None:
        self.session = session
        self._config: RenderConfig | None = None
        self._synthesizer: Synthesizer | None = synthesizer  # loaded models to use, if given
        self._base: Synthesizer | None = None
        self._embeddings: dict[str, np.ndarray] | None = None
        self._lock = threading.Lock()

    @property
    def manifest(self) -> Manifest:
        return self.session.manifest

    @property
    def loaded(self) -> bool:
        return self._base is not None

    def config(self) -> RenderConfig:
        if self._config is None:
            from verified_tts.workflows.rerender import original_config

            self._config = original_config(self.manifest, synthesizer=self._synthesizer)
        return self._config

    def lexicon(self) -> Lexicon | None:
        from verified_tts.text.lexicon import load_lexicon

        path = self.config().production.lexicon
        return load_lexicon(path) if path else None

    def cast(self) -> Cast:
        """The cast file the render spoke its dialogue with (a one-line error without one)."""
        from verified_tts.cast import read_cast

        config = self.config()
        if not config.production.cast:
            raise UserError(
                "this render has no cast file: render with --cast cast.toml (`verified-tts cast "
                "BOOK` writes one) to give quotes to characters"
            )
        return read_cast(config.production.cast, voices_dir=config.voices_dir)

    def _dub_options(self) -> dict[str, Any]:
        path = self.session.out / str(self.manifest.dub)
        try:
            return dict(json.loads(path.read_text(encoding="utf-8")))
        except (OSError, ValueError) as error:
            raise UserError(f"cannot read {path} ({error}): run `verified-tts dub` again") from None

    def base(self) -> Synthesizer:
        """The render's generator and verifiers under its policy (a dub's under the dub's)."""
        with self._lock:
            if self._base is None:
                from verified_tts.pipeline import Synthesizer
                from verified_tts.workflows.rerender import check_same_render

                config = self.config()
                if self._synthesizer is None:
                    self._synthesizer = Synthesizer.load(config)
                base = self._synthesizer.variant(config)
                if self.manifest.dub:
                    from verified_tts.workflows.dub import dubbing_synthesizer

                    speed = float(self._dub_options().get("options", {}).get("speed_limit", 1.25))
                    base = dubbing_synthesizer(base, replace(config.dub, speed_limit=speed))
                check_same_render(self.manifest, base)
                self._base = base
            return self._base

    # planning ---------------------------------------------------------------------------------
    def segment(self, record: UtteranceRecord) -> Segment:
        """The segment a record was rendered from (what its key is made of)."""
        from verified_tts.text.book import Segment

        said = record.speaker or {}
        return Segment(
            chapter=record.chapter,
            paragraph=record.paragraph or 0,
            sentence=0,
            text=record.text,
            spoken=record.spoken or record.text,
            kind=record.kind or "paragraph",  # type: ignore[arg-type]
            line=record.line or 0,
            pause_after="sentence",
            emotion=record.emotion,
            voice=record.voice,
            phonemes=tuple(record.phonemes),
            lexicon=tuple(record.lexicon),
            speaker=said.get("name"),
            speaker_reason=said.get("why"),
            speaker_confidence=said.get("confidence"),
            speaker_guess=said.get("guess"),
        )

    def _target(self, position: int) -> float | None:
        """A dub line's slot (the seconds its take must fill); None for a book's line."""
        if not self.manifest.dub:
            return None
        cue = self.session.dub_cues[position]
        if cue is None:
            raise UserError("dub.json has no cue for this line: run `verified-tts dub` again")
        return float(cue["slot_seconds"])

    def utterance(
        self, position: int, record: UtteranceRecord, segment: Segment | None = None
    ) -> Utterance:
        """The utterance to render for ``record`` at ``position`` (as it is, or as ``segment``
        now says it)."""
        base = self.base()
        target = self._target(position)
        readings = None
        if segment is None and base.config.pronunciation.text_forms:  # planned as rendered
            from verified_tts.pronounce.book import form_readings

            readings = form_readings([self.segment(record)], base.config.pronunciation)
        (utterance,) = base.plan([segment or self.segment(record)], [target], readings)
        if segment is None and utterance.key != record.key:
            raise UserError(
                "this render's settings cannot be rebuilt from its manifest (the line's key "
                "differs): use `verified-tts rerender` with the render's --config"
            )
        return utterance

    # rendering --------------------------------------------------------------------------------
    def reference(self, exclude: Sequence[str], voice: str | None = None) -> np.ndarray | None:
        """The speaker reference for lines of ``voice`` rendered alone: the centroid of that
        voice's other winners (the ``--voice-ref`` for the render's own voice)."""
        from verified_tts.workflows.rerender import book_reference

        base = self.base()
        if base.voice_reference is not None and voice == base.config.generator.voice:
            return base.voice_reference
        if self._embeddings is None:
            n = int(self.manifest.n or base.config.candidates)
            embeddings = {}
            with Store(self.session.out / STORE_DIR) as store:
                for record in self.manifest.utterances:
                    decision = store.get_decision(record.key, base.policy_id(n, record.voice))
                    vector = decision.record.get("embedding") if decision else None
                    if vector:
                        embeddings[record.key] = np.asarray(vector, dtype=np.float32)
            self._embeddings = embeddings
        skip = set(exclude)
        voices = {record.key: record.voice for record in self.manifest.utterances}
        others = [
            tuple(v)
            for k, v in self._embeddings.items()
            if k not in skip and voices.get(k) == voice
        ]
        return book_reference(base, others, voice)

    def more(self, utterance: Utterance, n: int, key: str) -> UtteranceResult:
        """``utterance`` at N=``n``: its stored takes reused, the rest generated and verified."""
        from verified_tts.workflows.rerender import more_candidates

        base = self.base()
        with Store(self.session.out / STORE_DIR) as store:
            reference = self.reference([key], utterance.voice)
            result, _ = more_candidates(base, base.config, utterance, n, store,
                                        reference=reference)  # fmt: skip
        return result

    def render(self, utterances: Sequence[Utterance]) -> list[UtteranceResult]:
        """Render lines whose spoken text changed, under the render's policy, scored per clip."""
        from verified_tts.workflows.rerender import scored_per_clip

        base = self.base()
        keys = [u.key for u in utterances]
        results: list[UtteranceResult | None] = [None] * len(utterances)
        for voice in dict.fromkeys(u.voice for u in utterances):  # each voice on its own lines
            positions = [i for i, u in enumerate(utterances) if u.voice == voice]
            one = scored_per_clip(
                base.variant(
                    base.config,
                    voice_reference=self.reference(keys, voice),
                    reference_for_every_voice=True,
                )
            )
            with Store(self.session.out / STORE_DIR) as store:
                done = one.run([utterances[i] for i in positions], store)
            for position, result in zip(positions, done, strict=True):
                results[position] = result
        return [r for r in results if r is not None]

    # delivering -------------------------------------------------------------------------------
    def deliver_book(
        self, records: Sequence[UtteranceRecord], summary: dict[str, Any],
        say: Callable[[str], None],
    ) -> tuple[Manifest, dict[str, Any]]:  # fmt: skip
        from verified_tts.review.deliver import deliver_review

        manifest, done = deliver_review(self.session.out, self.manifest, records, self.config(),
                                        summary=summary, on_progress=say)  # fmt: skip
        return manifest, done.as_dict()

    def deliver_dub(self, say: Callable[[str], None]) -> tuple[Manifest, dict[str, Any]]:
        """Lay the dub's track again with the chosen takes (the dub workflow reads the log)."""
        from verified_tts.workflows.dub import dub

        self.base()
        data = self._dub_options()
        options = dict(data.get("options", {}))
        say("laying the track")
        summary = dub(
            str(self.manifest.input),
            self.session.out,
            self.config(),
            mix=data.get("mix_original"),
            synthesizer=self._synthesizer,
            **{k: options[k] for k in ("speed_limit", "duration", "duck_db", "voices",
                                       "max_extend_s", "min_gap_s", "tail_s") if k in options},
        )  # fmt: skip
        done = {"rebuilt": [0], "kept": [], "files": ["track.wav", "track.flac"],
                "flagged": summary.flagged, "overran": summary.overran}  # fmt: skip
        return read_manifest(self.session.out), done
