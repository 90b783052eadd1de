"""Flags and calibration: what the gates flag, what they miss, and the fits behind them."""
