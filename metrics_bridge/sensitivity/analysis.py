"""Metric sensitivity to factor perturbations (X-ACE section 4.2, Table 4). Plain Python, no Django.

For every reference caption r of a clip, the other references of the clip (padded to 4 as in the
FENSE protocol) are its references. The clean caption r and each perturbed r' (one factor changed,
`perturbations.Perturber`) are scored against the same references by every metric. Per metric
and perturbation, the scores of the clean captions the perturbation applied to and the scores of
their perturbed versions are compared with the Kruskal-Wallis H test (scipy.stats.kruskal); the
table holds -log10 p (larger = the metric separates clean from perturbed captions more
clearly; p = 0.05 is 1.30). The paper prints -ln p (p = 0.05 is 3.0); this table is -log10 p.

The hallucination probe (BRACE-style, `Perturber.hallucinate`): the same clean captions against
their one-word hallucinations (a source noun swapped for an unrelated noun), scored against the same
references; per metric, the share of captions whose original scores strictly higher than its
hallucination ("prefers the original", BRACE's rule: a tie is not a preference), with the ties counted.

Each set of captions is scored as its own batch (corpus-level metrics such as CIDEr-D get their
document frequencies from that batch's references, which are the same references for the clean
and the perturbed batch).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from metrics_bridge.agreement.protocol import padded, references_without
from metrics_bridge.scoring.base import ScoringContext, ScoringRequest, score_batches

from .perturbations import FACTOR_OF, HALLUCINATION, PERTURBATIONS, Perturbed, Perturber

EXAMPLES_PER_PERTURBATION = 3


@dataclass
class SensitivityItem:
    clip_key: str | None
    original: str
    references: tuple[str, ...]
    perturbed: dict[str, Perturbed] = field(default_factory=dict)


def build_items(
    clips: Sequence[tuple[str | None, Sequence[str]]],
    perturber: Perturber,
    *,
    kinds: Sequence[str] = PERTURBATIONS,
    hallucinations: bool = True,
) -> list[SensitivityItem]:
    """One item per reference caption of every clip with at least two references (with its one-word
    hallucination too, unless `hallucinations` is off)."""
    items = []
    for clip_key, references in clips:
        references = list(references)
        if len(references) < 2:
            continue
        for caption in references:
            others = references_without(references, caption)
            if not others:
                continue
            item = SensitivityItem(clip_key=clip_key, original=caption, references=tuple(padded(others)))
            for kind in kinds:
                result = perturber.perturb(kind, caption, references)
                if result is not None and result.text != caption:
                    item.perturbed[kind] = result
            if hallucinations:
                result = perturber.hallucinate(caption, references)
                if result is not None and result.text != caption:
                    item.perturbed[HALLUCINATION] = result
            items.append(item)
    return items


def neg_log10_p(clean: Sequence[float], perturbed: Sequence[float]) -> tuple[float, float]:
    """(-log10 p, p) of the Kruskal-Wallis test; identical values everywhere give p = 1."""
    from scipy.stats import kruskal

    clean = [value for value in clean if value is not None and not math.isnan(value)]
    perturbed = [value for value in perturbed if value is not None and not math.isnan(value)]
    if len(clean) < 2 or len(perturbed) < 2:
        return math.nan, math.nan
    try:
        p_value = float(kruskal(clean, perturbed).pvalue)
    except ValueError:  # "All numbers are identical"
        p_value = 1.0
    if math.isnan(p_value):
        p_value = 1.0
    return (-math.log10(p_value) if p_value > 0 else math.inf), p_value


def _request(item: SensitivityItem, text: str) -> ScoringRequest:
    # No clip key: X-ACE compares with the other reference captions, never a gold annotation graph.
    return ScoringRequest(candidate=text, references=item.references)


def sensitivity_table(
    items: Sequence[SensitivityItem],
    scorers: Sequence,
    context: ScoringContext,
    *,
    metric_names: Sequence[str] | None = None,
    kinds: Sequence[str] = PERTURBATIONS,
    on_scorer: Callable[[str], None] = lambda name: None,
) -> dict:
    """{"perturbations": {...counts, examples}, "table": {kind: {metric: {...}}}, "metrics": [...]}."""
    applicable = {kind: [item for item in items if kind in item.perturbed] for kind in kinds}
    clean_items = [item for item in items if item.perturbed]
    position = {id(item): index for index, item in enumerate(clean_items)}
    hallucinated = [item for item in items if HALLUCINATION in item.perturbed]
    batches = [[_request(item, item.original) for item in clean_items]]
    batches += [[_request(item, item.perturbed[kind].text) for item in applicable[kind]] for kind in kinds]
    batches += [[_request(item, item.perturbed[HALLUCINATION].text) for item in hallucinated]]
    probe: dict[str, dict] = {}

    table: dict[str, dict[str, dict]] = {kind: {} for kind in kinds}
    names_in_order: list[str] = []
    for scorer in scorers:
        names = [name for name in scorer.metric_names if metric_names is None or name in metric_names]
        if not names:
            continue
        on_scorer(names[0])
        non_empty = [index for index, batch in enumerate(batches) if batch]
        results = score_batches(scorer, [batches[index] for index in non_empty], context)
        by_batch = dict(zip(non_empty, results, strict=True))
        for name in names:
            names_in_order.append(name)
            clean_scores = [result.value for result in by_batch[0][name]] if 0 in by_batch else []
            for offset, kind in enumerate(kinds, start=1):
                perturbed = [result.value for result in by_batch[offset][name]] if offset in by_batch else []
                clean = [clean_scores[position[id(item)]] for item in applicable[kind]]
                table[kind][name] = _cell(clean, perturbed)
            last = len(kinds) + 1
            hallucination_scores = [result.value for result in by_batch[last][name]] if last in by_batch else []
            originals = [clean_scores[position[id(item)]] for item in hallucinated]
            probe[name] = _preference_cell(originals, hallucination_scores)
    return {
        "metrics": names_in_order,
        "captions": len(items),
        "perturbations": {kind: _perturbation_summary(kind, applicable[kind], len(items)) for kind in kinds},
        "table": table,
        "hallucination": {**_perturbation_summary(HALLUCINATION, hallucinated, len(items)), "metrics": probe},
    }


def _preference_cell(originals: Sequence[float], hallucinations: Sequence[float]) -> dict:
    """How often the original scores strictly higher than its hallucination (percent of the pairs both scored)."""
    pairs = [
        (o, h)
        for o, h in zip(originals, hallucinations, strict=True)
        if o is not None and h is not None and not (math.isnan(o) or math.isnan(h))
    ]
    prefers = sum(1 for o, h in pairs if o > h)
    ties = sum(1 for o, h in pairs if o == h)
    return {
        "prefers_original": round(100.0 * prefers / len(pairs), 2) if pairs else None,
        "ties": ties,
        "n": len(pairs),
        "mean_original": _mean([o for o, _ in pairs]),
        "mean_hallucination": _mean([h for _, h in pairs]),
    }


def _mean(values: Sequence[float]) -> float | None:
    finite = [value for value in values if value is not None and not math.isnan(value)]
    return float(np.mean(finite)) if finite else None


def _cell(clean: Sequence[float], perturbed: Sequence[float]) -> dict:
    score, p_value = neg_log10_p(clean, perturbed)
    return {
        "neg_log10_p": None if math.isnan(score) else (score if math.isfinite(score) else 1e9),
        "p": None if math.isnan(p_value) else p_value,
        "n": len(perturbed),
        "mean_clean": _mean(clean),
        "mean_perturbed": _mean(perturbed),
    }


def _perturbation_summary(kind: str, applied: Sequence[SensitivityItem], total: int) -> dict:
    examples = [
        {"original": item.original, "perturbed": item.perturbed[kind].text, "change": item.perturbed[kind].changed}
        for item in applied[:EXAMPLES_PER_PERTURBATION]
    ]
    factor = FACTOR_OF.get(kind, "one-word hallucination (source noun -> unrelated noun)")
    return {"factor": factor, "applied": len(applied), "captions": total, "examples": examples}
