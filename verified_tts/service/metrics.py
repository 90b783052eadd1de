"""Prometheus metrics of the service: requests, latency, candidates, flags, batches, queue depth.

Each Serve deployment keeps its own :class:`prometheus_client.CollectorRegistry` (a replica is a
process of its own): :class:`ApiMetrics` the front door's requests, latency and queue depth,
:class:`SpeakerMetrics` what synthesis did (candidates generated and reused, flagged answers,
batch sizes, requests dropped because their client left). ``GET /metrics`` serves both texts
one after the other, in Prometheus' text format.
"""

from __future__ import annotations

__all__ = ["ApiMetrics", "SpeakerMetrics", "render"]


def render(registry) -> str:  # registry: CollectorRegistry
    from prometheus_client import generate_latest

    return generate_latest(registry).decode("utf-8")


class ApiMetrics:
    """The front door: every request by route and status, its latency, speech in flight."""

    def __init__(self) -> None:
        from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

        self.registry = CollectorRegistry()
        self.requests = Counter(
            "verified_tts_requests",
            "HTTP requests answered",
            ["route", "status"],
            registry=self.registry,
        )
        self.latency = Histogram(
            "verified_tts_request_seconds",
            "Seconds to answer, by route",
            ["route"],
            buckets=(0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 20, 40, 80, 160),
            registry=self.registry,
        )
        self.queue_depth = Gauge(
            "verified_tts_queue_depth",
            "Speech requests accepted and not yet answered",
            registry=self.registry,
        )
        self.retries = Counter(
            "verified_tts_replica_retries",
            "Speech requests sent again after their replica died",
            registry=self.registry,
        )


class SpeakerMetrics:
    """Synthesis: candidates, flags, batch sizes and requests nobody waited for."""

    def __init__(self) -> None:
        from prometheus_client import CollectorRegistry, Counter, Histogram

        self.registry = CollectorRegistry()
        self.candidates = Counter(
            "verified_tts_candidates",
            "Candidates of answered requests",
            ["source"],
            registry=self.registry,
        )
        self.flagged = Counter(
            "verified_tts_flagged", "Answers whose kept take failed a gate", registry=self.registry
        )
        self.answers = Counter(
            "verified_tts_answers", "Speech answers made", registry=self.registry
        )
        self.batch = Histogram(
            "verified_tts_batch_size",
            "Requests spoken in one batch",
            buckets=(1, 2, 4, 8, 16, 32, 64),
            registry=self.registry,
        )
        self.dropped = Counter(
            "verified_tts_cancelled",
            "Requests dropped before synthesis: their client had gone",
            registry=self.registry,
        )
