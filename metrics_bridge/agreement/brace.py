"""BRACE's pairwise protocol (protocols.md §6, BRACE's `src/data.py` and `src/eval_clap/eval.py`). Plain Python.

Flow, the same as the FENSE protocol's (`protocol.py`) so that stored scores, CALIBRATED and the
dashboards read both alike::

    plan = scoring_plan(clips)                      # a protocol.ScoringPlan; plan.unscorable lists the
    ...                                             # pairs left without a reference
    report = agreement_report(plan, batch_scores, metric="SBERT")
    report.as_dict()  # {"HC": 100.0, "HM": 100.0, "MM": 75.0, "total": 90.0, "f1": 88.89, ...}

- **References of a pair**: BRACE-Main: the clip's references with one occurrence of caption_0 and one
  of caption_1 removed, as `list.remove` does (a list that repeats a caption keeps its other copies);
  BRACE-Hallucination: the list the pair carries. No padding, no leave-one-out (BRACE scores every
  split the same way). A pair left with no reference is unscorable: counted apart, never scored.
- **Prediction**: caption_0 when its score is strictly higher, else caption_1 (a metric tie predicts
  caption_1, as BRACE's code does). **Answer**: caption_0 when the votes sum > 0, caption_1 when < 0
  (a zero sum is a tie, left out); a HALLU pair's answer is its original caption.
- **Figures**: accuracy = share of pairs where prediction = answer, per split and in total, percent
  with two decimals (BRACE's tables); F1 = sklearn `f1_score(answer, prediction)` with "caption_1
  preferred" as the positive class, in percent.
- A missing score (NaN: never computed) counts as a wrong prediction; a None score (not applicable,
  e.g. an X-ACE factor absent from both graphs) leaves the pair out of that metric's figures.
- Captions are compared after whitespace normalisation (the released files have captions that start
  with a newline; the importer stores them normalised already).

Batches for corpus-level metrics (CIDEr-D's document frequencies): BRACE's evaluation code scores one
list of candidates per side, so every pair's caption_0 is one corpus ("brace:caption_0") and every
caption_1 the other ("brace:caption_1"); scorers that ask for one batch (DATE) get "brace:all".
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

from metrics_bridge.scoring.base import ScoringRequest

from .protocol import (
    ALL_SPLITS,
    AgreementReport,
    JudgedPair,
    PairDecision,
    PlanBatch,
    PlannedPair,
    ProtocolClip,
    ScoringPlan,
    _side_score,
    report_from_decisions,
    split_of,
)

PROTOCOL = "brace"
SPLITS = ("HC", "HM", "MM", "HALLU")
SIDE_BATCHES = ("brace:caption_0", "brace:caption_1")
SINGLE_BATCH = "brace:all"
DIGITS = 2


def normalise(text: str) -> str:
    return " ".join(text.split())


def pair_references(clip_references: Sequence[str], pair: JudgedPair) -> list[str]:
    """The references a pair's captions are scored against (see the module docstring)."""
    if pair.references:
        return [normalise(text) for text in pair.references]
    remaining = [normalise(text) for text in clip_references]
    for caption in (pair.caption_a, pair.caption_b):
        caption = normalise(caption)
        if caption in remaining:
            remaining.remove(caption)  # the first occurrence only, as BRACE's code does
    return remaining


def scoring_plan(clips: Iterable[ProtocolClip], *, batching: str = "fense") -> ScoringPlan:
    """Requests for both captions of every scorable pair; `batching` "single" puts them in one batch (DATE)."""
    single = batching == "single"
    requests: dict[str, list[ScoringRequest]] = {}
    sides, unscorable = [], []
    for clip in clips:
        for pair in clip.pairs:
            split_of(pair.split)  # refuses a split this protocol does not know
            references = tuple(pair_references(clip.references, pair))
            if not references:
                unscorable.append(pair)
                continue
            positions = []
            for side, (caption, caption_id, author) in enumerate(
                ((pair.caption_a, pair.caption_a_id, pair.author_a), (pair.caption_b, pair.caption_b_id, pair.author_b))
            ):
                label = SINGLE_BATCH if single else SIDE_BATCHES[side]
                batch = requests.setdefault(label, [])
                batch.append(
                    ScoringRequest(
                        candidate=normalise(caption),
                        references=references,
                        candidate_id=caption_id,
                        clip_key=clip.clip_key,
                        author=author,
                    )
                )
                positions.append((label, len(batch) - 1))
            sides.append((pair, clip.clip_key, positions))
    batches, index_of = [], {}
    for label in (SINGLE_BATCH, *SIDE_BATCHES):
        if requests.get(label):
            index_of[label] = len(batches)
            batches.append(PlanBatch(label=label, requests=tuple(requests[label])))
    pairs = [
        PlannedPair(
            pair=pair,
            clip_key=clip_key,
            side_a=((index_of[positions[0][0]], positions[0][1]),),
            side_b=((index_of[positions[1][0]], positions[1][1]),),
        )
        for pair, clip_key, positions in sides
    ]
    return ScoringPlan(protocol_kind=PROTOCOL, batches=batches, pairs=pairs, unscorable=unscorable)


def answer_of(pair: JudgedPair) -> str | None:
    """ "a" (caption_0) or "b" (caption_1) as people answered; None for a tie."""
    truth = pair.truth
    return None if truth == 0 else ("a" if truth > 0 else "b")


def decision(pair: JudgedPair, clip_key, score_a: float | None, score_b: float | None) -> PairDecision:
    """One pair under BRACE's rules (see the module docstring)."""
    answer = answer_of(pair)
    if score_a is None or score_b is None:
        return PairDecision(pair, clip_key, score_a, score_b, None, None)
    if math.isnan(score_a) or math.isnan(score_b):
        # never computed: counted, and wrong
        wrong = None if answer is None else ("b" if answer == "a" else "a")
        return PairDecision(pair, clip_key, score_a, score_b, math.nan, None if answer is None else False, wrong)
    prediction = "a" if score_a > score_b else "b"
    correct = None if answer is None else prediction == answer
    return PairDecision(pair, clip_key, score_a, score_b, float(score_a - score_b), correct, prediction)


def f1_percent(decisions: Iterable[PairDecision]) -> float | None:
    """sklearn's f1_score(answer, prediction), "caption_1 preferred" positive, over the counted pairs, in percent."""
    from sklearn.metrics import f1_score

    counted = [d for d in decisions if d.correct is not None and d.prediction is not None]
    if not counted:
        return None
    answers = [1 if answer_of(d.pair) == "b" else 0 for d in counted]
    predictions = [1 if d.prediction == "b" else 0 for d in counted]
    return round(100.0 * float(f1_score(answers, predictions, zero_division=0.0)), DIGITS)


def report_from_brace_decisions(decisions: Sequence[PairDecision], *, metric: str | None = None) -> AgreementReport:
    report = report_from_decisions(decisions, metric=metric, digits=DIGITS)
    report.f1 = f1_percent(report.decisions)
    return report


def agreement_report(
    plan: ScoringPlan, batch_scores: Sequence[Sequence[float | None]], *, metric: str | None = None
) -> AgreementReport:
    """Accuracy per split, in total, and F1 from per-request scores
    (batch_scores[b][i] for plan.batches[b].requests[i])."""
    if len(batch_scores) != len(plan.batches):
        raise ValueError(f"got scores for {len(batch_scores)} batches, the plan has {len(plan.batches)}")
    decisions = [
        decision(
            planned.pair,
            planned.clip_key,
            _side_score(planned.side_a, batch_scores),
            _side_score(planned.side_b, batch_scores),
        )
        for planned in plan.pairs
    ]
    return report_from_brace_decisions(decisions, metric=metric)


def pair_counts(plan: ScoringPlan) -> dict[str, int]:
    """{split: pairs with an answer, ..., "total": n, "unscorable": n, "ties": n} (splits present only)."""
    counts: dict[str, int] = {}
    ties = 0
    for planned in plan.pairs:
        split = split_of(planned.pair.split)
        if answer_of(planned.pair) is None:
            ties += 1
            continue
        counts[split] = counts.get(split, 0) + 1
    ordered = {split: counts[split] for split in ALL_SPLITS if split in counts}
    ordered["total"] = sum(counts.values())
    ordered["unscorable"] = len(plan.unscorable)
    ordered["ties"] = ties
    return ordered
