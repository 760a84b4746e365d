"""The THumBS report of one campaign: completion per rater, inter-rater agreement per field, how each
metric correlates with the ratings (caption and system level, 95% bootstrap CIs) and per-rater bias.

The statistics are `metrics_bridge.agreement` (Krippendorff's alpha, ICC(2,k), correlations with their
bootstrap); this module only loads rows and hands them over. Raters an admin excluded from the campaign
are left out of everything but the completion table (which shows them, marked).

Metric values per caption are its scores against all of its clip's references (the leaderboard's caption
scores); corpus-level metrics (CIDEr-D, DATE) take the campaign's rated captions as their corpus.
A caption's human value is the mean over its (included) raters. System level: per author (a system, or
"human" for human-written captions), the means of both sides, with captions resampled for the CI.
"""

from collections import defaultdict

from django.db.models import Count, Q

from metrics_bridge.agreement.inter_rater import THUMBS_FIELDS, icc_2k_of_ratings, rater_bias, thumbs_alpha
from metrics_bridge.agreement.statistics import metric_human_correlations
from metrics_bridge.models import MetricRun, MetricRunChunk, MetricScore
from metrics_bridge.scoring import registry
from metrics_bridge.scoring.base import scorer_version, uses_gold_annotations
from metrics_bridge.services.runs.contexts import version_context_for
from metrics_bridge.services.runs.plans import PlannedBatch, chunk_requests_for, gold_fingerprints_by_caption
from metrics_bridge.services.runs.runs import chunks_for, metric_run_chunks_save, scorer_chunk
from metrics_bridge.services.runs.system_scores import current_versions, requested_scorers, run_to_completion
from ratings.models import Assignment, Campaign, ThumbsRating
from ratings.selectors import campaign_included_thumbs_ratings

CORRELATED_FIELDS = ("overall", "precision", "recall")
BIAS_FIELDS = ("overall", "precision", "recall")


def _rating_values(rating: ThumbsRating) -> dict[str, float]:
    return {
        "precision": float(rating.precision),
        "recall": float(rating.recall),
        "fluency": float(rating.fluency),
        "conciseness": float(rating.conciseness),
        "irrelevance": float(rating.irrelevance),
        "overall": float(rating.overall),
    }


def campaign_rating_rows(*, campaign: Campaign) -> list[tuple[int, int, dict[str, float]]]:
    """(rater id, caption id, field values) of every included rating."""
    # order_by("pk"): the model ordering would join caption, clip and dataset only to sort
    ratings = (
        campaign_included_thumbs_ratings(campaign=campaign)
        .order_by("pk")
        .only("rater_id", "caption_id", "precision", "recall", "fluency", "conciseness", "irrelevance")
    )
    return [(rating.rater_id, rating.caption_id, _rating_values(rating)) for rating in ratings]


def completion_per_rater(*, campaign: Campaign) -> list[dict]:
    excluded = set(campaign.excluded_raters.values_list("pk", flat=True))
    assignments = (
        Assignment.objects.filter(campaign=campaign)
        .select_related("rater")
        .annotate(items_total=Count("items"), items_done=Count("items", filter=Q(items__completed_at__isnull=False)))
        .order_by("rater__username")
    )
    ratings = dict(
        ThumbsRating.objects.filter(campaign=campaign)
        .order_by()
        .values("rater_id")
        .annotate(n=Count("pk"))
        .values_list("rater_id", "n")
    )
    return [
        {
            "rater": assignment.rater.username,
            "items": assignment.items_total,
            "completed": assignment.items_done,
            "percent": round(100 * assignment.items_done / assignment.items_total, 1)
            if assignment.items_total
            else None,
            "ratings": ratings.get(assignment.rater_id, 0),
            "excluded": assignment.rater_id in excluded,
        }
        for assignment in assignments
    ]


def _campaign_batch(campaign: Campaign, caption_ids: set[int]) -> PlannedBatch:
    """The rated candidate captions against all of their clip's references (corpus label: the campaign)."""
    from corpus.models import Caption

    references: dict[int, list[str]] = defaultdict(list)
    candidates = Caption.objects.filter(pk__in=caption_ids, role=Caption.Role.CANDIDATE).order_by("pk")
    clip_ids = set(candidates.values_list("clip_id", flat=True))
    rows = (
        Caption.objects.corpus()
        .filter(clip_id__in=clip_ids, role=Caption.Role.REFERENCE)
        .order_by("clip_id", "position")
    )
    for clip_id, text in rows.values_list("clip_id", "text"):
        references[clip_id].append(text)
    batch = PlannedBatch(label=f"thumbs-campaign:{campaign.pk}")
    for caption_id, clip_id in candidates.values_list("pk", "clip_id"):
        if references.get(clip_id):
            batch.add(caption_id=caption_id, references=tuple(references[clip_id]))
    return batch


def _gold_fingerprints_for(scorers, campaign: Campaign) -> dict[int, str] | None:
    """Caption id -> its clip's gold fingerprint when one of `scorers` reads gold annotations (part of their
    scores' identity, see plans.reference_context), else None."""
    if any(uses_gold_annotations(scorer) for scorer in scorers):
        return gold_fingerprints_by_caption(dataset=campaign.dataset)
    return None


def caption_metric_values(
    *, campaign: Campaign, metric_names: list[str], caption_ids: set[int]
) -> dict[str, dict[int, float]]:
    """{metric: {caption id: stored value}} at current versions (missing scores are simply absent)."""
    batch = _campaign_batch(campaign, caption_ids)
    versions = current_versions(metric_names, dataset=campaign.dataset)
    values: dict[str, dict[int, float]] = {}
    gold_fingerprints = _gold_fingerprints_for([registry.scorer_for(name) for name in metric_names], campaign)
    for name in metric_names:
        scorer = registry.scorer_for(name)
        requests, _ = chunk_requests_for(batch=batch, scorer=scorer, gold_fingerprints=gold_fingerprints)
        keys = {request["reference_set_key"] for request in requests}
        wanted = {(request["caption_id"], request["reference_set_key"]) for request in requests}
        rows = MetricScore.objects.filter(metric=name, version=versions[name], reference_set__key__in=keys).values_list(
            "caption_id", "reference_set__key", "value"
        )
        values[name] = {
            caption_id: value for caption_id, key, value in rows if (caption_id, key) in wanted and value is not None
        }
    return values


def campaign_chunks_plan(
    *, campaign: Campaign, scorers: list, context, corpus_level_only: bool = False
) -> tuple[list[MetricRunChunk], dict]:
    """Unsaved chunks scoring the campaign's rated captions that lack a score of `scorers`, and the reference
    sets they name. `corpus_level_only`: only the scorers whose scores depend on the batch (CIDEr-D, DATE: the
    campaign's rated captions are their corpus); the others' scores are those of the all-references batch,
    which a whole dataset run plans anyway."""
    if corpus_level_only:
        scorers = [scorer for scorer in scorers if scorer.corpus_level]
    if not scorers:
        return [], {}
    caption_ids = set(campaign_included_thumbs_ratings(campaign=campaign).values_list("caption_id", flat=True))
    batch = _campaign_batch(campaign, caption_ids)
    chunks, reference_sets = [], {}
    gold_fingerprints = _gold_fingerprints_for(scorers, campaign)
    for scorer in scorers:
        requests, batch_reference_sets = chunk_requests_for(
            batch=batch, scorer=scorer, gold_fingerprints=gold_fingerprints
        )
        reference_sets.update(batch_reference_sets)
        for chunk_requests in chunks_for(scorer, scorer_version(scorer, context), requests) if requests else []:
            chunks.append(scorer_chunk(scorer, chunk_requests))
    return chunks, reference_sets


def thumbs_scores_run_create(
    *, campaign: Campaign, metric_names: list[str] | None = None, requested_by=None
) -> MetricRun:
    """A run scoring the campaign's rated captions that lack a score of the requested metrics (the
    `thumbs_report` command; nothing is queued yet; planning happens before the write transaction, as in
    `runs.metric_run_create`)."""
    scorers, unavailable, available = requested_scorers(metric_names, dataset=campaign.dataset)
    context = version_context_for(dataset=campaign.dataset)
    run = MetricRun(
        dataset=campaign.dataset,
        metrics=[name for scorer in scorers for name in scorer.metric_names if name in available],
        unavailable=unavailable,
        requested_by=requested_by,
    )
    chunks, reference_sets = campaign_chunks_plan(campaign=campaign, scorers=scorers, context=context)
    for index, chunk in enumerate(chunks):
        chunk.index = index
    return metric_run_chunks_save(run=run, chunks=chunks, reference_sets=reference_sets)


def thumbs_report_table(*, campaign: Campaign, metric_names: list[str] | None = None, resamples: int = 1000) -> dict:
    """The report from stored scores (nothing is computed); metric_names None: every metric with scores."""
    rows = campaign_rating_rows(campaign=campaign)
    caption_ids = {caption_id for _, caption_id, _ in rows}
    usernames = dict(campaign.assignments.values_list("rater_id", "rater__username"))
    usernames.update(
        ThumbsRating.objects.filter(campaign=campaign).values_list("rater_id", "rater__username").distinct()
    )
    names = metric_names if metric_names is not None else registry.all_metric_names()
    metric_values = caption_metric_values(campaign=campaign, metric_names=names, caption_ids=caption_ids)
    if metric_names is None:
        metric_names = [name for name in names if metric_values.get(name)]
    per_caption: dict[int, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for _, caption_id, values in rows:
        for field, value in values.items():
            per_caption[caption_id][field].append(value)
    authors = _caption_authors(caption_ids)
    correlations = {}
    for name in metric_names:
        scored = sorted(caption_id for caption_id in metric_values.get(name, {}) if caption_id in per_caption)
        metric = [metric_values[name][caption_id] for caption_id in scored]
        human = {field: [_mean(per_caption[caption_id][field]) for caption_id in scored] for field in CORRELATED_FIELDS}
        table = metric_human_correlations(metric, human, systems=[authors[c] for c in scored], resamples=resamples)
        correlations[name] = {
            level: {field: {method: c.as_dict() for method, c in methods.items()} for field, methods in fields.items()}
            for level, fields in table.items()
        }
    bias = {
        field: rater_bias((rater, caption, values[field]) for rater, caption, values in rows) for field in BIAS_FIELDS
    }
    raters = sorted({rater for rater, _, _ in rows}, key=lambda rater: usernames.get(rater, ""))
    icc = icc_2k_of_ratings((rater, caption, values["overall"]) for rater, caption, values in rows)
    return {
        "campaign": campaign.name,
        "dataset": campaign.dataset.name,
        "ratings": len(rows),
        "captions": len(caption_ids),
        "completion": completion_per_rater(campaign=campaign),
        "agreement": {
            "krippendorff_alpha": thumbs_alpha(rows, THUMBS_FIELDS),
            "icc2k_overall": icc.as_dict(),
        },
        "correlations": correlations,
        "rater_bias": [
            {
                "rater": usernames.get(rater, str(rater)),
                **{field: bias[field][rater][0] if rater in bias[field] else None for field in BIAS_FIELDS},
                "items": bias["overall"][rater][1] if rater in bias["overall"] else 0,
            }
            for rater in raters
        ],
    }


def _mean(values: list[float]) -> float:
    return sum(values) / len(values)


def _caption_authors(caption_ids: set[int]) -> dict[int, str]:
    from corpus.models import Caption

    rows = Caption.objects.filter(pk__in=caption_ids).order_by().values_list("pk", "system__name")
    return {caption_id: system or "human" for caption_id, system in rows}


def thumbs_report_build(
    *, campaign: Campaign, enqueue, metric_names: list[str] | None = None, on_progress=None, watchdog=None
) -> dict:
    """The report; scores missing for the rated captions are computed first (a metric run whose chunks go
    to the workers `enqueue` sends them to)."""
    run = thumbs_scores_run_create(campaign=campaign, metric_names=metric_names)
    computed, unavailable = run_to_completion(
        run=run, metric_names=metric_names, enqueue=enqueue, on_progress=on_progress, watchdog=watchdog
    )
    report = thumbs_report_table(campaign=campaign, metric_names=computed)
    if unavailable:
        report["unavailable"] = unavailable
    return report
