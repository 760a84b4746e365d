"""Admin pages of the expert annotations. Clips run to tens of thousands: FKs to them use raw id widgets."""

from django.contrib import admin
from django.db.models import Count

from annotation.models import (
    AnnotationCampaign,
    AnnotationReview,
    AnnotationTask,
    AttributeTag,
    EventAttribute,
    EventSource,
    EventSpan,
    ExpertAnnotation,
    SoundEvent,
    TemporalRelation,
)


@admin.register(AttributeTag)
class AttributeTagAdmin(admin.ModelAdmin):
    list_display = ["text", "category", "synonym_group", "antonym_groups", "template", "origin"]
    list_filter = ["category", "origin"]
    search_fields = ["text"]


class SoundEventInline(admin.TabularInline):
    model = SoundEvent
    extra = 0
    fields = ["position", "label"]
    show_change_link = True  # sources and attributes are edited on the event's own page


class TemporalRelationInline(admin.TabularInline):
    model = TemporalRelation
    extra = 0
    fk_name = "annotation"
    raw_id_fields = ["first_event", "second_event"]


@admin.register(ExpertAnnotation)
class ExpertAnnotationAdmin(admin.ModelAdmin):
    list_display = ["id", "clip", "annotator", "status", "event_count", "updated_at"]
    list_filter = ["status", "clip__dataset", "annotator"]
    search_fields = ["clip__external_id", "annotator__username", "events__label"]
    list_select_related = ["clip__dataset", "annotator"]
    raw_id_fields = ["clip"]
    autocomplete_fields = ["annotator"]
    inlines = [SoundEventInline, TemporalRelationInline]

    def get_queryset(self, request):
        return super().get_queryset(request).annotate(event_total=Count("events"))

    @admin.display(description="events", ordering="event_total")
    def event_count(self, annotation: ExpertAnnotation) -> int:
        return annotation.event_total


class EventSourceInline(admin.TabularInline):
    model = EventSource
    extra = 0


class EventSpanInline(admin.TabularInline):
    model = EventSpan
    extra = 0


class EventAttributeInline(admin.TabularInline):
    model = EventAttribute
    extra = 0
    autocomplete_fields = ["tag"]


@admin.register(SoundEvent)
class SoundEventAdmin(admin.ModelAdmin):
    list_display = ["label", "annotation", "position"]
    list_filter = ["annotation__status", "annotation__clip__dataset"]
    search_fields = ["label", "annotation__clip__external_id"]
    list_select_related = ["annotation__clip__dataset", "annotation__annotator"]
    raw_id_fields = ["annotation"]
    inlines = [EventSpanInline, EventSourceInline, EventAttributeInline]


@admin.register(EventSource)
class EventSourceAdmin(admin.ModelAdmin):
    list_display = ["text", "event", "position", "listed"]
    list_filter = ["listed", "event__annotation__clip__dataset"]
    search_fields = ["text", "event__label"]
    list_select_related = ["event"]
    raw_id_fields = ["event"]


@admin.register(EventAttribute)
class EventAttributeAdmin(admin.ModelAdmin):
    list_display = ["text", "event", "position", "tag", "is_free_text"]
    list_filter = ["tag__category", "event__annotation__clip__dataset"]
    search_fields = ["text", "event__label"]
    list_select_related = ["event", "tag"]
    raw_id_fields = ["event"]
    autocomplete_fields = ["tag"]

    @admin.display(boolean=True, description="free text")
    def is_free_text(self, attribute: EventAttribute) -> bool:
        return attribute.is_free_text


@admin.register(TemporalRelation)
class TemporalRelationAdmin(admin.ModelAdmin):
    list_display = ["first_event", "kind", "second_event", "annotation"]
    list_filter = ["kind", "annotation__clip__dataset"]
    search_fields = ["first_event__label", "second_event__label", "annotation__clip__external_id"]
    list_select_related = ["first_event", "second_event", "annotation__clip"]
    raw_id_fields = ["annotation", "first_event", "second_event"]


@admin.register(AnnotationCampaign)
class AnnotationCampaignAdmin(admin.ModelAdmin):
    list_display = ["name", "dataset", "annotations_per_clip", "seed", "is_active", "created_at"]
    list_filter = ["is_active", "dataset"]
    search_fields = ["name"]
    raw_id_fields = ["clips"]
    filter_horizontal = ["annotators", "reviewers"]


@admin.register(AnnotationTask)
class AnnotationTaskAdmin(admin.ModelAdmin):
    list_display = ["id", "campaign", "clip", "annotator", "status", "skip_reason", "draft_version", "updated_at"]
    list_filter = ["status", "skip_reason", "campaign"]
    search_fields = ["clip__external_id", "annotator__username", "skip_comment", "review_comment"]
    list_select_related = ["campaign", "clip", "annotator"]
    raw_id_fields = ["clip", "annotation"]
    readonly_fields = ["draft_version", "draft_saved_at"]


@admin.register(AnnotationReview)
class AnnotationReviewAdmin(admin.ModelAdmin):
    list_display = ["id", "campaign", "clip", "reviewer", "status", "published_at"]
    list_filter = ["status", "campaign"]
    search_fields = ["clip__external_id", "reviewer__username"]
    list_select_related = ["campaign", "clip", "reviewer"]
    raw_id_fields = ["clip", "gold"]
    readonly_fields = ["draft_version", "draft_saved_at"]
