"""SPICE and SPIDEr through pycocoevalcap 1.2's SPICE 1.0 jar -- only with Stanford CoreNLP 3.6.0 present.

pycocoevalcap downloads CoreNLP 3.6.0 (stanford-corenlp-3.6.0.jar and -models.jar) on first use;
this product never downloads. Put both jars in a folder and name it in the scoring context
(`MetricResources.spice_corenlp_dir`, from the SPICE_CORENLP_DIR setting); without them both metrics
report themselves unavailable (nothing is faked).

SPICE runs like pycocoevalcap's Spice.compute_score (inputs PTB-tokenized, `-subset -silent`,
-Xmx8G, value = scores["All"]["f"], NaN when SPICE gives none), with the CoreNLP jars put on the
class path instead of the package's lib/ folder. `MetricResources.spice_cache_dir` (SPICE_CACHE_DIR,
optional) enables SPICE's parse cache. SPIDEr = (CIDEr-D + SPICE) / 2 with CIDEr-D over the batch (so it is
corpus-level).

Not exercised against real CoreNLP jars in this repository's tests (they are not installed here).
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

from .base import ScoreResult, ScoringContext, ScoringRequest
from .classic import CiderScorer, tokenize_batches
from .classic.java_runtime import java_executable
from .classic.ptb_tokenizer import java_unavailable_reason, pycocoevalcap_dir
from .classic.scorers import classic_version

CORENLP_JARS = ("stanford-corenlp-3.6.0.jar", "stanford-corenlp-3.6.0-models.jar")
SPICE_MISSING = "Stanford CoreNLP 3.6.0 models not found in SPICE_CORENLP_DIR"


def corenlp_dir(context: ScoringContext | None) -> Path | None:
    value = (context.resources.spice_corenlp_dir or "").strip() if context else ""
    return Path(value) if value else None


def spice_unavailable_reason(context: ScoringContext | None) -> str | None:
    folder = corenlp_dir(context)
    if folder is None or not all((folder / jar).is_file() for jar in CORENLP_JARS):
        return f"SPICE: {SPICE_MISSING}"
    reason = java_unavailable_reason()
    return f"SPICE: {reason}" if reason else None


def run_spice(pairs: Sequence[tuple[str, tuple[str, ...]]], context: ScoringContext) -> list[dict]:
    """SPICE scores ({category: {"pr", "re", "f", ...}}) of tokenized (candidate, references)."""
    reason = spice_unavailable_reason(context)
    if reason:
        raise RuntimeError(reason)
    spice_dir = pycocoevalcap_dir() / "spice"
    folder = corenlp_dir(context)
    class_path = os.pathsep.join([str(spice_dir / "spice-1.0.jar"), *(str(folder / jar) for jar in CORENLP_JARS)])
    with tempfile.TemporaryDirectory() as work:
        input_path, output_path = Path(work) / "input.json", Path(work) / "output.json"
        input_path.write_text(
            json.dumps([{"image_id": i, "test": test, "refs": list(refs)} for i, (test, refs) in enumerate(pairs)])
        )
        command = [java_executable(), "-Xmx8G", "-cp", class_path, "edu.anu.spice.SpiceScorer", str(input_path)]
        if context.resources.spice_cache_dir:
            command += ["-cache", context.resources.spice_cache_dir]
        command += ["-out", str(output_path), "-subset", "-silent"]
        completed = subprocess.run(command, cwd=spice_dir, capture_output=True, check=False)
        if completed.returncode != 0:
            raise RuntimeError(
                f"SPICE failed ({completed.returncode}): {completed.stderr.decode(errors='replace')[-500:]}"
            )
        results = {item["image_id"]: item["scores"] for item in json.loads(output_path.read_text())}
    return [results[i] for i in range(len(pairs))]


def _as_float(value) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


class SpiceScorer:
    metric_names = ("SPICE",)
    version = classic_version("spice1.0-corenlp3.6.0")
    needs = frozenset({"references"})
    corpus_level = False
    protocol_kind = "ngram"

    def unavailable_reason(self, context: ScoringContext | None = None) -> str | None:
        return spice_unavailable_reason(context)

    def score_batch(self, requests: Sequence[ScoringRequest], context: ScoringContext) -> dict[str, list[ScoreResult]]:
        return self.score_batches([requests], context)[0]

    def score_batches(self, batches, context=None) -> list[dict[str, list[ScoreResult]]]:
        tokenized = tokenize_batches(batches)
        distinct = list(dict.fromkeys(pair for batch in tokenized for pair in batch))
        scores = dict(zip(distinct, run_spice(distinct, context or ScoringContext()), strict=True)) if distinct else {}
        results = []
        for batch in tokenized:
            rows = []
            for pair in batch:
                categories = {name: _as_float(values.get("f")) for name, values in scores[pair].items()}
                rows.append(ScoreResult(_as_float(scores[pair]["All"].get("f")), {"f_by_category": categories}))
            results.append({"SPICE": rows})
        return results


class SpiderScorer:
    metric_names = ("SPIDEr",)
    version = f"spider=(cider-d+spice)/2:{classic_version('cider-d+spice1.0-corenlp3.6.0')}"
    needs = frozenset({"references"})
    corpus_level = True
    protocol_kind = "ngram"

    def __init__(self) -> None:
        self._spice = SpiceScorer()
        self._cider = CiderScorer()

    def unavailable_reason(self, context: ScoringContext | None = None) -> str | None:
        reason = spice_unavailable_reason(context)
        return "SPIDEr: " + reason.removeprefix("SPICE: ") if reason else None

    def score_batch(self, requests: Sequence[ScoringRequest], context: ScoringContext) -> dict[str, list[ScoreResult]]:
        return self.score_batches([requests], context)[0]

    def score_batches(self, batches, context=None) -> list[dict[str, list[ScoreResult]]]:
        spice = self._spice.score_batches(batches, context)
        cider = self._cider.score_batches(batches, context)
        return [
            {
                "SPIDEr": [
                    ScoreResult((c.value + s.value) / 2, {"CIDEr_D": c.value, "SPICE": s.value})
                    for c, s in zip(cider_batch["CIDEr_D"], spice_batch["SPICE"], strict=True)
                ]
            }
            for cider_batch, spice_batch in zip(cider, spice, strict=True)
        ]
