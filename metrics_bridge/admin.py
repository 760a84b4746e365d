"""Admin pages of metric runs and scores (mostly read: runs are started from the API or `compute_metrics`)."""

from django.contrib import admin

from metrics_bridge.models import (
    CaptioningJob,
    LLMResponse,
    MetricRun,
    MetricRunChunk,
    MetricScore,
    ModelAnswer,
    ReferenceSet,
)


class MetricRunChunkInline(admin.TabularInline):
    model = MetricRunChunk
    extra = 0
    fields = ["index", "metric", "status", "attempts", "request_count"]
    readonly_fields = fields
    show_change_link = True
    can_delete = False

    @admin.display(description="requests")
    def request_count(self, chunk: MetricRunChunk) -> int:
        return len(chunk.requests)

    def has_add_permission(self, request, obj=None) -> bool:
        return False


@admin.register(MetricRun)
class MetricRunAdmin(admin.ModelAdmin):
    list_display = [
        "id",
        "dataset",
        "metric_list",
        "status",
        "chunks_done",
        "chunks_total",
        "requested_by",
        "created_at",
        "finished_at",
    ]
    list_filter = ["status", "dataset"]
    search_fields = ["dataset__name", "error"]
    list_select_related = ["dataset", "requested_by"]
    raw_id_fields = ["requested_by"]
    readonly_fields = ["chunks_total", "chunks_done", "error", "unavailable", "created_at", "updated_at", "finished_at"]
    inlines = [MetricRunChunkInline]

    @admin.display(description="metrics")
    def metric_list(self, run: MetricRun) -> str:
        return ", ".join(run.metrics)


@admin.register(MetricRunChunk)
class MetricRunChunkAdmin(admin.ModelAdmin):
    list_display = ["id", "run", "index", "metric", "status", "attempts"]
    list_filter = ["status", "metric"]
    search_fields = ["metric", "error"]
    list_select_related = ["run__dataset"]
    raw_id_fields = ["run"]


@admin.register(ReferenceSet)
class ReferenceSetAdmin(admin.ModelAdmin):
    list_display = ["short_key", "context", "text_count"]
    list_filter = ["context"]
    search_fields = ["key", "context"]

    @admin.display(description="key", ordering="key")
    def short_key(self, reference_set: ReferenceSet) -> str:
        return reference_set.key[:12]

    @admin.display(description="references")
    def text_count(self, reference_set: ReferenceSet) -> int:
        return len(reference_set.texts)


@admin.register(MetricScore)
class MetricScoreAdmin(admin.ModelAdmin):
    list_display = ["id", "metric", "version", "caption", "value", "run", "created_at"]
    list_filter = ["metric", "version"]
    search_fields = ["metric", "caption__text", "caption__clip__external_id"]
    list_select_related = ["caption", "run"]
    raw_id_fields = ["caption", "reference_set", "run"]


@admin.register(LLMResponse)
class LLMResponseAdmin(admin.ModelAdmin):
    list_display = ["id", "model", "short_hash", "prompt_tokens", "completion_tokens", "created_at"]
    list_filter = ["model"]
    search_fields = ["model", "prompt_hash", "response_text"]

    @admin.display(description="prompt hash", ordering="prompt_hash")
    def short_hash(self, response: LLMResponse) -> str:
        return response.prompt_hash[:12]


@admin.register(CaptioningJob)
class CaptioningJobAdmin(admin.ModelAdmin):
    """Read-only: jobs are started on the "Evaluate a model" page or with `generate_captions`."""

    list_display = ["id", "dataset", "provider", "model", "system_name", "status", "clips_total", "created_at"]
    list_filter = ["status", "provider", "dataset"]
    search_fields = ["model", "system_name", "error"]
    list_select_related = ["dataset"]

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False


@admin.register(ModelAnswer)
class ModelAnswerAdmin(admin.ModelAdmin):
    """The answer cache (read-only); deleting an answer makes the next run ask for it again."""

    list_display = ["id", "provider", "model", "text", "prompt_tokens", "completion_tokens", "cost", "created_at"]
    list_filter = ["provider", "model"]
    search_fields = ["text", "audio_sha256"]

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False
