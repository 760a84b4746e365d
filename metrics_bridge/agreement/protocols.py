"""Which pairwise protocol a dataset's judgements follow: FENSE's (protocols.md §1) or BRACE's (§6). Plain Python.

Both build a `protocol.ScoringPlan` (batches of scoring requests, and which requests make each pair's
sides) and turn per-request scores into an `AgreementReport`, so stored scores, CALIBRATED and the
dashboards treat them alike; only the references, the batches and the counting rules differ.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from . import brace, protocol

FENSE = "fense"
BRACE = brace.PROTOCOL
PROTOCOLS = (FENSE, BRACE)


def _check(protocol_name: str) -> None:
    if protocol_name not in PROTOCOLS:
        raise ValueError(f"unknown agreement protocol {protocol_name!r} (expected {' or '.join(PROTOCOLS)})")


def scoring_plan(
    clips: Iterable[protocol.ProtocolClip], *, protocol_name: str, protocol_kind: str, batching: str
) -> protocol.ScoringPlan:
    """The plan of either protocol; `protocol_kind` ("ngram" / "embedding") matters to FENSE's MM pairs only."""
    _check(protocol_name)
    if protocol_name == BRACE:
        return brace.scoring_plan(clips, batching=batching)
    return protocol.scoring_plan(clips, protocol_kind=protocol_kind, batching=batching)


def scorer_plan(clips: Iterable[protocol.ProtocolClip], *, protocol_name: str, scorer) -> protocol.ScoringPlan:
    return scoring_plan(
        clips,
        protocol_name=protocol_name,
        protocol_kind=scorer.protocol_kind,
        batching=protocol.scorer_batching(scorer),
    )


def agreement_report(
    plan: protocol.ScoringPlan,
    batch_scores: Sequence[Sequence[float | None]],
    *,
    protocol_name: str,
    metric: str | None = None,
) -> protocol.AgreementReport:
    _check(protocol_name)
    if protocol_name == BRACE:
        return brace.agreement_report(plan, batch_scores, metric=metric)
    return protocol.agreement_report(plan, batch_scores, metric=metric)


def batch_context(label: str) -> str:
    """The reference-set context of a protocol batch (corpus-level scores depend on their batch): FENSE's
    batches are "fense:<corpus>", BRACE's labels already say "brace:<side>"."""
    return label if label.startswith(f"{BRACE}:") else f"fense:{label}"
