"""What a user runs: ``render`` a book, ``dub`` a subtitle file, ``rerender`` one utterance, ``ab``.

Each workflow composes the same pieces (the text front-end, the :class:`~verified_tts.pipeline.
Synthesizer`, the store and the output writers) and owns only the steps particular to it.
"""
