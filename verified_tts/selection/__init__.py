"""Choosing a winner: the selection policy (gates, weighted score, adaptive rounds), the search
strategies that spend a line's takes (best-of-N in rounds, verifier-guided beam search), scoring a
batch of takes with the verifiers, what the takes of one line share (consensus), the dub's own
gates, and why a take was flagged, in a listener's words.

Modules: :mod:`.policy`, :mod:`.strategy`, :mod:`.best_of_n`, :mod:`.beam_search`, :mod:`.search`,
:mod:`.scoring`, :mod:`.consensus`, :mod:`.dub_gates`, :mod:`.reasons`.
"""
