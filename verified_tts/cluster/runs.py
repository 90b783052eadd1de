"""Which runs (Ray drivers and submitted jobs) of the connected cluster are still going.

Warm verifier actors (:mod:`verified_tts.cluster.warm`) are leased to a run by its Ray job id; a
lease whose run has ended can be taken over, and an idle actor ends itself only once its run has
ended. Both ask :func:`alive_runs`, which reads Ray's state API at the connected cluster's own
address (with several clusters on one machine, the API does not guess among them).
"""

from __future__ import annotations

import logging
from types import ModuleType

__all__ = ["alive_runs"]

log = logging.getLogger("verified_tts.ray")

_RUNNING = ("RUNNING", "PENDING")


def alive_runs(ray: ModuleType) -> frozenset[str] | None:
    """Ray job ids of the runs (drivers and submitted jobs) that are still going; None when the
    cluster cannot say (no dashboard): then every lease holder counts as alive."""
    try:
        from ray.util.state import list_jobs

        address = ray.get_runtime_context().gcs_address  # not a guess among local clusters
        jobs = list_jobs(address=address, timeout=10, raise_on_missing_output=False)
    except Exception as error:  # noqa: BLE001 - any failure only means "ask no more"
        log.info("cannot list the cluster's runs (%s): warm verifiers in use stay theirs", error)
        return None
    return frozenset(
        str(job.job_id)
        for job in jobs
        if job.job_id and str(getattr(job.status, "value", job.status)) in _RUNNING
    )
