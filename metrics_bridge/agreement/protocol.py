"""The FENSE pairwise agreement protocol (HC / HI / HM / MM), protocols.md §1. Plain Python.

Flow::

    clips = clips_from_fense_items(json.load(f))          # or [clip_from_rows(rows) ...] on the Django side
    plan = scoring_plan(clips, protocol_kind=scorer.protocol_kind)
    for batch in plan:          # PlanBatch(label, requests); score each batch whole
        ...                     # (CIDEr-D's document frequencies come from its batch)
    # batch_scores[b][i] is the score of plan.batches[b].requests[i]
    report = agreement_report(plan, batch_scores, metric="CIDEr_D")
    report.as_dict()  # {"HC": 51.4, "HI": 91.8, "HM": 70.3, "MM": 56.0, "total": 63.2, "pairs": {"HC": 210, ...}}

    fense_agreement(clips, scorer, context)  # all of the above in one call -> {metric name: AgreementReport}

Which references each candidate is scored against:
- HC: a against the references without a; b against the references without b.
- HI, HM: a and b both against the references without a.
- lists shorter than 4 are padded by repeating from the start of the list (cycling);
- MM: "ngram" scorers score each candidate once per left-out reference (5 leave-one-out passes for
  5 references) and the side's score is the mean; "embedding" scorers use all references.
"Without a" drops every reference equal to a (whitespace-collapsed, case-insensitive), so a
reference list that repeats a caption (AudioCaps-Eval) loses all copies and gets padded.

Batching: one batch per split holding both sides (and all leave-one-out passes) of every pair of
that split, with duplicates kept -- each pair side is its own request, as in the FENSE
evaluation code. This is what reproduces the published pycocoevalcap CIDEr-D numbers on
Clotho-Eval; scoring sides or passes separately moves HC by ~1 point. The batch label is the
split ("HC", "HI", "HM", "MM"). Non-corpus metrics give the same values however batches are cut.

Decision per pair: d = float32(score_a) - float32(score_b) (float32 like the original code),
truth t = sum(votes); correct when d * t > 0; t == 0 pairs are left out of the denominator;
d == 0 with t != 0 counts as wrong; NaN scores count as wrong. Accuracy in percent, one decimal.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from metrics_bridge.scoring.base import ScoringContext, ScoringRequest, score_batches

SPLITS = ("HC", "HI", "HM", "MM")
MINIMUM_REFERENCES = 4
_PAIR_KEY = re.compile(r"^(HC|HI|HM|MM)(_\d+)?$")


@dataclass(frozen=True)
class JudgedPair:
    """One judged pair. `votes`: +1 a better, -1 b better, 0 no preference. Ids are opaque (Caption pks)."""

    split: str
    caption_a: str
    caption_b: str
    votes: tuple[int, ...]
    caption_a_id: Any = None
    caption_b_id: Any = None
    pair_id: Any = None

    @property
    def truth(self) -> int:
        return int(sum(self.votes))


@dataclass(frozen=True)
class ProtocolClip:
    """A clip's ordered reference captions and its judged pairs. `clip_key` is passed on to ScoringRequest."""

    clip_key: str | None
    references: tuple[str, ...]
    pairs: tuple[JudgedPair, ...]


@dataclass(frozen=True)
class PlanBatch:
    """Requests that must be scored together (one call of score_batch for corpus-level metrics)."""

    label: str
    requests: tuple[ScoringRequest, ...]


#: (index of the batch in plan.batches, index of the request in that batch)
RequestPosition = tuple[int, int]


@dataclass(frozen=True)
class PlannedPair:
    """A pair and the requests whose scores are averaged into the score of each side."""

    pair: JudgedPair
    clip_key: str | None
    side_a: tuple[RequestPosition, ...]
    side_b: tuple[RequestPosition, ...]


@dataclass
class ScoringPlan:
    """Batches to score plus the pair -> request mapping. Iterating yields the batches."""

    protocol_kind: str
    batches: list[PlanBatch]
    pairs: list[PlannedPair]
    warnings: list[str] = field(default_factory=list)

    def __iter__(self) -> Iterator[PlanBatch]:
        return iter(self.batches)

    def __len__(self) -> int:
        return len(self.batches)


@dataclass(frozen=True)
class SplitAccuracy:
    split: str
    correct: int
    counted: int  # pairs with non-zero human truth (the denominator)
    ties_excluded: int  # pairs with t == 0
    accuracy: float | None  # percent, one decimal; None when nothing was counted


@dataclass(frozen=True)
class PairDecision:
    pair: JudgedPair
    clip_key: str | None
    score_a: float
    score_b: float
    difference: float  # float32 d = score_a - score_b
    correct: bool | None  # None when t == 0 (not counted)


@dataclass
class AgreementReport:
    metric: str | None
    splits: dict[str, SplitAccuracy]
    total: SplitAccuracy
    decisions: list[PairDecision]

    def as_dict(self) -> dict:
        """{"HC": 51.4, ..., "total": 63.2, "pairs": {"HC": 210, ...}, "correct": {...}} (splits with pairs only)."""
        result: dict[str, Any] = {split: row.accuracy for split, row in self.splits.items()}
        result["total"] = self.total.accuracy
        result["pairs"] = {split: row.counted for split, row in self.splits.items()}
        result["correct"] = {split: row.correct for split, row in self.splits.items()}
        return result


# --- building clips ---------------------------------------------------------------------------


def split_of(key: str) -> str:
    """'MM_3' -> 'MM'; 'hc' -> 'HC'. Raises ValueError for anything else."""
    match = _PAIR_KEY.match(str(key).strip().upper())
    if not match:
        raise ValueError(f"unknown pair split {key!r} (expected HC, HI, HM or MM[_n])")
    return match.group(1)


def clips_from_fense_items(items: Sequence[dict]) -> list[ProtocolClip]:
    """Clips from FENSE-format items (Clotho-Eval / AudioCaps-Eval): keys HC, HI, HM, MM_1..MM_n.

    Each entry is [caption_a, caption_b, source_a, source_b, ..., votes]: the votes list is the last
    element; missing or null entries are skipped. caption_a_id/caption_b_id are the source labels
    (e.g. "human_2", "fc_dbs_2") when present; pair_id is "<clip key>:<entry key>".
    """
    clips = []
    for index, item in enumerate(items):
        clip_key = _fense_clip_key(item, index)
        references = tuple(text for text in item.get("references") or [] if text)
        pairs = []
        for key in sorted(k for k in item if _PAIR_KEY.match(str(k).upper())):
            entry = item.get(key)
            if not entry:
                continue
            if len(entry) < 3 or not isinstance(entry[-1], list | tuple):
                raise ValueError(f"item {index} ({clip_key}) key {key}: expected [caption_a, caption_b, ..., votes]")
            sources = entry[2:-1]
            pairs.append(
                JudgedPair(
                    split=split_of(key),
                    caption_a=entry[0],
                    caption_b=entry[1],
                    votes=tuple(int(v) for v in entry[-1] if v is not None),
                    caption_a_id=sources[0] if len(sources) > 0 else None,
                    caption_b_id=sources[1] if len(sources) > 1 else None,
                    pair_id=f"{clip_key}:{key}",
                )
            )
        clips.append(ProtocolClip(clip_key=clip_key, references=references, pairs=tuple(pairs)))
    return clips


def _fense_clip_key(item: dict, index: int) -> str:
    if item.get("audio_id"):
        return f"Y{item['audio_id']}.wav"
    return item.get("raw_name") or f"item-{index}"


def clip_from_rows(rows: Any) -> ProtocolClip:
    """A clip from a row object with clip_id, references and pairs (each with pair_id, split,
    caption_a_id, caption_a, caption_b_id, caption_b, votes) -- the Django selector's ClipRows."""
    pairs = tuple(
        JudgedPair(
            split=split_of(pair.split),
            caption_a=pair.caption_a,
            caption_b=pair.caption_b,
            votes=tuple(int(v) for v in pair.votes),
            caption_a_id=pair.caption_a_id,
            caption_b_id=pair.caption_b_id,
            pair_id=pair.pair_id,
        )
        for pair in rows.pairs
    )
    return ProtocolClip(clip_key=str(rows.clip_id), references=tuple(rows.references), pairs=pairs)


# --- references -------------------------------------------------------------------------------


def _same_caption(first: str, second: str) -> bool:
    return " ".join(first.split()).casefold() == " ".join(second.split()).casefold()


def references_without(references: Sequence[str], caption: str) -> list[str]:
    """The references minus every copy of `caption`."""
    return [reference for reference in references if not _same_caption(reference, caption)]


def padded(references: Sequence[str], size: int = MINIMUM_REFERENCES) -> list[str]:
    """Pad to `size` by repeating from the start of the list: [r1, r2, r3] -> [r1, r2, r3, r1]."""
    result = list(references)
    if not result:
        return result
    position = 0
    while len(result) < size:
        result.append(references[position % len(references)])
        position += 1
    return result


def leave_one_out(references: Sequence[str]) -> list[list[str]]:
    """One padded reference list per left-out reference (a single list when there is only one)."""
    if len(references) < 2:
        return [padded(references)]
    return [padded(list(references[:i]) + list(references[i + 1 :])) for i in range(len(references))]


# --- the plan ---------------------------------------------------------------------------------


def scoring_plan(clips: Iterable[ProtocolClip], *, protocol_kind: str) -> ScoringPlan:
    """Batches of ScoringRequests (one per split present) and the pair-side -> request mapping.

    protocol_kind: "ngram" (MM leave-one-out) or "embedding" (MM against all references).
    Raises ValueError when a clip has no references or none remain for a pair side.
    """
    if protocol_kind not in ("ngram", "embedding"):
        raise ValueError(f"protocol_kind must be 'ngram' or 'embedding', not {protocol_kind!r}")
    requests_by_split: dict[str, list[ScoringRequest]] = {split: [] for split in SPLITS}
    sides: list[tuple[JudgedPair, str | None, list[int], list[int]]] = []
    warnings: list[str] = []

    def add(split: str, candidate: str, candidate_id: Any, references: list[str], clip_key: str | None) -> int:
        batch = requests_by_split[split]
        batch.append(
            ScoringRequest(
                candidate=candidate, references=tuple(references), candidate_id=candidate_id, clip_key=clip_key
            )
        )
        return len(batch) - 1

    for clip in clips:
        name = clip.clip_key or "?"
        if not clip.pairs:
            continue
        if not clip.references:
            raise ValueError(f"clip {name}: has judged pairs but no reference captions")
        for pair in clip.pairs:
            split = split_of(pair.split)
            reference_lists_a, reference_lists_b = _reference_lists(clip, pair, split, protocol_kind, warnings)
            side_a = [add(split, pair.caption_a, pair.caption_a_id, refs, clip.clip_key) for refs in reference_lists_a]
            side_b = [add(split, pair.caption_b, pair.caption_b_id, refs, clip.clip_key) for refs in reference_lists_b]
            sides.append((pair, clip.clip_key, side_a, side_b))

    batches, batch_index = [], {}
    for split in SPLITS:
        if requests_by_split[split]:
            batch_index[split] = len(batches)
            batches.append(PlanBatch(label=split, requests=tuple(requests_by_split[split])))
    pairs = []
    for pair, clip_key, side_a, side_b in sides:
        index = batch_index[split_of(pair.split)]
        pairs.append(
            PlannedPair(
                pair=pair,
                clip_key=clip_key,
                side_a=tuple((index, position) for position in side_a),
                side_b=tuple((index, position) for position in side_b),
            )
        )
    return ScoringPlan(protocol_kind=protocol_kind, batches=batches, pairs=pairs, warnings=warnings)


def _reference_lists(
    clip: ProtocolClip, pair: JudgedPair, split: str, protocol_kind: str, warnings: list[str]
) -> tuple[list[list[str]], list[list[str]]]:
    references = list(clip.references)
    name = clip.clip_key or "?"
    if split == "MM":
        if protocol_kind == "ngram":
            passes = leave_one_out(references)
            return passes, passes
        return [padded(references)], [padded(references)]

    def without(caption: str, side: str) -> list[str]:
        remaining = references_without(references, caption)
        if len(remaining) == len(references):
            warnings.append(f"clip {name}: {split} caption {side} is not one of the references; kept all references")
        if not remaining:
            raise ValueError(f"clip {name}: no references left for {split} caption {side} after removing it")
        return padded(remaining)

    refs_a = without(pair.caption_a, "a")
    refs_b = without(pair.caption_b, "b") if split == "HC" else refs_a
    return [refs_a], [refs_b]


# --- accuracy ---------------------------------------------------------------------------------


def _side_score(positions: Sequence[RequestPosition], batch_scores: Sequence[Sequence[float | None]]) -> float:
    values = [batch_scores[b][i] for b, i in positions]
    values = [np.nan if value is None else float(value) for value in values]
    return float(sum(values) / len(values))


def _split_accuracy(split: str, decisions: list[PairDecision]) -> SplitAccuracy:
    counted = [d for d in decisions if d.correct is not None]
    correct = sum(1 for d in counted if d.correct)
    accuracy = round(100.0 * correct / len(counted), 1) if counted else None
    return SplitAccuracy(
        split=split,
        correct=correct,
        counted=len(counted),
        ties_excluded=len(decisions) - len(counted),
        accuracy=accuracy,
    )


def agreement_report(
    plan: ScoringPlan, batch_scores: Sequence[Sequence[float | None]], *, metric: str | None = None
) -> AgreementReport:
    """Accuracy per split and in total from per-request scores (batch_scores[b][i] for plan.batches[b].requests[i])."""
    if len(batch_scores) != len(plan.batches):
        raise ValueError(f"got scores for {len(batch_scores)} batches, the plan has {len(plan.batches)}")
    for batch, scores in zip(plan.batches, batch_scores, strict=True):
        if len(scores) != len(batch.requests):
            raise ValueError(f"batch {batch.label}: {len(scores)} scores for {len(batch.requests)} requests")
    decisions = []
    for planned in plan.pairs:
        score_a = _side_score(planned.side_a, batch_scores)
        score_b = _side_score(planned.side_b, batch_scores)
        difference = np.float32(score_a) - np.float32(score_b)
        truth = planned.pair.truth
        correct = None if truth == 0 else bool(difference * truth > 0)
        decisions.append(PairDecision(planned.pair, planned.clip_key, score_a, score_b, float(difference), correct))
    return report_from_decisions(decisions, metric=metric)


def report_from_decisions(decisions: Iterable[PairDecision], *, metric: str | None = None) -> AgreementReport:
    """Accuracy per split and in total from per-pair decisions (`correct` None = not counted)."""
    decisions_by_split: dict[str, list[PairDecision]] = {}
    for decision in decisions:
        decisions_by_split.setdefault(split_of(decision.pair.split), []).append(decision)
    splits = {
        split: _split_accuracy(split, decisions_by_split[split]) for split in SPLITS if split in decisions_by_split
    }
    all_decisions = [d for split in splits for d in decisions_by_split[split]]
    return AgreementReport(
        metric=metric, splits=splits, total=_split_accuracy("total", all_decisions), decisions=all_decisions
    )


def fense_agreement(
    clips: Iterable[ProtocolClip], scorer: Any, context: ScoringContext | None = None
) -> dict[str, AgreementReport]:
    """Plan, score every batch with `scorer` and report accuracy for each of its metric names."""
    plan = scoring_plan(clips, protocol_kind=scorer.protocol_kind)
    results = score_batches(scorer, [batch.requests for batch in plan.batches], context or ScoringContext())
    reports = {}
    for name in scorer.metric_names:
        batch_scores = [[result.value for result in batch_result[name]] for batch_result in results]
        reports[name] = agreement_report(plan, batch_scores, metric=name)
    return reports
