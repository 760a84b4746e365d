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

Batching (protocols.md §1): corpus-level metrics (CIDEr-D's document frequencies) see exactly the four
corpora the FENSE experiment code scores in four calls -- "HC+HI+HM:a" (side a of every HC, HI and HM
pair together, each with its own reference list), "HC+HI+HM:b" (their sides b), "MM:a" (side a of every
MM pair, once per leave-one-out list) and "MM:b" -- with duplicates kept: each pair side is its own
request. `scoring_plan(..., batching="single")` puts every request in one batch instead (DATE groups
its batch by author itself, protocols.md §4). Non-corpus metrics give the same values however batches
are cut.

Decision per pair: d = float32(score_a) - float32(score_b) (float32 like the original code),
truth t = sum(votes); correct when d * t > 0; t == 0 pairs are left out of the denominator;
d == 0 with t != 0 counts as wrong; NaN scores (e.g. a score that was never computed) count as wrong;
a None score means "not applicable" (an X-ACE factor absent from both graphs): a pair with a side
that has no applicable score is left out of that metric's denominator, like t == 0. Accuracy in
percent, one decimal.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from metrics_bridge.scoring.base import ScoringContext, ScoringRequest, score_batches

SPLITS = ("HC", "HI", "HM", "MM")
#: every split a report may hold, in display order (HALLU: BRACE-Hallucination, protocols.md §6)
ALL_SPLITS = (*SPLITS, "HALLU")
#: The four corpora of the FENSE experiment code, in the order it scores them: (label, splits, side).
FENSE_CORPORA = (
    ("HC+HI+HM:a", ("HC", "HI", "HM"), "a"),
    ("HC+HI+HM:b", ("HC", "HI", "HM"), "b"),
    ("MM:a", ("MM",), "a"),
    ("MM:b", ("MM",), "b"),
)
SINGLE_BATCH = "all"
BATCHINGS = ("fense", "single")
MINIMUM_REFERENCES = 4
HUMAN = "human"
_PAIR_KEY = re.compile(r"^(HC|HI|HM|MM)(_\d+)?$")
_SPLIT = re.compile(r"^(HC|HI|HM|MM|HALLU)(_\d+)?$")
_HUMAN_LABEL = re.compile(r"(^|_)human(_\d+)?$", re.IGNORECASE)


@dataclass(frozen=True)
class JudgedPair:
    """One judged pair. `votes`: +1 a better, -1 b better, 0 no preference. Ids are opaque (Caption pks).

    `author_a` / `author_b`: "human" or the captioning system that wrote the caption (None: unknown).
    `references`: the pair's own references when it has them (BRACE-Hallucination), else empty.
    `known_answer`: "a" or "b" when the answer is known rather than voted (BRACE-Hallucination's original).
    """

    split: str
    caption_a: str
    caption_b: str
    votes: tuple[int, ...]
    caption_a_id: Any = None
    caption_b_id: Any = None
    pair_id: Any = None
    author_a: str | None = None
    author_b: str | None = None
    references: tuple[str, ...] = ()
    known_answer: str | None = None

    @property
    def truth(self) -> int:
        """+ when people prefer a, - when b, 0 for a tie; a known answer counts as one vote."""
        if self.known_answer is not None:
            return 1 if self.known_answer == "a" else -1
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
    #: pairs a reference-based metric cannot score (BRACE: no reference left once the pair's captions are removed)
    unscorable: list[JudgedPair] = field(default_factory=list)

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
    not_applicable: int = 0  # pairs with t != 0 left out because a side's score is None


@dataclass(frozen=True)
class PairDecision:
    pair: JudgedPair
    clip_key: str | None
    score_a: float | None
    score_b: float | None
    difference: float | None  # float32 d = score_a - score_b; None when a side is not applicable
    correct: bool | None  # None when t == 0 or a side is not applicable (not counted)
    prediction: str | None = None  # "a" / "b" where the protocol names one (BRACE), for F1


@dataclass
class AgreementReport:
    metric: str | None
    splits: dict[str, SplitAccuracy]
    total: SplitAccuracy
    decisions: list[PairDecision]
    f1: float | None = None  # BRACE: percent, "caption_1 preferred" as the positive class

    def as_dict(self) -> dict:
        """{"HC": 51.4, ..., "total": 63.2, "pairs": {"HC": 210, ...}, "correct": {...}} (splits with pairs only)."""
        result: dict[str, Any] = {split: row.accuracy for split, row in self.splits.items()}
        result["total"] = self.total.accuracy
        if self.f1 is not None:
            result["f1"] = self.f1
        result["pairs"] = {split: row.counted for split, row in self.splits.items()}
        result["correct"] = {split: row.correct for split, row in self.splits.items()}
        return result


# --- building clips ---------------------------------------------------------------------------


def split_of(key: str) -> str:
    """'MM_3' -> 'MM'; 'hc' -> 'HC'; 'HALLU' -> 'HALLU'. Raises ValueError for anything else."""
    match = _SPLIT.match(str(key).strip().upper())
    if not match:
        raise ValueError(f"unknown pair split {key!r} (expected HC, HI, HM, MM[_n] or HALLU)")
    return match.group(1)


def clips_from_fense_items(items: Sequence[dict]) -> list[ProtocolClip]:
    """Clips from FENSE-format items (Clotho-Eval / AudioCaps-Eval): keys HC, HI, HM, MM_1..MM_n.

    Each entry is [caption_a, caption_b, source_a, source_b, ..., votes]: the votes list is the last
    element; missing or null entries are skipped. caption_a_id/caption_b_id are the source labels
    (e.g. "human_2", "fc_dbs_2") when present; pair_id is "<clip key>:<entry key>". Authors come from
    the labels: "human" for "human_2" / "<clip>_human_1", the label itself for a system.
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
                    author_a=author_of_label(sources[0]) if len(sources) > 0 else None,
                    author_b=author_of_label(sources[1]) if len(sources) > 1 else None,
                )
            )
        clips.append(ProtocolClip(clip_key=clip_key, references=references, pairs=tuple(pairs)))
    return clips


def author_of_label(label: Any) -> str | None:
    """ "human" for a FENSE human-caption label ("human_2", "<clip>_human_1"), else the system name."""
    if label is None or not str(label).strip():
        return None
    label = str(label).strip()
    return HUMAN if _HUMAN_LABEL.search(label) else label


def _fense_clip_key(item: dict, index: int) -> str:
    if item.get("audio_id"):
        return f"Y{item['audio_id']}.wav"
    return item.get("raw_name") or f"item-{index}"


def clip_from_rows(rows: Any) -> ProtocolClip:
    """A clip from a row object with clip_id, references and pairs (each with pair_id, split,
    caption_a_id, caption_a, caption_b_id, caption_b, votes and optionally author_a, author_b)
    -- the Django selector's ClipRows."""
    pairs = tuple(
        JudgedPair(
            split=split_of(pair.split),
            caption_a=pair.caption_a,
            caption_b=pair.caption_b,
            votes=tuple(int(v) for v in pair.votes),
            caption_a_id=pair.caption_a_id,
            caption_b_id=pair.caption_b_id,
            pair_id=pair.pair_id,
            author_a=getattr(pair, "author_a", None),
            author_b=getattr(pair, "author_b", None),
            references=tuple(getattr(pair, "references", None) or ()),
            known_answer=getattr(pair, "known_answer", None),
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


def scoring_plan(clips: Iterable[ProtocolClip], *, protocol_kind: str, batching: str = "fense") -> ScoringPlan:
    """Batches of ScoringRequests and the pair-side -> request mapping.

    protocol_kind: "ngram" (MM leave-one-out) or "embedding" (MM against all references).
    batching: "fense" (the four corpora of FENSE_CORPORA that have requests) or "single" (one batch).
    Raises ValueError when a clip has no references or none remain for a pair side.
    """
    if protocol_kind not in ("ngram", "embedding"):
        raise ValueError(f"protocol_kind must be 'ngram' or 'embedding', not {protocol_kind!r}")
    if batching not in BATCHINGS:
        raise ValueError(f"batching must be one of {', '.join(BATCHINGS)}, not {batching!r}")
    requests_by_label: dict[str, list[ScoringRequest]] = {}
    sides: list[tuple[JudgedPair, str | None, list[tuple[str, int]], list[tuple[str, int]]]] = []
    warnings: list[str] = []

    def add(label: str, candidate: str, candidate_id: Any, author: str | None, references, clip_key) -> tuple[str, int]:
        batch = requests_by_label.setdefault(label, [])
        batch.append(
            ScoringRequest(
                candidate=candidate,
                references=tuple(references),
                candidate_id=candidate_id,
                clip_key=clip_key,
                author=author,
            )
        )
        return label, len(batch) - 1

    for clip in clips:
        name = clip.clip_key or "?"
        if not clip.pairs:
            continue
        if not clip.references:
            raise ValueError(f"clip {name}: has judged pairs but no reference captions")
        for pair in clip.pairs:
            split = split_of(pair.split)
            reference_lists_a, reference_lists_b = _reference_lists(clip, pair, split, protocol_kind, warnings)
            label_a, label_b = _batch_label(split, "a", batching), _batch_label(split, "b", batching)
            side_a = [
                add(label_a, pair.caption_a, pair.caption_a_id, pair.author_a, refs, clip.clip_key)
                for refs in reference_lists_a
            ]
            side_b = [
                add(label_b, pair.caption_b, pair.caption_b_id, pair.author_b, refs, clip.clip_key)
                for refs in reference_lists_b
            ]
            sides.append((pair, clip.clip_key, side_a, side_b))

    order = [label for label, _, _ in FENSE_CORPORA] if batching == "fense" else [SINGLE_BATCH]
    batches, batch_index = [], {}
    for label in order:
        if requests_by_label.get(label):
            batch_index[label] = len(batches)
            batches.append(PlanBatch(label=label, requests=tuple(requests_by_label[label])))
    pairs = [
        PlannedPair(
            pair=pair,
            clip_key=clip_key,
            side_a=tuple((batch_index[label], position) for label, position in side_a),
            side_b=tuple((batch_index[label], position) for label, position in side_b),
        )
        for pair, clip_key, side_a, side_b in sides
    ]
    return ScoringPlan(protocol_kind=protocol_kind, batches=batches, pairs=pairs, warnings=warnings)


def _batch_label(split: str, side: str, batching: str) -> str:
    if batching == "single":
        return SINGLE_BATCH
    for label, splits, corpus_side in FENSE_CORPORA:
        if split in splits and side == corpus_side:
            return label
    raise ValueError(f"no FENSE corpus for split {split!r} side {side!r}")


def clip_reference_lists(clips: Iterable[ProtocolClip]) -> dict[str, tuple[str, ...]]:
    """clip_key -> the clip's full reference list (ScoringContext.clip_references, for DATE)."""
    return {clip.clip_key: tuple(clip.references) for clip in clips if clip.clip_key is not None and clip.references}


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


def _side_score(positions: Sequence[RequestPosition], batch_scores: Sequence[Sequence[float | None]]) -> float | None:
    """Mean of the side's request scores (leave-one-out passes); None values (not applicable) are left
    out, and a side whose every score is None is None."""
    values = [batch_scores[b][i] for b, i in positions]
    applicable = [float(value) for value in values if value is not None]
    if not applicable:
        return None
    return float(sum(applicable) / len(applicable))


def _split_accuracy(split: str, decisions: list[PairDecision], digits: int = 1) -> SplitAccuracy:
    counted = [d for d in decisions if d.correct is not None]
    correct = sum(1 for d in counted if d.correct)
    accuracy = round(100.0 * correct / len(counted), digits) if counted else None
    not_applicable = sum(1 for d in decisions if d.pair.truth != 0 and d.difference is None)
    return SplitAccuracy(
        split=split,
        correct=correct,
        counted=len(counted),
        ties_excluded=sum(1 for d in decisions if d.pair.truth == 0),
        accuracy=accuracy,
        not_applicable=not_applicable,
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
        truth = planned.pair.truth
        if score_a is None or score_b is None:
            difference, correct = None, None
        else:
            difference = float(np.float32(score_a) - np.float32(score_b))
            correct = None if truth == 0 else bool(difference * truth > 0)
        decisions.append(PairDecision(planned.pair, planned.clip_key, score_a, score_b, difference, correct))
    return report_from_decisions(decisions, metric=metric)


def report_from_decisions(
    decisions: Iterable[PairDecision], *, metric: str | None = None, digits: int = 1
) -> AgreementReport:
    """Accuracy per split and in total from per-pair decisions (`correct` None = not counted), `digits` decimals."""
    decisions_by_split: dict[str, list[PairDecision]] = {}
    for decision in decisions:
        decisions_by_split.setdefault(split_of(decision.pair.split), []).append(decision)
    splits = {
        split: _split_accuracy(split, decisions_by_split[split], digits)
        for split in ALL_SPLITS
        if split in decisions_by_split
    }
    all_decisions = [d for split in splits for d in decisions_by_split[split]]
    return AgreementReport(
        metric=metric, splits=splits, total=_split_accuracy("total", all_decisions, digits), decisions=all_decisions
    )


def scorer_batching(scorer: Any) -> str:
    """How a scorer's requests are grouped: the FENSE corpora, or one batch for scorers that ask for it."""
    return getattr(scorer, "corpus_batching", "fense") if scorer.corpus_level else "fense"


def fense_agreement(
    clips: Iterable[ProtocolClip], scorer: Any, context: ScoringContext | None = None
) -> dict[str, AgreementReport]:
    """Plan, score every batch with `scorer` and report accuracy for each of its metric names.

    The context's clip_references are filled from the clips when the caller left them empty.
    """
    clips = list(clips)
    plan = scoring_plan(clips, protocol_kind=scorer.protocol_kind, batching=scorer_batching(scorer))
    context = context or ScoringContext()
    if not context.clip_references:
        context = dataclasses.replace(context, clip_references=clip_reference_lists(clips))
    results = score_batches(scorer, [batch.requests for batch in plan.batches], context)
    reports = {}
    for name in scorer.metric_names:
        batch_scores = [[result.value for result in batch_result[name]] for batch_result in results]
        reports[name] = agreement_report(plan, batch_scores, metric=name)
    return reports
