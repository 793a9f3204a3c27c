"""The manager's view: a config that builds many CreateConfigJobs differing in one hyperparameter.

Sisyphus creates a job in ``JobSingleton.__call__``: it hashes the arguments (``Job.hash`` -> ``sis_hash``), looks the
id up in ``sisyphus.job.created_jobs`` and, for a new id, deep-copies the arguments and runs ``_sis_init`` (which
calls ``__init__`` and walks the arguments for paths). All of that runs in plain Python, without a manager, so this
measures exactly what a researcher's config pays per job. The job cache is emptied before each variant and every
job's id is checked to be new, so no job is served from the cache."""

from __future__ import annotations

import copy
import gc
import resource
import time
from typing import Any

from .methods import HYPER
from .models import Model


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def create_jobs(model: Model, count: int, shared: bool) -> dict[str, Any]:
    """``count`` CreateConfigJobs with learning rates 1e-4 * (1 + i); ``shared``: one serializer built before the
    loop and put into every config (what a config file does with one model); else a new serializer per job, timed
    with the job."""
    from i6_core.returnn.config import ReturnnConfig
    from sisyphus import job as sis_job

    from i6_rc_jobs import CreateConfigJob, ReturnnCommonSerializer

    sis_job.created_jobs.clear()
    gc.collect()
    rss_before = _peak_rss_mb()
    start = time.perf_counter()
    serializer = ReturnnCommonSerializer(extern_data=model.extern_data, network=model.network) if shared else None
    ids = []
    for i in range(count):
        if not shared:
            serializer = ReturnnCommonSerializer(extern_data=model.extern_data, network=model.network)
        config = dict(copy.deepcopy(HYPER), learning_rate=1e-4 * (1 + i))
        returnn_config = ReturnnConfig(config, python_prolog=[serializer], black_formatting=False)
        ids.append(CreateConfigJob(returnn_config).job_id())
    seconds = time.perf_counter() - start
    created = len(sis_job.created_jobs)
    sis_job.created_jobs.clear()
    result = {
        "model": model.name,
        "jobs": count,
        "serializer": "shared" if shared else "new per job",
        "total_s": seconds,
        "ms_per_job": seconds * 1e3 / count,
        "distinct_job_ids": len(set(ids)),
        "jobs_in_cache": created,
        "all_created": len(set(ids)) == count == created,
        "peak_rss_mb_before": round(rss_before),
        "peak_rss_mb_after": round(_peak_rss_mb()),
    }
    gc.collect()
    return result
