"""Five render and dub jobs submitted at once from separate processes to the shared loopback
cluster: each ends SUCCEEDED with its output, none is lost, none runs twice. The 50-job version
is in benchmarks/distributed/reliability.py."""

from __future__ import annotations

import json
import subprocess
import time

import jobload
import pytest
from test_jobs import ray_cluster  # noqa: F401  (the shared cluster fixture)
from test_ray_backend import SharedCluster


@pytest.mark.ray
@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_five_jobs_from_three_processes_none_lost_none_twice(ray_cluster, tmp_path):  # noqa: F811
    jobs = jobload.make_inputs(tmp_path, 5)
    submitted = jobload.submit_all(ray_cluster, jobs, processes=3)
    assert [s["rc"] for s in submitted] == [0] * 5, submitted
    figures = jobload.account(
        ray_cluster, SharedCluster.state().dashboard_url, submitted, deadline_s=1200
    )
    assert figures["succeeded"] == 5, figures
    assert figures["lost"] == figures["run_twice"] == figures["duplicated_in_records"] == 0
    for command, _, out in jobs:
        assert (out / "manifest.json").is_file(), command


def test_a_job_that_never_finishes_is_counted_lost_not_waited_for(monkeypatch, tmp_path):
    # The records as `jobs list --json` prints them: one job done, one stuck RUNNING for good;
    # a third was accepted but never reached the records.
    listing = [{"id": "done", "state": "SUCCEEDED"}, {"id": "stuck", "state": "RUNNING"}]
    monkeypatch.setattr(
        jobload,
        "cli",
        lambda *args: subprocess.CompletedProcess(args, 0, json.dumps(listing) + "\n", ""),
    )
    monkeypatch.setattr(jobload, "ray_submissions", lambda dashboard: {"done": 1})
    submitted = [{"rc": 0, "id": "done"}, {"rc": 0, "id": "stuck"}, {"rc": 0, "id": "vanished"},
                 {"rc": 2, "error": "refused"}]  # fmt: skip
    started = time.monotonic()
    figures = jobload.account(tmp_path, "unused", submitted, deadline_s=1.0)
    assert time.monotonic() - started < 10
    assert figures["succeeded"] == 1 and figures["failed"] == 0
    assert figures["lost"] == 2
    assert figures["lost_states"] == {"stuck": "RUNNING", "vanished": "not in the records"}
    assert figures["submissions_refused"] == 1 and figures["run_twice"] == 0
