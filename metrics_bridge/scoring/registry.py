"""Which scorer computes which metric name. Importing this module loads no model and starts no JVM.

Public API (the Django side calls these):

    all_metric_names() -> list[str]               every known metric name, in display order
    all_scorers() -> list[Scorer]                 one shared instance per scorer (cached per process)
    scorer_for(metric_name) -> Scorer             e.g. scorer_for("BLEU_3") is the BLEU scorer; KeyError if unknown
    available_metric_names(context=None) -> list[str]
    unavailable_metrics(context=None) -> {metric name: reason}   (SPICE without CoreNLP, FENSE without detector, ...)
    warm_up_metrics(metric_names) -> list[str]    start the slow resources (METEOR's JVM, a model) in the background
    starts_slowly(scorer) -> bool                 whether a scorer has such a resource (its chunks are scored last)
    close_all() -> None                           stop JVMs held by scorers (tests, worker shutdown)

Metric names: BLEU_1..BLEU_4, METEOR, ROUGE_L, CIDEr_D, SPICE, SPIDEr, SBERT, FENSE, and those the
scorers listed in SCORER_FACTORIES add (DATE, XACE, XACE_E/S/A/R, XACE_CAPTIONS, XACE_CAPTIONS_E/S/A/R,
BERTScore, LLM_JUDGE_3D, LLM_JUDGE_REF).

To add a scorer, append one entry to SCORER_FACTORIES: "package.module:ClassName" (imported on
first use) or a zero-argument callable. A factory must be cheap: load models lazily in the
scorer, not in its constructor or at module import. A scorer's instance is shared by every metric
name it produces, so `scorer_for("BLEU_1") is scorer_for("BLEU_4")`.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable

from .base import Scorer, ScoringContext, warm_up

SCORER_FACTORIES: list[str | Callable[[], Scorer]] = [
    "metrics_bridge.scoring.classic:BleuScorer",
    "metrics_bridge.scoring.classic:MeteorScorer",
    "metrics_bridge.scoring.classic:RougeScorer",
    "metrics_bridge.scoring.classic:CiderScorer",
    "metrics_bridge.scoring.spice:SpiceScorer",
    "metrics_bridge.scoring.spice:SpiderScorer",
    "metrics_bridge.scoring.sbert:SbertScorer",
    "metrics_bridge.scoring.fense:FenseScorer",
    "metrics_bridge.scoring.date:DateScorer",
    "metrics_bridge.scoring.xace:XaceScorer",
    "metrics_bridge.scoring.xace:XaceCaptionsScorer",
    "metrics_bridge.scoring.bertscore:BertScoreScorer",
    "metrics_bridge.scoring.llm_judge:AudioCapBenchJudge",
    "metrics_bridge.scoring.llm_judge:AirBenchReferenceJudge",
]

_instances: list[Scorer] | None = None
_lock = threading.Lock()


def _build(factory: str | Callable[[], Scorer]) -> Scorer:
    if isinstance(factory, str):
        module_name, _, attribute = factory.partition(":")
        factory = getattr(importlib.import_module(module_name), attribute)
    return factory()


def all_scorers() -> list[Scorer]:
    global _instances
    with _lock:
        if _instances is None:
            instances = [_build(factory) for factory in SCORER_FACTORIES]
            seen: dict[str, Scorer] = {}
            for scorer in instances:
                for name in scorer.metric_names:
                    if name in seen:
                        raise RuntimeError(f"metric {name} is produced by two scorers: {seen[name]!r} and {scorer!r}")
                    seen[name] = scorer
            _instances = instances
        return list(_instances)


def all_metric_names() -> list[str]:
    return [name for scorer in all_scorers() for name in scorer.metric_names]


def scorer_for(metric_name: str) -> Scorer:
    for scorer in all_scorers():
        if metric_name in scorer.metric_names:
            return scorer
    raise KeyError(f"unknown metric {metric_name!r} (known: {', '.join(all_metric_names())})")


def unavailable_metrics(context: ScoringContext | None = None) -> dict[str, str]:
    """{metric name: reason} for every metric that cannot run here."""
    result = {}
    for scorer in all_scorers():
        try:
            reason = scorer.unavailable_reason(context)
        except Exception as error:  # a broken optional dependency must not hide the other metrics
            reason = f"{scorer.metric_names[0]}: availability check failed: {type(error).__name__}: {error}"
        if reason:
            for name in scorer.metric_names:
                result[name] = reason
    return result


def available_metric_names(context: ScoringContext | None = None) -> list[str]:
    unavailable = unavailable_metrics(context)
    return [name for name in all_metric_names() if name not in unavailable]


def starts_slowly(scorer: Scorer) -> bool:
    """True when the scorer has a slow resource to start (it offers `warm_up()`: METEOR's JVM, SBERT's model)."""
    return getattr(scorer, "warm_up", None) is not None


def warm_up_metrics(metric_names) -> list[str]:
    """Start the slow resources of the scorers producing these names, each in a background thread; returns
    the first metric name of each scorer started. Unknown names are skipped; a warm-up that fails is
    ignored here (scoring reports the error). Warm-ups are idempotent: a running JVM is left alone."""
    started = []
    for scorer in all_scorers():
        if starts_slowly(scorer) and set(scorer.metric_names) & set(metric_names):
            thread = threading.Thread(
                target=_warm_up_quietly, args=(scorer,), name=f"warm-up-{scorer.metric_names[0]}", daemon=True
            )
            thread.start()
            started.append(scorer.metric_names[0])
    return started


def _warm_up_quietly(scorer: Scorer) -> None:
    try:
        warm_up(scorer)
    except Exception:  # the scorer raises it again, with context, when it is used
        pass


def close_all() -> None:
    """Stop long-lived helpers (the METEOR JVM). Scorers start them again on next use."""
    from .classic import meteor_process

    if meteor_process._shared is not None:
        meteor_process._shared.close()
