"""FENSE = Sentence-BERT similarity with FENSE's fluency-error penalty.

FENSE (Zhou et al., 2022) multiplies a candidate's Sentence-BERT score by (1 - 0.9) when its error
detector gives the candidate an error probability above 0.9 (the detector's last, "any error",
output):  FENSE = SBERT * (1 - 0.9 * [p_error > 0.9]).

The detector (see `fluency`): FENSE's own checkpoint when the scoring context names one
(`MetricResources.fense_error_detector_path`, from the FENSE_ERROR_DETECTOR_PATH setting),
otherwise the detector shipped with the product (all-MiniLM-L6-v2 with its top layer fine-tuned
on errors synthesized from Clotho-Eval references). The version string names it, so scores of
two detectors never mix.

Differences from FENSE's release: Sentence-BERT here is all-MiniLM-L6-v2 (FENSE used
paraphrase-TinyBERT-L6-v2) and, by default, the detector is the one trained here, not FENSE's
echecker (which cannot be downloaded here); both are named in the version string.
"""

from __future__ import annotations

from collections.abc import Sequence

from . import fluency, sbert
from .base import ScoreResult, ScoringContext, ScoringRequest

ERROR_THRESHOLD = 0.9
PENALTY = 0.9
IMPLEMENTATION_REVISION = 2


def penalised(similarity: float, error_probability: float) -> float:
    """FENSE's rule: the similarity times 0.1 when the error probability exceeds 0.9."""
    return similarity * (1 - PENALTY) if error_probability > ERROR_THRESHOLD else similarity


class FenseScorer:
    metric_names = ("FENSE",)
    needs = frozenset({"references"})
    corpus_level = False
    protocol_kind = "embedding"

    @property
    def version(self) -> str:
        return self.version_for(ScoringContext())

    def version_for(self, context: ScoringContext) -> str:
        return (
            f"fense-sbert-{sbert.model_version()}-echecker-{fluency.detector_name(context.resources)}"
            f"-threshold{ERROR_THRESHOLD}-penalty{PENALTY}+metrics_bridge-{IMPLEMENTATION_REVISION}"
        )

    def unavailable_reason(self, context: ScoringContext | None = None) -> str | None:
        reason = fluency.unavailable_reason(context.resources if context else None)
        return f"FENSE: {reason}" if reason else None

    def score_batch(self, requests: Sequence[ScoringRequest], context: ScoringContext) -> dict[str, list[ScoreResult]]:
        reason = self.unavailable_reason(context)
        if reason:
            raise RuntimeError(reason)
        similarities = sbert.mean_reference_similarity(requests)
        probabilities = fluency.error_probabilities([request.candidate for request in requests], context.resources)
        detector = fluency.detector_name(context.resources)
        results = []
        for similarity, probability in zip(similarities, probabilities, strict=True):
            error_probability = float(probability)
            details = {
                "sbert": similarity,
                "error_probability": error_probability,
                "penalized": error_probability > ERROR_THRESHOLD,
                "detector": detector,
            }
            results.append(ScoreResult(penalised(similarity, error_probability), details))
        return {"FENSE": results}
