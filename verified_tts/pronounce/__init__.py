"""Pronunciation candidates: independent offline sources of a word's phonemes, which words to
doubt, and the book-level decision among them (written as a lexicon a producer can edit)."""
