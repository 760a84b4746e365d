"""Loaded into a test's Celery worker (`--include`): once the worker is ready, writes what the libraries themselves
report about this process (its nice value, torch's and the loaded BLAS/OpenMP pools' thread counts) to a JSON file."""

import json
import os

from celery.signals import worker_ready

PROBE_FILE_VARIABLE = "WORKER_RESOURCES_PROBE_FILE"


@worker_ready.connect
def _write_probe(**kwargs) -> None:
    import numpy  # noqa: F401  (loads its BLAS, as a scorer would)
    import torch
    from threadpoolctl import threadpool_info

    report = {
        "pid": os.getpid(),
        "niceness": os.nice(0),
        "torch_threads": torch.get_num_threads(),
        "pools": {f"{pool['internal_api']} {pool['filepath']}": pool["num_threads"] for pool in threadpool_info()},
    }
    path = os.environ[PROBE_FILE_VARIABLE]
    with open(path + ".part", "w") as file:
        json.dump(report, file)
    os.replace(path + ".part", path)
