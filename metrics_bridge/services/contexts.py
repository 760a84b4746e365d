"""Build the ScoringContext (expert graphs, tag library, LLM endpoint, LLM cache) from the database and settings."""
from django.conf import settings

from metrics_bridge.models import LLMResponse
from metrics_bridge.scoring.base import ScoringContext
from metrics_bridge.selectors import attribute_tag_library, gold_annotations_by_clip


class DatabaseLLMCache:
    """The scoring code's LLM cache interface, backed by the LLMResponse table."""

    def get(self, model: str, prompt_hash: str):
        row = LLMResponse.objects.filter(model=model, prompt_hash=prompt_hash).first()
        if row is None:
            return None
        return {"text": row.response_text, "prompt_tokens": row.prompt_tokens, "completion_tokens": row.completion_tokens}

    def put(self, model: str, prompt_hash: str, text: str, prompt_tokens: int = 0, completion_tokens: int = 0) -> None:
        LLMResponse.objects.update_or_create(
            model=model,
            prompt_hash=prompt_hash,
            defaults={"response_text": text, "prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens},
        )


def llm_endpoint_settings() -> dict | None:
    if not (settings.LLM_API_BASE and settings.LLM_MODEL):
        return None
    return {"api_base": settings.LLM_API_BASE, "api_key": settings.LLM_API_KEY, "model": settings.LLM_MODEL}


def scoring_context_for(*, clip_ids: set[int] | None) -> ScoringContext:
    """Context for scoring requests of these clips (None: availability checks only, no per-clip data)."""
    return ScoringContext(
        expert_annotations=gold_annotations_by_clip(clip_ids=clip_ids) if clip_ids else {},
        attribute_tags=attribute_tag_library(),
        llm=llm_endpoint_settings(),
        llm_cache=DatabaseLLMCache(),
    )
