"""Dubbing: fitting takes into subtitle slots, flags on short cues, films."""
