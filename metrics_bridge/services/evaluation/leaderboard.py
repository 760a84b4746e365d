"""The leaderboard of a dataset's captioning systems: system-level metric values, human win rates and
THumBS means, and how well each metric ranks the systems as people do (Kendall's tau-b).

Definitions (what the leaderboard page and its CSV state for each column):
- pairwise win rate of system S: over every vote on a pair whose two captions come from different
  authors (every human-written caption counts as the one author "human"; a machine caption's author is
  its system) and one of which is a current caption of S: 1 point for a vote for S's caption, 0.5 for
  no preference, 0 otherwise, divided by the number of such votes. Only included votes count
  (ratings.selectors.included_votes: no excluded rater, attention check or study preview), as in the agreement table.
- THumBS: mean overall (P + R) / 2 + F + C + I over the included ratings of S's current captions (the same rule).
- rank agreement: scipy's Kendall tau-b between a metric's system values and the win rates, over the
  systems that have both.
Superseded captions (an older submission) count for nobody: they no longer stand for their system.
"""

import math

import numpy as np
from django.db.models import Avg, BooleanField, Count, ExpressionWrapper, F, FloatField, Q

from corpus.models import Dataset
from metrics_bridge.scoring import registry
from metrics_bridge.scoring.system_level import JUDGE_3D
from metrics_bridge.services.evaluation.leaderboard_domains import domain_table
from metrics_bridge.services.runs.runs import metrics_missing_check
from metrics_bridge.services.runs.system_scores import (
    current_system_scores,
    run_to_completion,
    system_inputs,
    system_scores_run_create,
)
from ratings.models import PairwiseVote, ThumbsRating
from ratings.selectors import included_thumbs_ratings, included_votes

POINTS = {"a": (1.0, 0.0), "b": (0.0, 1.0), "none": (0.5, 0.5)}
#: X-ACE variants whose system scores carry factor and attribute breakdowns -> the report key they go under
XACE_BREAKDOWNS = {"XACE": "xace", "XACE_CAPTIONS": "xace_captions"}
CI_RESAMPLES = 1000


def _author(system_id, is_current) -> tuple:
    """(author, counts for the author): human captions are one author; a superseded caption counts for nobody."""
    if system_id is None:
        return "human", False
    return system_id, bool(is_current)


def pairwise_win_counts(*, dataset: Dataset) -> dict[int, list[float]]:
    """{system id: [votes for, no preference, votes against]} over votes between different authors."""
    return {system: tally for (system, _), tally in _win_counts(dataset=dataset, by_clip=False).items()}


def pairwise_win_counts_by_clip(*, dataset: Dataset) -> dict[tuple[int, int], list[float]]:
    """{(system id, clip id): [for, no preference, against]}: the same votes per clip (for bootstrap intervals)."""
    return _win_counts(dataset=dataset, by_clip=True)


def _win_counts(*, dataset: Dataset, by_clip: bool) -> dict[tuple, list[float]]:
    votes = included_votes(PairwiseVote.objects.filter(pair__clip__dataset=dataset))
    grouped = (
        votes.order_by()
        .values(
            "choice",
            *(["pair__clip_id"] if by_clip else []),
            system_a=F("pair__caption_a__system_id"),
            system_b=F("pair__caption_b__system_id"),
            current_a=ExpressionWrapper(Q(pair__caption_a__superseded_at__isnull=True), output_field=BooleanField()),
            current_b=ExpressionWrapper(Q(pair__caption_b__superseded_at__isnull=True), output_field=BooleanField()),
        )
        .annotate(count=Count("pk"))
    )
    counts: dict[tuple, list[float]] = {}
    for row in grouped:
        author_a, counts_a = _author(row["system_a"], row["current_a"])
        author_b, counts_b = _author(row["system_b"], row["current_b"])
        if author_a == author_b:
            continue
        for author, counts_for, side in ((author_a, counts_a, 0), (author_b, counts_b, 1)):
            if author == "human" or not counts_for:
                continue
            tally = counts.setdefault((author, row.get("pair__clip_id")), [0.0, 0.0, 0.0])
            points = POINTS[row["choice"]][side]
            tally[0 if points == 1.0 else 1 if points == 0.5 else 2] += row["count"]
    return counts


def win_rate(tally: list[float]) -> float | None:
    total = sum(tally)
    return (tally[0] + 0.5 * tally[1]) / total if total else None


def win_rate_interval(tally: list[float], *, confidence: float = 0.95, seed: int = 0) -> tuple[float, float] | None:
    """Percentile bootstrap over votes (resampling the vote outcomes), seeded."""
    total = int(sum(tally))
    if not total:
        return None
    rng = np.random.default_rng(seed)
    draws = rng.multinomial(total, np.asarray(tally) / total, size=CI_RESAMPLES)
    rates = (draws[:, 0] + 0.5 * draws[:, 1]) / total
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(rates, [tail, 100 - tail])
    return float(low), float(high)


def thumbs_means(*, dataset: Dataset) -> dict[int, tuple[float, int]]:
    """{system id: (mean overall, ratings)} over current captions, excluded raters left out."""
    overall = ExpressionWrapper(
        (F("precision") + F("recall")) / 2.0 + F("fluency") + F("conciseness") + F("irrelevance"),
        output_field=FloatField(),
    )
    ratings = (
        included_thumbs_ratings(
            ThumbsRating.objects.filter(
                caption__clip__dataset=dataset, caption__system__isnull=False, caption__superseded_at__isnull=True
            )
        )
        .order_by()
        .values("caption__system_id")
        .annotate(mean=Avg(overall), count=Count("pk"))
    )
    return {row["caption__system_id"]: (float(row["mean"]), row["count"]) for row in ratings}


def kendall_tau_b(metric_values: list[float | None], human_values: list[float | None]) -> tuple[float | None, int]:
    pairs = [(m, h) for m, h in zip(metric_values, human_values, strict=True) if m is not None and h is not None]
    if len(pairs) < 2:
        return None, len(pairs)
    from scipy import stats  # here, not at the top: a worker imports this module and would wait ~0.4 s for scipy

    tau = stats.kendalltau([m for m, _ in pairs], [h for _, h in pairs], variant="b").statistic
    return (None if math.isnan(tau) else float(tau)), len(pairs)


def scored_metric_names(*, dataset: Dataset, inputs) -> list[str]:
    """Metrics with a current system score for at least one system, in registry order."""
    found = current_system_scores(dataset=dataset, inputs=inputs, metric_names=registry.all_metric_names())
    names = {metric for _, metric in found}
    return [name for name in registry.all_metric_names() if name in names]


def leaderboard_table(
    *, dataset: Dataset, metric_names: list[str] | None = None, unavailable: dict | None = None
) -> dict:
    """The leaderboard from stored scores only (nothing is computed): the JSON of the `leaderboard` command,
    plus "xace" / "xace_captions" (per-system factor and attribute breakdowns, factors not applicable to a
    caption left out of its means) when XACE / XACE_CAPTIONS is among the metrics, "judge" (the AudioCapBench
    judge's accuracy / completeness / hallucination per system) with LLM_JUDGE_3D, and "domains": each system's
    values per domain over every dataset it has captions in (leaderboard_domains.py)."""
    inputs = system_inputs(dataset_id=dataset.pk)
    if metric_names is None:
        metric_names = scored_metric_names(dataset=dataset, inputs=inputs)
    scores = current_system_scores(dataset=dataset, inputs=inputs, metric_names=metric_names)
    wins = pairwise_win_counts(dataset=dataset)
    thumbs = thumbs_means(dataset=dataset)
    systems = []
    for system_id, entry in sorted(inputs.items(), key=lambda item: item[1].name):
        tally = wins.get(system_id, [0.0, 0.0, 0.0])
        mean, ratings = thumbs.get(system_id, (None, 0))
        systems.append(
            {
                "system": entry.name,
                "captions": entry.captions,
                "metrics": {
                    name: (scores[(system_id, name)].value if (system_id, name) in scores else None)
                    for name in metric_names
                },
                "human": {
                    "pairwise_win_rate": win_rate(tally),
                    "pairwise_votes": int(sum(tally)),
                    "thumbs_overall": mean,
                    "thumbs_ratings": ratings,
                },
            }
        )
    human = [row["human"]["pairwise_win_rate"] for row in systems]
    rank_agreement = {}
    for name in metric_names:
        tau, count = kendall_tau_b([row["metrics"][name] for row in systems], human)
        rank_agreement[name] = {"kendall_tau": tau, "systems": count}
    report = {"dataset": dataset.name, "systems": systems, "rank_agreement": rank_agreement}
    for metric, key in XACE_BREAKDOWNS.items():
        if metric in metric_names:
            report[key] = {
                entry.name: {
                    "factors": scores[(system_id, metric)].details.get("factors", {}),
                    "attribute_categories": scores[(system_id, metric)].details.get("attribute_categories", {}),
                }
                for system_id, entry in sorted(inputs.items(), key=lambda item: item[1].name)
                if (system_id, metric) in scores
            }
    if JUDGE_3D in metric_names:
        report["judge"] = {
            entry.name: scores[(system_id, JUDGE_3D)].details.get("judge") or {}
            for system_id, entry in sorted(inputs.items(), key=lambda item: item[1].name)
            if (system_id, JUDGE_3D) in scores
        }
    report["domains"] = domain_table(
        dataset=dataset,
        system_ids={system_id: entry.name for system_id, entry in inputs.items()},
        metric_names=metric_names,
    )
    if unavailable:
        report["unavailable"] = unavailable
    return report


def win_rate_intervals(*, dataset: Dataset) -> dict[int, tuple[float, float] | None]:
    return {system_id: win_rate_interval(tally) for system_id, tally in pairwise_win_counts(dataset=dataset).items()}


def leaderboard_build(
    *, dataset: Dataset, enqueue, metric_names: list[str] | None = None, on_progress=None, watchdog=None
) -> dict:
    """The leaderboard; system scores missing for the current captions are computed first (a metric run
    whose chunks go to the workers `enqueue` sends them to).

    Raises MetricsMissingError naming every requested metric without a system value (named in `metric_names` but
    unavailable here, or not computed: a chunk failed, the run ended early); without `metric_names`, the
    metrics that cannot run here are listed under "unavailable" instead (the default asks for what can run).
    """
    run = system_scores_run_create(dataset=dataset, metric_names=metric_names)
    computed, unavailable = run_to_completion(
        run=run, metric_names=metric_names, enqueue=enqueue, on_progress=on_progress, watchdog=watchdog
    )
    report = leaderboard_table(dataset=dataset, metric_names=computed, unavailable=unavailable)
    systems = report["systems"]
    delivered = [
        name
        for name in report["rank_agreement"]
        if not systems or any(row["metrics"][name] is not None for row in systems)
    ]
    requested = list(metric_names) if metric_names is not None else list(run.metrics)
    metrics_missing_check(requested=requested, delivered=delivered, reasons=unavailable)
    return report
