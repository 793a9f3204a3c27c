"""The manager's view: a config that builds many CreateConfigJobs differing in one hyperparameter.

Sisyphus creates a job in ``JobSingleton.__call__``: it hashes the arguments (``Job.hash`` -> ``sis_hash``), looks the
id up in ``sisyphus.job.created_jobs`` and, for a new id, deep-copies the arguments and runs ``_sis_init`` (which
calls ``__init__`` and walks the arguments for paths). All of that runs in plain Python, without a manager, so this
measures exactly what a researcher's config pays per job. The job cache is emptied before each variant and every
job's id is checked to be new, so no job is served from the cache."""

from __future__ import annotations

import copy
import gc
import time
import tracemalloc
from typing import Any, Callable

from .methods import HYPER
from .models import Model

#: How the jobs get their serializer: one for all (what a config file does with one model), the same after an edit
#: through its attributes (which opens it: see ReturnnCommonSerializer), closed again after the edit, or a new one
#: per job.
VARIANTS = ("shared", "shared, opened by an edit", "shared, edited and closed", "new per job")


def create_jobs(model: Model, count: int, variant: str) -> dict[str, Any]:
    """``count`` CreateConfigJobs with learning rates 1e-4 * (1 + i); the serializers (see VARIANTS) are built and
    edited inside the timed region. Then, untimed, the memory the jobs keep: the same for up to 100 jobs under
    tracemalloc (which would slow the timed run), per job."""
    from sisyphus import job as sis_job

    seconds, ids = _timed(lambda: _make_jobs(model, count, variant))
    created = len(sis_job.created_jobs)
    sis_job.created_jobs.clear()
    gc.collect()
    sample = min(count, 100)
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    kept = _make_jobs(model, sample, variant)
    gc.collect()
    retained = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    del kept
    sis_job.created_jobs.clear()
    gc.collect()
    return {
        "model": model.name,
        "jobs": count,
        "serializer": variant,
        "total_s": seconds,
        "ms_per_job": seconds * 1e3 / count,
        "distinct_job_ids": len(set(ids)),
        "jobs_in_cache": created,
        "all_created": len(set(ids)) == count == created,
        "kb_kept_per_job": retained / 1024 / sample,
        "memory_sample_jobs": sample,
    }


def _timed(run: Callable[[], list[str]]) -> tuple[float, list[str]]:
    from sisyphus import job as sis_job

    sis_job.created_jobs.clear()
    gc.collect()
    start = time.perf_counter()
    ids = run()
    return time.perf_counter() - start, ids


def _make_jobs(model: Model, count: int, variant: str) -> list[str]:
    """The job ids; the jobs stay in Sisyphus's job cache."""
    from i6_core.returnn.config import ReturnnConfig

    from i6_rc_jobs import CreateConfigJob, ReturnnCommonSerializer

    serializer = ReturnnCommonSerializer(extern_data=model.extern_data, network=model.network)
    if variant.startswith("shared, "):
        serializer.network["output"]["loss_scale"] = 1.0
        if variant.endswith("closed"):
            serializer.close()
    ids = []
    for i in range(count):
        if variant == "new per job" and i > 0:
            serializer = ReturnnCommonSerializer(extern_data=model.extern_data, network=model.network)
        config = dict(copy.deepcopy(HYPER), learning_rate=1e-4 * (1 + i))
        returnn_config = ReturnnConfig(config, python_prolog=[serializer], black_formatting=False)
        ids.append(CreateConfigJob(returnn_config).job_id())
    return ids
