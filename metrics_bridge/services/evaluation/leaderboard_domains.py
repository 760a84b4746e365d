"""Per-domain columns of a leaderboard (AudioCapBench's per-category tables: sound, music, speech, overall).

A dataset has one domain (its `domain` setting); a captioning system may have captions in several datasets.
For each system of the leaderboard, a domain's value of a metric is the mean of the system's current scores
over the datasets of that domain, weighted by the captions each score covers (for caption-mean metrics --
SBERT, FENSE, the LLM judges, X-ACE -- that is exactly the mean over all of the domain's captions, as
AudioCapBench pools a category's clips; for corpus metrics -- BLEU, METEOR, CIDEr-D, DATE -- it is the
weighted mean of the per-dataset corpus values, not one corpus over the datasets). "overall" does the same
over every dataset. Only stored scores of the systems' current captions are read (nothing is computed).

Coverage is exact per metric: a value averages only the datasets where that metric is stored, and each cell's
"coverage" says, per metric, which datasets and how many captions it covers and which datasets of the domain
it misses (a METEOR stored on the music dataset only gives an "overall" that is the music value, and says so).
"datasets" / "captions" of a cell are those every asked metric covers; "missing" the datasets some metric lacks.
"""

import hashlib
import json

from django.db.models import Count, Max

from corpus.models import Caption, Dataset
from metrics_bridge.models import SystemScore
from metrics_bridge.scoring.base import DOMAINS
from metrics_bridge.scoring.system_level import JUDGE_3D, JUDGE_DIMENSIONS
from metrics_bridge.services.runs.system_scores import current_system_scores, system_inputs

OVERALL = "overall"


def _datasets_of(system_ids: list[int]) -> list[Dataset]:
    """Datasets where these systems have current captions."""
    dataset_ids = (
        Caption.objects.filter(system_id__in=system_ids, superseded_at__isnull=True)
        .order_by()
        .values_list("clip__dataset_id", flat=True)
        .distinct()
    )
    return list(Dataset.objects.filter(pk__in=list(dataset_ids)).order_by("name"))


def domain_table(*, dataset: Dataset, system_ids: dict[int, str], metric_names: list[str]) -> dict:
    """{"domains": [the domains with data, then "overall"], "systems": {name: {domain: {"datasets", "captions",
    "metrics": {metric: value}, "coverage": {metric: {"datasets", "captions", "missing"}}, "judge": {dimension:
    value} (with LLM_JUDGE_3D), "missing": [datasets]}}}}."""
    totals: dict[tuple[str, str], dict] = {}
    for other in _datasets_of(list(system_ids)):
        inputs = system_inputs(dataset_id=other.pk, system_ids=list(system_ids))
        scores = current_system_scores(dataset=other, inputs=inputs, metric_names=metric_names)
        for system_id, entry in inputs.items():
            weight = len(entry.requests)
            for domain in (other.domain, OVERALL):
                cell = totals.setdefault(
                    (system_ids[system_id], domain),
                    {"datasets": [], "captions": 0, "sums": {}, "weights": {}, "missing": [], "coverage": {}},
                )
                if not weight:
                    continue
                found = [
                    name
                    for name in metric_names
                    if (system_id, name) in scores and scores[(system_id, name)].value is not None
                ]
                for name in metric_names:
                    coverage = cell["coverage"].setdefault(name, {"datasets": [], "captions": 0, "missing": []})
                    if name in found:
                        coverage["datasets"].append(other.name)
                        coverage["captions"] += weight
                    else:
                        coverage["missing"].append(other.name)
                if len(found) == len(metric_names):
                    cell["datasets"].append(other.name)
                    cell["captions"] += weight
                else:
                    cell["missing"].append(other.name)
                for name in found:
                    score = scores[(system_id, name)]
                    values = {name: score.value}
                    if name == JUDGE_3D:
                        for dimension, value in (score.details.get("judge") or {}).items():
                            values[f"{JUDGE_3D}:{dimension}"] = value
                    for key, value in values.items():
                        if value is None:
                            continue
                        cell["sums"][key] = cell["sums"].get(key, 0.0) + value * weight
                        cell["weights"][key] = cell["weights"].get(key, 0) + weight
    present = sorted({domain for _, domain in totals if domain != OVERALL}, key=DOMAINS.index)
    systems: dict[str, dict] = {}
    for (name, domain), cell in totals.items():
        means = {key: cell["sums"][key] / cell["weights"][key] for key in cell["sums"]}
        entry = {
            "datasets": cell["datasets"],
            "captions": cell["captions"],
            "metrics": {metric: means.get(metric) for metric in metric_names},
            "coverage": cell["coverage"],
        }
        if JUDGE_3D in metric_names:
            entry["judge"] = {dimension: means.get(f"{JUDGE_3D}:{dimension}") for dimension in JUDGE_DIMENSIONS}
        if cell["missing"]:
            entry["missing"] = cell["missing"]
        systems.setdefault(name, {})[domain] = entry
    return {"domains": [*present, OVERALL], "systems": dict(sorted(systems.items()))}


def domain_fingerprint(*, dataset: Dataset) -> str:
    """What the per-domain columns of the dataset's leaderboard read beyond the dataset itself: the other
    datasets' domains, captions and system scores of the dataset's systems."""
    system_ids = list(
        Caption.objects.filter(clip__dataset=dataset, system__isnull=False)
        .order_by()
        .values_list("system_id", flat=True)
        .distinct()
    )
    captions = Caption.objects.filter(system_id__in=system_ids).order_by()
    scores = SystemScore.objects.filter(system_id__in=system_ids).order_by()
    datasets = Dataset.objects.filter(clips__captions__system_id__in=system_ids).order_by().distinct()
    parts = [
        captions.aggregate(n=Count("pk"), last=Max("updated_at")),
        scores.aggregate(n=Count("pk"), last=Max("pk")),
        sorted(datasets.values_list("pk", "domain")),
    ]
    return hashlib.sha256(json.dumps(parts, default=str, sort_keys=True).encode()).hexdigest()
