"""Test models, not product: tiny random-weight codec LMs and codecs with the real layouts.

Nothing in the product imports this package; the tests and the benchmarks build their models
with it (:mod:`verified_tts.testing.tiny_models`), and so can a user who wants to try the
codec-LM path without downloading weights. :mod:`verified_tts.testing.films` makes the films
the dubbing tests and benchmarks dub.
"""
