"""Casting: who speaks each quote, and how a voice reads a lexicon entry."""
