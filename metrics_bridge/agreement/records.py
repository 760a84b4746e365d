"""Published agreement figures of the public human-judgement benchmarks (`data/published_records.json`).

Kept as data with their sources, so the benchmark table can show them beside the platform's own figures.
A dataset is matched to a benchmark by content: the digest of its judged pairs' texts (fingerprints.py) equals
the benchmark's `content`; a name says nothing (a 10-pair sample may carry a benchmark's name). Plain Python.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

RECORDS_PATH = Path(__file__).resolve().parent / "data" / "published_records.json"


@functools.cache
def published_records() -> dict:
    """{benchmark key: {"title", "protocol", "aliases", "records": [{"metric", "ours", "figures", "source"}]}}."""
    return json.loads(RECORDS_PATH.read_text(encoding="utf-8"))["benchmarks"]


def records_fingerprint() -> str:
    """Changes when the records file does (cached tables that show the records are then recomputed)."""
    import hashlib

    return hashlib.sha256(RECORDS_PATH.read_bytes()).hexdigest()[:16]


def benchmark_of(pairs_sha256: str) -> str | None:
    """The benchmark whose judged pairs a dataset holds exactly (by the digest of their texts); None otherwise."""
    for key, benchmark in published_records().items():
        if (benchmark.get("content") or {}).get("pairs_sha256") == pairs_sha256:
            return key
    return None


def benchmark_named(dataset_name: str) -> str | None:
    """The benchmark a dataset's name suggests (its key or an alias): only to say that the content is not it."""
    name = dataset_name.strip().lower()
    for key, benchmark in published_records().items():
        if name == key or name in benchmark.get("aliases", ()):
            return key
    return None
