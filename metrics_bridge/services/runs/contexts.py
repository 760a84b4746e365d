"""Build the ScoringContext (expert graphs, tag library, reference lists, dataset settings, local
resources, LLM endpoint and cache) from the database and settings. Scorers never read os.environ."""

from django.conf import settings

from corpus.models import Dataset
from metrics_bridge.models import LLMResponse
from metrics_bridge.scoring.base import DatasetSettings, MetricResources, ScoringContext
from metrics_bridge.selectors.scoring_inputs import (
    attribute_tag_library,
    gold_annotations_by_clip,
    reference_lists_by_clip,
)


class DatabaseLLMCache:
    """The scoring code's LLM cache interface, backed by the LLMResponse table."""

    def get(self, model: str, prompt_hash: str):
        row = LLMResponse.objects.filter(model=model, prompt_hash=prompt_hash).first()
        if row is None:
            return None
        return {
            "text": row.response_text,
            "prompt_tokens": row.prompt_tokens,
            "completion_tokens": row.completion_tokens,
        }

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


def metric_resources() -> MetricResources:
    """Local files of optional metrics, from settings (empty settings mean "not installed here")."""
    return MetricResources(
        spice_corenlp_dir=settings.SPICE_CORENLP_DIR or None,
        spice_cache_dir=settings.SPICE_CACHE_DIR or None,
        fense_error_detector_path=settings.FENSE_ERROR_DETECTOR_PATH or None,
        fense_error_detector_base=settings.FENSE_ERROR_DETECTOR_BASE or None,
        clap_model_dir=settings.CLAP_MODEL_DIR or None,
    )


def dataset_settings_of(dataset: Dataset | None) -> DatasetSettings:
    if dataset is None:
        return DatasetSettings()
    return DatasetSettings(
        domain=dataset.domain, date_delta=dataset.date_delta, airbench_reference=dataset.airbench_reference
    )


def version_context_for(*, dataset: Dataset | None) -> ScoringContext:
    """What scorer versions depend on (dataset settings, judge model, detector): no per-clip data."""
    return ScoringContext(
        llm=llm_endpoint_settings(), dataset=dataset_settings_of(dataset), resources=metric_resources()
    )


def _reference_lists(*, clip_ids: set[int] | None, dataset: Dataset | None) -> dict[str, tuple[str, ...]]:
    """Every clip of the dataset when scoring for one (DATE compares a caption with every clip), else the clips'."""
    if not clip_ids:
        return {}
    if dataset is not None:
        return reference_lists_by_clip(dataset=dataset)
    return reference_lists_by_clip(clip_ids=clip_ids)


def scoring_context_for(
    *,
    clip_ids: set[int] | None,
    dataset: Dataset | None = None,
    corpus_texts: tuple[str, ...] = (),
    with_audio: bool = False,
) -> ScoringContext:
    """Context for scoring requests of these clips (None: availability and version checks only, no per-clip data).

    `corpus_texts`: the dataset's texts, passed to scorers that ask for them (see ScoringContext).
    `with_audio`: the clips' audio files as local paths, with their hashes (scorers that listen: CLAP, MACE)."""
    audio_paths, audio_hashes = clip_audio_files(clip_ids=clip_ids) if with_audio and clip_ids else ({}, {})
    return ScoringContext(
        audio_paths=audio_paths,
        audio_hashes=audio_hashes,
        expert_annotations=gold_annotations_by_clip(clip_ids=clip_ids) if clip_ids else {},
        attribute_tags=attribute_tag_library(),
        clip_references=_reference_lists(clip_ids=clip_ids, dataset=dataset),
        llm=llm_endpoint_settings(),
        llm_cache=DatabaseLLMCache(),
        dataset=dataset_settings_of(dataset),
        resources=metric_resources(),
        corpus_texts=corpus_texts,
    )


_audio_copies: dict[str, str] = {}  # audio sha256 -> a local copy of a file kept in remote storage (S3)


def clip_audio_files(*, clip_ids: set[int]) -> tuple[dict[str, str], dict[str, str]]:
    """({clip key: local path}, {clip key: audio sha256}) of the clips that have audio. Files in local storage are
    read where they are; files in remote storage are copied once per process into a temporary folder."""
    import tempfile

    from corpus.models import Clip

    paths, hashes = {}, {}
    for clip in Clip.objects.filter(pk__in=clip_ids).exclude(audio="").only("pk", "audio", "sha256"):
        storage, name = clip.audio.storage, clip.audio.name
        try:
            path = storage.path(name)
        except NotImplementedError:
            key = clip.sha256 or name
            path = _audio_copies.get(key)
            if path is None:
                suffix = "." + name.rsplit(".", 1)[-1] if "." in name else ""
                with (
                    storage.open(name, "rb") as source,
                    tempfile.NamedTemporaryFile(suffix=suffix, prefix="clip-audio-", delete=False) as copy,
                ):
                    for chunk in iter(lambda: source.read(1 << 20), b""):
                        copy.write(chunk)
                path = _audio_copies[key] = copy.name
        paths[str(clip.pk)] = path
        if clip.sha256:
            hashes[str(clip.pk)] = clip.sha256
    return paths, hashes
