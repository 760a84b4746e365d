"""What the admin dashboards show, assembled from stored scores and judgements and stored per data state.

Each `*_page_data` returns plain JSON-able data, recomputed only when the dataset's fingerprint
(metrics_bridge/services/evaluation/dashboard_cache.py) changed since it was last computed. Workers call them (and
CALIBRATED's fit, a part of the agreement page of its own); page views only read what is stored
(`dashboard_live`) and ask the workers for what is stale (`dashboard_parts_request`), so a view is cheap
whatever the computation costs. Nothing here starts a metric computation: pages offer a button for that.
"""

import logging
import traceback
from dataclasses import dataclass

import numpy as np
from django.db.models import Count, Max

from accounts.live import live_version
from common.structured_log import log_event
from corpus.models import Caption, Dataset
from metrics_bridge.agreement import protocols
from metrics_bridge.agreement.intervals import rank_agreement_intervals
from metrics_bridge.models import MetricRun
from metrics_bridge.scoring import registry
from metrics_bridge.scoring.base import gold_annotation_fingerprint, uses_gold_annotations
from metrics_bridge.selectors.evaluation import caption_scores, dataset_scored_metric_names
from metrics_bridge.selectors.scoring_inputs import dataset_clip_rows, gold_annotations_by_clip
from metrics_bridge.services.evaluation.agreement import (
    SPLITS,
    _request_key,
    _stored_scores,
    agreement_table,
    calibration_key,
    calibration_summary,
    report_columns,
)
from metrics_bridge.services.evaluation.dashboard_cache import (
    CacheState,
    cached_payload,
    cached_state,
    cached_states,
    computation_begin,
    computation_fail,
    computation_request,
    computation_retry,
    dataset_fingerprint,
    dataset_fingerprints,
)
from metrics_bridge.services.evaluation.leaderboard import (
    leaderboard_table,
    pairwise_win_counts_by_clip,
    win_rate_intervals,
)
from metrics_bridge.services.evaluation.leaderboard_domains import domain_fingerprint
from metrics_bridge.services.evaluation.thumbs_report import (
    campaign_rating_rows,
    caption_metric_values,
    thumbs_report_table,
)
from metrics_bridge.services.evaluation.transfer import (
    candidate_sources,
    transfer_fingerprint,
    transfer_key,
    transfer_summary,
)
from metrics_bridge.services.runs.contexts import version_context_for
from metrics_bridge.services.runs.plans import (
    GOLD_MARK,
    gold_fingerprints_by_caption,
    protocol_clips,
    reference_context,
)
from metrics_bridge.services.runs.system_scores import current_versions, system_inputs
from ratings.models import AssignmentItem, Campaign, CaptionPair, ThumbsRating
from ratings.selectors import included_thumbs_ratings, included_votes

COLUMNS = (*SPLITS, "total")

logger = logging.getLogger("captioneval.workers")


def unavailable_reasons(*, computed: list[str]) -> dict[str, str]:
    """Why each metric that has no column is missing: cannot run here (with the reason), or not computed yet."""
    cannot_run = registry.unavailable_metrics(version_context_for(dataset=None))
    reasons = {}
    for name in registry.all_metric_names():
        if name in computed:
            continue
        reasons[name] = cannot_run.get(name, "not computed yet for this dataset: use Compute below")
    return reasons


# --- Pairwise agreement -------------------------------------------------------------------------------


#: the agreement chart shows at most this many metrics unless the admin picks more
CHART_METRICS = 8


def metric_family(name: str) -> str:
    """What kind of metric a name is (the agreement chart shows the best of each kind by default)."""
    if name.startswith(("BLEU", "ROUGE")) or name in ("METEOR", "CIDEr_D", "SPICE", "SPIDEr"):
        return "n-gram"
    if name.startswith("XACE"):
        return "audio graph factor" if name.rsplit("_", 1)[-1] in ("E", "S", "A", "R") else "audio graph"
    if name.startswith("LLM_"):
        return "LLM judge"
    return "embedding" if name in ("SBERT", "FENSE", "BERTScore", "DATE") else "other"


def agreement_chart_metrics(rows: dict[str, dict], chosen: list[str] | None = None) -> list[str]:
    """The metrics the agreement chart draws: those chosen (that have a row), else the best (by total) of each
    family, then the next best, up to CHART_METRICS."""
    if chosen:
        return [name for name in rows if name in chosen]
    ranked = sorted(rows, key=lambda name: -(rows[name].get("total") or 0))
    picked = []
    for name in ranked:
        if metric_family(name) not in {metric_family(other) for other in picked}:
            picked.append(name)
    for name in ranked:
        if len(picked) >= CHART_METRICS:
            break
        if name not in picked:
            picked.append(name)
    picked = picked[:CHART_METRICS]
    return [name for name in rows if name in picked]


def protocol_coverage(*, dataset: Dataset, metric_names: list[str]) -> dict[str, tuple[int, int]]:
    """{metric: (stored, needed)} scores of the pair protocol's requests (FENSE's, or BRACE's for BRACE datasets;
    other batches, e.g. the leaderboard's caption scores against all references, don't make a metric's agreement
    column complete)."""
    clips = protocol_clips(dataset_clip_rows(dataset=dataset, included_only=True))
    context = version_context_for(dataset=dataset)
    coverage, done = {}, []
    gold_fingerprints = None
    for name in metric_names:
        scorer = registry.scorer_for(name)
        if scorer in done:
            continue
        done.append(scorer)
        # scorers that read gold annotations store their scores under the clip's gold fingerprint
        if getattr(scorer, "uses_gold_annotations", False) and gold_fingerprints is None:
            gold_fingerprints = gold_fingerprints_by_caption(dataset=dataset)
        plan = protocols.scorer_plan(clips, protocol_name=dataset.agreement_protocol, scorer=scorer)
        # a stored NULL (an X-ACE factor not applicable to the caption) counts as computed
        stored, _ = _stored_scores(scorer=scorer, plan=plan, context=context, gold_fingerprints=gold_fingerprints)
        keys = {
            _request_key(scorer, batch, request, gold_fingerprints)
            for batch in plan.batches
            for request in batch.requests
        }
        for metric in scorer.metric_names:
            coverage[metric] = (sum(1 for key in keys if key in stored[metric]), len(keys))
    return coverage


# Each dashboard page shows one or more stored parts (PAGE_PARTS), each computed by a worker task of its own
# (metrics_bridge.tasks.dashboards.compute_dashboard_part -> dashboard_part_compute) for the data as it is now and
# read by the page (`dashboard_live`): its last result with its age, or the computation's state (queued, running,
# lost and sent again, failed). `<part>_page_data` computes a part when its stored result is stale: only workers and
# commands call it, never a page view.

DASHBOARD_KINDS = ("agreement", "leaderboard", "thumbs")
#: the stored results each dashboard page shows; the first is the page's main table
PAGE_PARTS = {
    "agreement": ("agreement", "calibration", "transfer"),
    "leaderboard": ("leaderboard",),
    "thumbs": ("thumbs",),
}
#: how each part's target (a Dataset or Campaign) is loaded from its id
PART_KINDS = {
    "agreement": "agreement",
    "calibration": "agreement",
    "transfer": "agreement",
    "leaderboard": "leaderboard",
    "thumbs": "thumbs",
}


def _key(kind: str, object_id: int) -> str:
    return f"{kind}:{object_id}"


def dashboard_state(*, kind: str, target) -> CacheState:
    """target: the Dataset (agreement, leaderboard) or the Campaign (thumbs)."""
    return cached_state(key=_key(kind, target.pk), fingerprint=_fingerprint(kind, target))


def _fingerprint(kind: str, target) -> str:
    if kind == "thumbs":
        return campaign_fingerprint(campaign=target)
    if kind == "leaderboard":  # its per-domain columns read the systems' scores on other datasets too
        return dataset_fingerprint(dataset=target) + ":" + domain_fingerprint(dataset=target)
    return dataset_fingerprint(dataset=target)


def _part_key(part: str, target) -> str:
    if part == "transfer":
        return transfer_key(dataset=target)
    return calibration_key(dataset=target) if part == "calibration" else _key(part, target.pk)


def _part_fingerprints(kind: str, target) -> dict[str, str]:
    """{part: its data state}: the page's, except the trained-elsewhere figure, which also reads every other study
    (the datasets' fingerprints are then read together, each once: a fingerprint's queries read whole tables)."""
    if "transfer" not in PAGE_PARTS[kind]:
        fingerprint = _fingerprint(kind, target)
        return {part: fingerprint for part in PAGE_PARTS[kind]}
    # the agreement page's own fingerprint is its dataset's
    sources = candidate_sources(dataset=target)
    known = dataset_fingerprints(datasets=[target, *sources])
    elsewhere = transfer_fingerprint(dataset=target, known=known, sources=sources)
    return {part: elsewhere if part == "transfer" else known[target.pk] for part in PAGE_PARTS[kind]}


def dashboard_part_states(*, kind: str, target, fingerprints: dict[str, str] | None = None) -> dict[str, CacheState]:
    """{part: its stored state} for a page (`fingerprints`: the parts' data states, when read already)."""
    fingerprints = fingerprints or _part_fingerprints(kind, target)
    keys = {part: _part_key(part, target) for part in PAGE_PARTS[kind]}
    states = cached_states(fingerprints={keys[part]: fingerprints[part] for part in PAGE_PARTS[kind]})
    return {part: states[keys[part]] for part in PAGE_PARTS[kind]}


@dataclass(frozen=True)
class DashboardLive:
    """What a dashboard page shows right now, for its live status (accounts/live.py)."""

    state: CacheState  # the main table's
    parts: dict[str, CacheState]
    run: MetricRun | None  # the run whose progress the page shows: the one it started, else an active one
    version: str
    busy: bool  # a run is going on, or the numbers are being brought up to date
    needs_refresh: bool  # a part is stale and no computation of it is on its way: the page asks for one
    given_up: list[str]  # parts whose computation was lost or failed MAX_ATTEMPTS times: reported


def _wanted(state: CacheState, run_active: bool) -> bool:
    # mid-run only a part never computed yet is computed (every finished chunk changes the data)
    return state.needs_request and (not run_active or state.payload is None)


def dashboard_live(
    *, kind: str, target, run_id: int | None = None, fingerprints: dict[str, str] | None = None
) -> DashboardLive:
    """The dashboard's stored numbers, their computations and the metric run on its dataset; while a run goes
    on, the numbers are recomputed only once it ends (every finished chunk changes the data)."""
    parts = dashboard_part_states(kind=kind, target=target, fingerprints=fingerprints)
    dataset_id = target.dataset_id if kind == "thumbs" else target.pk
    runs = MetricRun.objects.filter(dataset_id=dataset_id)
    run = runs.filter(pk=run_id).first() if run_id else None
    if run is None:
        run = runs.filter(status__in=MetricRun.ACTIVE_STATUSES).order_by("-created_at").first()
    active = run is not None and not run.is_finished
    run_parts = (run.pk, run.status, run.chunks_done, run.chunks_failed, run.chunks_total) if run else None
    given_up = [part for part, state in parts.items() if state.computation and state.computation.given_up]
    shown = [
        (
            part,
            state.computed_at,
            state.fresh,
            state.computation and (state.computation.phase, state.computation.attempts),
        )
        for part, state in parts.items()
    ]
    return DashboardLive(
        state=parts[PAGE_PARTS[kind][0]],
        parts=parts,
        run=run,
        version=live_version(kind, target.pk, shown, run_parts),
        busy=active or any(not state.fresh and part not in given_up for part, state in parts.items()),
        needs_refresh=any(_wanted(state, active) for state in parts.values()),
        given_up=given_up,
    )


def dashboard_parts_request(*, kind: str, target, enqueue, retry: bool = False) -> list[str]:
    """Have a worker compute the page's parts that need it (`enqueue(part, object_id)` sends the task); `retry`
    (an admin's "Try again") also sends those given up. Returns the parts sent."""
    fingerprints = _part_fingerprints(kind, target)
    live = dashboard_live(kind=kind, target=target, fingerprints=fingerprints)
    active = live.run is not None and not live.run.is_finished
    sent = []
    for part, state in live.parts.items():
        if retry and part in live.given_up:
            computation_retry(key=_part_key(part, target))
        elif not _wanted(state, active):
            continue
        request = computation_request(
            key=_part_key(part, target),
            fingerprint=fingerprints[part],
            enqueue=lambda part=part: enqueue(part, target.pk),
        )
        if request:
            sent.append(part)
    return sent


def dashboard_part_compute(*, part: str, object_id: int) -> str:
    """A worker's computation of one part (for the data as it is when it begins): "done", "gone" (the dataset or
    campaign was deleted) or "failed" (recorded on the part, which the page reports)."""
    try:
        target = dashboard_target(kind=PART_KINDS[part], object_id=object_id)
    except (Dataset.DoesNotExist, Campaign.DoesNotExist):
        return "gone"
    key = _part_key(part, target)
    computation_begin(key=key)
    try:
        if part == "calibration":
            calibration_summary(dataset=target)
        elif part == "transfer":
            transfer_summary(dataset=target)
        else:
            dashboard_refresh(kind=part, target=target)
    except Exception as error:  # recorded for the page, which says so instead of computing forever
        computation_fail(key=key, error=f"{type(error).__name__}: {error}")
        log_event(logger, "dashboard_failed", level=logging.ERROR, key=key, traceback=traceback.format_exc()[-3000:])
        return "failed"
    return "done"


def dashboard_refresh(*, kind: str, target) -> dict:
    """The page's main table for the current data, computed if stale (workers and commands only)."""
    builders = {"agreement": agreement_page_data, "leaderboard": leaderboard_page_data}
    if kind == "thumbs":
        return thumbs_page_data(campaign=target)
    return builders[kind](dataset=target)


def dashboard_target(*, kind: str, object_id: int):
    """The Dataset or Campaign a dashboard is about; DoesNotExist when there is none."""
    if kind not in DASHBOARD_KINDS:
        raise ValueError(f"unknown dashboard {kind!r}")
    if kind == "thumbs":
        return Campaign.objects.select_related("dataset").get(pk=object_id, task_type=Campaign.TaskType.THUMBS)
    return Dataset.objects.get(pk=object_id)


def dashboard_refresh_by_id(*, kind: str, object_id: int) -> None:
    dashboard_refresh(kind=kind, target=dashboard_target(kind=kind, object_id=object_id))


def agreement_page_data(*, dataset: Dataset) -> dict:
    def build() -> dict:
        versions = current_versions(registry.all_metric_names(), dataset=dataset)
        scored = dataset_scored_metric_names(dataset=dataset, versions=versions)
        coverage = protocol_coverage(dataset=dataset, metric_names=scored)
        complete = [name for name in scored if coverage[name][0] == coverage[name][1]]
        table = agreement_table(dataset=dataset, metric_names=complete, intervals=True)
        table["columns"] = report_columns(table)
        table["unavailable"] = unavailable_reasons(computed=list(table["metrics"]))
        for name in scored:
            if name not in complete:
                have, need = coverage[name]
                table["unavailable"][name] = (
                    f"partly computed: {have} of the {need} scores the pair protocol needs are stored "
                    "(e.g. leaderboard scores only); use Compute below"
                )
        return table

    return cached_payload(
        key=_key("agreement", dataset.pk), fingerprint=dataset_fingerprint(dataset=dataset), build=build
    )


# --- Leaderboard ----------------------------------------------------------------------------------------


def leaderboard_page_data(*, dataset: Dataset) -> dict:
    def build() -> dict:
        table = leaderboard_table(dataset=dataset)
        intervals = win_rate_intervals(dataset=dataset)
        ids = {entry.name: system_id for system_id, entry in system_inputs(dataset_id=dataset.pk).items()}
        for row in table["systems"]:
            row["win_rate_ci"] = intervals.get(ids.get(row["system"]))
        metrics = list(table["rank_agreement"])
        tau_intervals = rank_agreement_intervals(
            {name: [row["metrics"][name] for row in table["systems"]] for name in metrics},
            _clip_tallies(dataset=dataset, system_ids=[ids.get(row["system"]) for row in table["systems"]]),
        )
        for name in metrics:
            table["rank_agreement"][name]["kendall_tau_ci"] = tau_intervals[name]
        table["best"] = {
            name: max(
                (row["metrics"][name] for row in table["systems"] if row["metrics"][name] is not None), default=None
            )
            for name in metrics
        }
        table["unavailable"] = unavailable_reasons(computed=metrics)
        return table

    return cached_payload(
        key=_key("leaderboard", dataset.pk), fingerprint=_fingerprint("leaderboard", dataset), build=build
    )


def _clip_tallies(*, dataset: Dataset, system_ids: list) -> np.ndarray:
    """clips x systems x 3: each system's votes [for, no preference, against] on each clip's pairs."""
    by_clip = pairwise_win_counts_by_clip(dataset=dataset)
    clips = sorted({clip for _, clip in by_clip})
    position = {clip: index for index, clip in enumerate(clips)}
    tallies = np.zeros((len(clips), len(system_ids), 3))
    for column, system_id in enumerate(system_ids):
        for (system, clip), tally in by_clip.items():
            if system == system_id:
                tallies[position[clip], column] = tally
    return tallies


# --- THumBS ---------------------------------------------------------------------------------------------


def campaign_fingerprint(*, campaign: Campaign) -> str:
    """The dataset's fingerprint plus the campaign's completion state (assignment items done)."""
    items = AssignmentItem.objects.filter(assignment__campaign=campaign).aggregate(
        n=Count("pk"), done=Count("completed_at"), last=Max("completed_at"), raters=Count("assignment", distinct=True)
    )
    return dataset_fingerprint(dataset=campaign.dataset) + ":" + ",".join(str(items[key]) for key in sorted(items))


def thumbs_page_data(*, campaign: Campaign) -> dict:
    return cached_payload(
        key=_key("thumbs", campaign.pk),
        fingerprint=campaign_fingerprint(campaign=campaign),
        build=lambda: thumbs_report_table(campaign=campaign),
    )


def thumbs_scatter_data(*, campaign: Campaign, metric: str, field: str) -> tuple[list[float], list[float]]:
    """Per rated caption with a score: (metric value, mean human value of `field`), for the scatter plot."""
    rows = campaign_rating_rows(campaign=campaign)
    human: dict[int, list[float]] = {}
    for _, caption_id, values in rows:
        human.setdefault(caption_id, []).append(values[field])
    values = caption_metric_values(campaign=campaign, metric_names=[metric], caption_ids=set(human))[metric]
    scored = sorted(caption_id for caption_id in values if caption_id in human)
    return [values[c] for c in scored], [sum(human[c]) / len(human[c]) for c in scored]


# --- One caption -----------------------------------------------------------------------------------------


def caption_page_data(*, caption: Caption) -> dict:
    """References, scores, ratings, pair outcomes of one caption (not cached: a handful of small queries)."""
    references = list(
        Caption.objects.corpus()
        .filter(clip_id=caption.clip_id, role=Caption.Role.REFERENCE)
        .order_by("position")
        .values_list("text", flat=True)
    )
    # Only judgements that count (excluded raters, attention checks and previews are left out, as in every figure).
    ratings = list(
        included_thumbs_ratings(ThumbsRating.objects.filter(caption=caption))
        .select_related("rater", "campaign")
        .order_by("rater__username")
    )
    pairs = []
    for pair in CaptionPair.objects.filter(clip_id=caption.clip_id).filter(
        caption_a=caption
    ) | CaptionPair.objects.filter(caption_b=caption):
        votes = list(included_votes(pair.votes.all()).values_list("choice", flat=True))
        side = "a" if pair.caption_a_id == caption.pk else "b"
        other = pair.caption_b if side == "a" else pair.caption_a
        pairs.append(
            {
                "pair": pair,
                "other": other,
                "won": sum(1 for v in votes if v == side),
                "lost": sum(1 for v in votes if v not in (side, "none")),
                "ties": sum(1 for v in votes if v == "none"),
            }
        )
    return {"references": references, "ratings": ratings, "pairs": pairs}


@dataclass
class CaptionScores:
    #: per metric, the score pages read: against all of the clip's references, under the clip's current gold
    #: annotation for scorers that read it (X-ACE), the newest version; X-ACE first
    in_use: list
    #: against the same references but an earlier gold annotation (or none yet), or an older version
    superseded: list
    #: the pair protocol's scores (leave-one-out references, corpus batches)
    protocol: list
    #: the clip's gold annotation as scorers receive it, or None
    gold: dict | None


def _metric_order(metric: str) -> tuple:
    return (not metric.startswith("XACE"), metric != "XACE", metric)


def caption_scores_by_use(*, caption: Caption, references: tuple[str, ...]) -> CaptionScores:
    """The caption's stored scores split into in use, superseded and pair-protocol rows (see CaptionScores)."""
    gold = gold_annotations_by_clip(clip_ids={caption.clip_id}).get(str(caption.clip_id))
    fingerprint = gold_annotation_fingerprint(gold)
    in_use, superseded, protocol, taken = [], [], [], set()
    for score in caption_scores(caption=caption):  # newest first within each metric
        try:
            reads_gold = uses_gold_annotations(registry.scorer_for(score.metric))
        except KeyError:  # a metric no longer in the registry
            reads_gold = False
        current = reference_context(
            corpus_level=False, batch_label="", gold_fingerprint=fingerprint if reads_gold else None
        )
        context = score.reference_set.context
        if tuple(score.reference_set.texts) != references or (context and not context.startswith(GOLD_MARK)):
            protocol.append(score)
        elif context == current and score.metric not in taken:
            in_use.append(score)
            taken.add(score.metric)
        else:
            superseded.append(score)
    in_use.sort(key=lambda score: _metric_order(score.metric))
    return CaptionScores(in_use=in_use, superseded=superseded, protocol=protocol, gold=gold)
