"""Five render and dub jobs submitted at once from separate processes to the shared loopback
cluster: each ends SUCCEEDED with its output, none is lost, none runs twice. The 50-job version
is in benchmarks/reliability.py."""

from __future__ import annotations

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
    figures = jobload.account(ray_cluster, SharedCluster.state().dashboard_url, submitted)
    assert figures["succeeded"] == 5, figures
    assert figures["lost"] == figures["run_twice"] == figures["duplicated_in_records"] == 0
    for command, _, out in jobs:
        assert (out / "manifest.json").is_file(), command
