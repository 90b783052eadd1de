"""Keeping what was made: the content-addressed store (an SQLite index and one FLAC per kept
take), the checks of a stored take's audio, the content addresses and seeds, the atomic writes
every output goes through, the records a render works on and produces, and the files derived
from models once and kept in the cache.

Modules: :mod:`.store`, :mod:`.audio`, :mod:`.keys`, :mod:`.atomic`, :mod:`.results`,
:mod:`.derived`.
"""
