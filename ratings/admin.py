"""Admin pages of human judgements. Captions, clips and pairs are many: raw id widgets for them."""

from django.contrib import admin
from django.db.models import Count, Q

from ratings.models import (
    Assignment,
    AssignmentItem,
    Campaign,
    CaptionPair,
    HeadphoneCheck,
    ItemEvent,
    PairwiseVote,
    ThumbsRating,
    WorkbookUpload,
)
from ratings.models_study import Participant, ParticipantEvent, Study


@admin.register(CaptionPair)
class CaptionPairAdmin(admin.ModelAdmin):
    list_display = ["id", "clip", "split", "source_key", "gold_choice", "vote_count"]
    list_filter = ["split", "gold_choice", "clip__dataset"]
    search_fields = ["source_key", "clip__external_id", "caption_a__text", "caption_b__text"]
    list_select_related = ["clip__dataset"]
    raw_id_fields = ["clip", "caption_a", "caption_b"]

    def get_queryset(self, request):
        return super().get_queryset(request).annotate(vote_total=Count("votes"))

    @admin.display(description="votes", ordering="vote_total")
    def vote_count(self, pair: CaptionPair) -> int:
        return pair.vote_total


class AssignmentInline(admin.TabularInline):
    model = Assignment
    extra = 0
    fields = ["rater", "created_at"]
    readonly_fields = ["created_at"]
    raw_id_fields = ["rater"]
    show_change_link = True


@admin.register(Campaign)
class CampaignAdmin(admin.ModelAdmin):
    list_display = [
        "name",
        "title",
        "dataset",
        "task_type",
        "origin",
        "judgements_per_item",
        "is_active",
        "requires_huggins",
        "assignment_count",
        "created_at",
    ]
    list_filter = ["task_type", "is_active", "dataset"]
    search_fields = ["name"]
    list_select_related = ["dataset"]
    raw_id_fields = ["captions", "pairs", "excluded_raters"]
    inlines = [AssignmentInline]

    def get_queryset(self, request):
        return super().get_queryset(request).annotate(assignment_total=Count("assignments"))

    @admin.display(description="raters", ordering="assignment_total")
    def assignment_count(self, campaign: Campaign) -> int:
        return campaign.assignment_total


class AssignmentItemInline(admin.TabularInline):
    model = AssignmentItem
    extra = 0
    fields = [
        "position",
        "token",
        "clip",
        "pair",
        "a_on_left",
        "caption_order",
        "version",
        "completed_at",
        "seconds_spent",
    ]
    readonly_fields = ["token", "version"]
    raw_id_fields = ["clip", "pair"]
    show_change_link = True


@admin.register(Assignment)
class AssignmentAdmin(admin.ModelAdmin):
    list_display = ["id", "campaign", "rater", "item_count", "completed_count", "created_at"]
    list_filter = ["campaign"]
    search_fields = ["campaign__name", "rater__username"]
    list_select_related = ["campaign", "rater"]
    raw_id_fields = ["rater"]
    inlines = [AssignmentItemInline]

    def get_queryset(self, request):
        return (
            super()
            .get_queryset(request)
            .annotate(
                item_total=Count("items", distinct=True),
                completed_total=Count("items", filter=Q(items__completed_at__isnull=False), distinct=True),
            )
        )

    @admin.display(description="items", ordering="item_total")
    def item_count(self, assignment: Assignment) -> int:
        return assignment.item_total

    @admin.display(description="completed", ordering="completed_total")
    def completed_count(self, assignment: Assignment) -> int:
        return assignment.completed_total


@admin.register(AssignmentItem)
class AssignmentItemAdmin(admin.ModelAdmin):
    list_display = ["id", "token", "assignment", "position", "clip", "pair", "version", "completed_at", "seconds_spent"]
    list_filter = ["assignment__campaign", ("completed_at", admin.EmptyFieldListFilter)]
    search_fields = ["token", "outside_record_id", "assignment__rater__username", "clip__external_id"]
    readonly_fields = ["token", "version"]
    list_select_related = ["assignment__campaign", "assignment__rater", "clip__dataset", "pair__clip__dataset"]
    raw_id_fields = ["assignment", "clip", "pair"]


@admin.register(ThumbsRating)
class ThumbsRatingAdmin(admin.ModelAdmin):
    list_display = [
        "id",
        "rater",
        "caption",
        "campaign",
        "precision",
        "recall",
        "fluency",
        "conciseness",
        "irrelevance",
        "overall",
        "synthesized",
        "source",
    ]
    list_filter = ["campaign", "source", "synthesized", "precision", "recall"]
    search_fields = ["rater__username", "caption__text", "comment", "workbook_sha256"]
    list_select_related = ["rater", "caption", "campaign"]
    raw_id_fields = ["rater", "caption", "campaign"]
    readonly_fields = ["overall", "created_at", "updated_at"]

    @admin.display(description="overall")
    def overall(self, rating: ThumbsRating):
        # Computed from the five scores (never stored), so it cannot drift from them.
        return rating.overall if rating.pk else "-"


@admin.register(PairwiseVote)
class PairwiseVoteAdmin(admin.ModelAdmin):
    list_display = ["id", "rater", "pair", "campaign", "choice", "left_side", "source", "created_at"]
    list_filter = ["choice", "source", "campaign", "pair__split"]
    search_fields = ["rater__username", "pair__source_key", "pair__clip__external_id"]
    list_select_related = ["rater", "pair__clip__dataset", "campaign"]
    raw_id_fields = ["rater", "pair", "campaign"]


@admin.register(HeadphoneCheck)
class HeadphoneCheckAdmin(admin.ModelAdmin):
    list_display = ["id", "rater", "kind", "passed", "correct_count", "completed_at", "reset_at", "created_at"]
    list_filter = ["kind", "passed", "completed_at"]
    search_fields = ["rater__username"]
    list_select_related = ["rater"]
    raw_id_fields = ["rater"]


@admin.register(WorkbookUpload)
class WorkbookUploadAdmin(admin.ModelAdmin):
    list_display = ["original_name", "campaign_name", "rater", "status", "uploaded_by", "created_at"]
    list_filter = ["status", "campaign_name"]
    search_fields = ["original_name", "sha256", "campaign_name", "rater__username"]
    list_select_related = ["rater", "uploaded_by"]
    raw_id_fields = ["rater", "uploaded_by"]
    readonly_fields = ["sha256", "errors", "summary", "created_at", "updated_at"]


@admin.register(ItemEvent)
class ItemEventAdmin(admin.ModelAdmin):
    """The audit trail of answers: read-only (it is evidence, not data to edit)."""

    list_display = ["created_at", "item", "kind", "version"]
    list_filter = ["kind", "item__assignment__campaign"]
    search_fields = ["item__token", "item__assignment__rater__username"]
    list_select_related = ["item__assignment__campaign", "item__assignment__rater"]
    readonly_fields = ["item", "kind", "version", "previous_answer", "answer", "created_at"]

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False


# --- Crowd studies (the study page /ratings/staff/studies/<id>/ is where admins work; these are for lookups) ----


class ParticipantEventInline(admin.TabularInline):
    model = ParticipantEvent
    extra = 0
    fields = ["created_at", "kind", "detail", "by"]
    readonly_fields = fields
    can_delete = False


@admin.register(Study)
class StudyAdmin(admin.ModelAdmin):
    list_display = ["campaign", "platform_labels", "items_per_participant", "attention_checks", "created_at"]
    list_select_related = ["campaign"]
    raw_id_fields = ["campaign", "excluded_campaigns"]
    readonly_fields = ["slug"]


@admin.register(Participant)
class ParticipantAdmin(admin.ModelAdmin):
    list_display = ["platform_id", "platform", "study", "stage", "status", "excluded_at", "is_preview", "created_at"]
    list_filter = ["status", "stage", "platform", "is_preview"]
    search_fields = ["platform_id"]
    list_select_related = ["study__campaign"]
    raw_id_fields = ["study", "user"]
    inlines = [ParticipantEventInline]
    # Exclusion goes through the study page (it frees slots and is logged); not edited here.
    readonly_fields = ["excluded_at", "exclusion_reasons", "address_key"]
