"""Admin pages of the corpus. Clips and captions run to tens of thousands: their FKs use raw id widgets."""

from django.contrib import admin
from django.db.models import Count

from corpus.models import Caption, CaptioningSystem, Clip, Dataset


@admin.register(Dataset)
class DatasetAdmin(admin.ModelAdmin):
    list_display = ["name", "clip_count", "domain", "date_delta", "airbench_reference", "created_at"]
    search_fields = ["name", "description"]
    list_filter = ["domain", "created_at"]

    def get_queryset(self, request):
        return super().get_queryset(request).annotate(clip_total=Count("clips"))

    @admin.display(description="clips", ordering="clip_total")
    def clip_count(self, dataset: Dataset) -> int:
        return dataset.clip_total


class HasAudioFilter(admin.SimpleListFilter):
    title = "audio"
    parameter_name = "has_audio"

    def lookups(self, request, model_admin):
        return [("yes", "With audio"), ("no", "Without audio")]

    def queryset(self, request, queryset):
        if self.value() == "yes":
            return queryset.exclude(audio="")
        if self.value() == "no":
            return queryset.filter(audio="")
        return queryset


@admin.register(Clip)
class ClipAdmin(admin.ModelAdmin):
    list_display = ["external_id", "dataset", "file_name", "has_audio", "duration_seconds", "sample_rate", "channels"]
    list_filter = ["dataset", HasAudioFilter, "sample_rate", "channels"]
    search_fields = ["external_id", "file_name", "sha256"]
    list_select_related = ["dataset"]
    readonly_fields = [
        "sha256",
        "duration_seconds",
        "sample_rate",
        "channels",
        "waveform_peaks",
        "created_at",
        "updated_at",
    ]

    @admin.display(boolean=True, description="audio")
    def has_audio(self, clip: Clip) -> bool:
        return clip.has_audio


@admin.register(CaptioningSystem)
class CaptioningSystemAdmin(admin.ModelAdmin):
    list_display = ["name", "description", "created_at"]
    search_fields = ["name", "description"]
    list_filter = ["created_at"]


@admin.register(Caption)
class CaptionAdmin(admin.ModelAdmin):
    list_display = ["id", "short_text", "clip", "role", "author_kind", "system", "position", "source_label"]
    list_filter = ["role", "author_kind", "system", "clip__dataset"]
    search_fields = ["text", "source_label", "clip__external_id"]
    list_select_related = ["clip__dataset", "system"]
    raw_id_fields = ["clip"]
    autocomplete_fields = ["system"]

    @admin.display(description="text")
    def short_text(self, caption: Caption) -> str:
        return caption.text[:80]
