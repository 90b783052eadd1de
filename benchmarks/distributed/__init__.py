"""Distributed and reliable: Ray, the driver's ceiling, kills and fuzzing survived."""
