"""Inputs every benchmark group shares: the Harvard sentences, the tiny codec-LM models, the
harness."""
