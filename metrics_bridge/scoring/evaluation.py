"""Score candidate captions against reference lists in plain Python, as in a notebook: no Django, database or worker.

    from metrics_bridge.scoring import evaluate

    result = evaluate(["a dog barks"], [["a dog is barking", "dog barking loudly"]], metrics=["BLEU_4", "CIDEr_D"])
    result.per_caption["CIDEr_D"]  # [0.93...], one value per candidate, in order
    result.corpus["BLEU_4"]        # one value for the whole list

The candidates are one corpus, as a run's all-references batch is (metrics_bridge/services/runs/plans.py): CIDEr-D's
document frequencies and DATE's ranks come from exactly this list, so a run over a dataset whose captions are
these candidates stores these per-caption values. Corpus values follow `system_level.system_value`
(pycocoevalcap's corpus BLEU and METEOR's aggregate, the mean of caption scores for most others).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .base import ScoringContext, ScoringRequest, score_batches
from .registry import scorer_for
from .system_level import caption_means, is_caption_mean, system_value

DEFAULT_METRICS = ("BLEU_4", "METEOR", "ROUGE_L", "CIDEr_D", "SBERT")


@dataclass(frozen=True)
class Evaluation:
    """`per_caption[metric]`: one value per candidate, in order (None where the metric does not apply);
    `corpus[metric]`: the value over all candidates."""

    per_caption: dict[str, list[float | None]]
    corpus: dict[str, float | None]


def evaluate(
    candidates: Sequence[str],
    references: Sequence[Sequence[str]],
    metrics: Sequence[str] = DEFAULT_METRICS,
    *,
    context: ScoringContext | None = None,
) -> Evaluation:
    """Score each candidate against its own reference list with the named metrics (registry names, e.g. BLEU_4,
    CIDEr_D, SBERT, FENSE). `context` carries what some metrics need beyond texts (a FENSE detector path, an LLM
    endpoint, DATE's delta); the default suits the text metrics. Raises ValueError on mismatched lengths or a
    candidate without references, KeyError on an unknown metric name."""
    if len(candidates) != len(references):
        raise ValueError(f"{len(candidates)} candidates but {len(references)} reference lists")
    if any(not refs for refs in references):
        raise ValueError("every candidate needs at least one reference")
    context = context or ScoringContext()
    requests = [
        ScoringRequest(candidate=text, references=tuple(refs), candidate_id=index)
        for index, (text, refs) in enumerate(zip(candidates, references, strict=True))
    ]
    per_caption: dict[str, list[float | None]] = {}
    corpus: dict[str, float | None] = {}
    for scorer in _scorers(metrics):
        wanted = [name for name in scorer.metric_names if name in metrics]
        (results,) = score_batches(scorer, [requests], context)
        # A caption mean is read off the scores just made; BLEU, METEOR, CIDEr-D and DATE compute their own.
        if is_caption_mean(scorer):
            system = caption_means(scorer.metric_names, results)
        else:
            system = system_value(scorer, requests, context)
        for name in wanted:
            per_caption[name] = [result.value for result in results[name]]
            corpus[name] = system[name].value
    return Evaluation(
        per_caption={name: per_caption[name] for name in metrics}, corpus={name: corpus[name] for name in metrics}
    )


def _scorers(metrics: Sequence[str]) -> list:
    """Each scorer once, however many of its names are asked (BLEU_1..4 share one pass)."""
    scorers = []
    for name in metrics:
        scorer = scorer_for(name)
        if all(scorer is not seen for seen in scorers):
            scorers.append(scorer)
    return scorers
