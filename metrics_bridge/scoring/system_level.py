"""System-level metric values: one number per captioning system over its captions. Plain Python.

    system_value(scorer, requests, context) -> {metric name: SystemValue(value, details)}
        requests: the system's captions, each distinct (clip, caption) once, with all of its clip's references.
    caption_means(metric_names, results) -> {metric name: SystemValue}
        the mean of per-caption results (what embedding and LLM metrics report per system); X-ACE adds its
        factor precision / recall / F1 and attribute sub-category P / R (X-ACE Table 7, Figure 5).

Which number a metric reports per system:
- BLEU_1..4: pycocoevalcap's corpus BLEU (clipped n-gram counts and lengths summed over the corpus,
  option "closest"), as `Bleu(4).compute_score` returns it -- not the mean of sentence BLEU;
- METEOR: the aggregate METEOR 1.5 prints after scoring the corpus (`Meteor().compute_score`);
- DATE: MECAT's set score over the system's captions (protocols.md §4): the mean of
  `date.date_item_scores` over the items, with the dataset's delta (TEAM.md contract 2);
- other corpus-level scorers (CIDEr-D, SPIDEr): the mean over the system's captions, each scored with
  the system's captions as the corpus (CIDEr-D's document frequencies);
- everything else (ROUGE_L, SPICE, SBERT, BERTScore, FENSE, LLM judges, X-ACE): the mean of per-caption
  scores against all references, which for ROUGE-L and SPICE is also what pycocoevalcap's compute_score returns.
NaN / None values (an X-ACE factor absent from both graphs is stored as NULL) are skipped in means.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from .base import ScoreResult, ScoringContext, ScoringRequest

FACTOR_NAMES = ("event", "source", "attribute", "relation")
#: the X-ACE scorers' overall metric names: their details carry factor and attribute-category breakdowns
XACE_OVERALL = ("XACE", "XACE_CAPTIONS")
#: AudioCapBench's judge: its caption details carry the three dimensions the system value averages
JUDGE_3D = "LLM_JUDGE_3D"
JUDGE_DIMENSIONS = ("accuracy", "completeness", "hallucination")
ATTRIBUTE_CATEGORIES = ("Duration", "Volume", "Pitch", "Location", "Count", "Distance", "Variation", "Tone", "Other")


@dataclass
class SystemValue:
    value: float | None
    details: dict = field(default_factory=dict)


def is_caption_mean(scorer) -> bool:
    """True when the system value is the mean of per-caption scores (so stored caption scores can be reused)."""
    return scorer.metric_names[0] not in ("BLEU_1", "METEOR") and not scorer.corpus_level


def system_value(scorer, requests: Sequence[ScoringRequest], context: ScoringContext) -> dict[str, SystemValue]:
    """The system-level value of each of the scorer's metric names over `requests`."""
    if not requests:
        return {name: SystemValue(None, {"captions": 0}) for name in scorer.metric_names}
    first = scorer.metric_names[0]
    if first == "BLEU_1":
        return _corpus_bleu(scorer, requests)
    if first == "METEOR":
        return _corpus_meteor(requests)
    if first == "DATE":
        return _date_set_score(scorer, requests, context)
    return caption_means(scorer.metric_names, scorer.score_batch(requests, context))


def _mean(values) -> float | None:
    kept = [float(v) for v in values if v is not None and not math.isnan(float(v))]
    return sum(kept) / len(kept) if kept else None


def caption_means(metric_names: Sequence[str], results: dict[str, list[ScoreResult]]) -> dict[str, SystemValue]:
    means = {}
    for name in metric_names:
        values = [result.value for result in results[name]]
        details = {"captions": len(values), "aggregate": "mean of caption scores"}
        if name in XACE_OVERALL:
            details.update(xace_breakdown([result.details for result in results[name]]))
        if name == JUDGE_3D:
            details["judge"] = judge_breakdown([result.details for result in results[name]])
        means[name] = SystemValue(_mean(values), details)
    return means


def judge_breakdown(details: Sequence[dict]) -> dict:
    """Means of the AudioCapBench judge's accuracy, completeness and hallucination (10 = nothing invented)."""
    return {dimension: _mean(d.get(dimension) for d in details) for dimension in JUDGE_DIMENSIONS}


def xace_breakdown(details: Sequence[dict]) -> dict:
    """Mean factor P / R / F1 and mean attribute sub-category P / R. A factor absent from both graphs of a
    caption ("included" false, P / R / F1 None) is not applicable there and left out of that factor's means."""
    factors = {}
    for factor in FACTOR_NAMES:
        rows = [d.get("factors", {}).get(factor) for d in details]
        rows = [row for row in rows if row and row.get("included", True)]
        factors[factor] = {key: _mean(row.get(key) for row in rows) for key in ("precision", "recall", "f1")}
        factors[factor]["captions"] = len(rows)
    categories = {}
    for category in ATTRIBUTE_CATEGORIES:
        rows = [d.get("attribute_categories", {}).get(category) for d in details]
        rows = [row for row in rows if row]
        categories[category] = {
            "precision": _mean(row.get("precision") for row in rows),
            "recall": _mean(row.get("recall") for row in rows),
            "captions": len(rows),
        }
    return {"factors": factors, "attribute_categories": categories}


def _corpus_bleu(scorer, requests) -> dict[str, SystemValue]:
    from pycocoevalcap.bleu.bleu_scorer import BleuScorer

    from .classic import tokenize_batches

    (tokenized,) = tokenize_batches([requests])
    bleu = BleuScorer(n=4)
    for candidate, references in tokenized:
        bleu += (candidate, list(references))
    corpus, _ = bleu.compute_score(option="closest", verbose=0)
    details = {"captions": len(requests), "aggregate": "pycocoevalcap corpus BLEU"}
    return {name: SystemValue(float(corpus[n]), dict(details)) for n, name in enumerate(scorer.metric_names)}


def _corpus_meteor(requests) -> dict[str, SystemValue]:
    from .classic import meteor_process, tokenize_batches

    (tokenized,) = tokenize_batches([requests])
    value = meteor_process.shared_process().corpus_score(tokenized)
    return {"METEOR": SystemValue(value, {"captions": len(requests), "aggregate": "METEOR 1.5 corpus aggregate"})}


def _date_set_score(scorer, requests, context: ScoringContext) -> dict[str, SystemValue]:
    """MECAT's set score over the system's captions: the mean of the items' DATE (`date.date_item_scores`),
    the system's items being both the scored set and the clips of the discriminability."""
    from .date import date_item_scores

    items = date_item_scores(
        [request.candidate for request in requests],
        [list(request.references) for request in requests],
        delta=context.dataset.date_delta,
        encoder=getattr(scorer, "encoder", None),
    )
    details = {
        "captions": len(requests),
        "aggregate": "DATE set score (mean over items)",
        "delta": context.dataset.date_delta,
        "similarity": _mean(item["similarity"] for item in items),
        "discriminability": _mean(item["discriminability"] for item in items),
    }
    return {"DATE": SystemValue(_mean(item["date"] for item in items), details)}
