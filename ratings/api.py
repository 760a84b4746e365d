"""REST endpoints of human judgements: pairs, campaigns, assignments, THumBS ratings, pairwise votes.

Who may use what (admins pass every check):
- caption pairs: annotators and reviewers read (they show authorship); admins too;
- campaigns: admins only (create, add raters);
- assignments, assignment items, THumBS ratings, pairwise votes: admins read all rows with full
  detail; raters read their own rows only, through blinded serializers (no authorship, no split);
- raters never reach captions except through their own assignment items.
"""

from django.contrib.auth import get_user_model
from django.db.models import Count, Q
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import ValidationError
from rest_framework.parsers import MultiPartParser
from rest_framework.response import Response

from accounts.permissions import ActionRolesMixin
from accounts.roles import ADMIN, ANNOTATOR, RATER, REVIEWER, user_has_role
from annotation.api_helpers import filter_by_params, json_import_respond
from annotation.serializers import ImportSummarySerializer, JsonImportInputSerializer
from ratings.models import Assignment, AssignmentItem, Campaign, CaptionPair, PairwiseVote, ThumbsRating
from ratings.serializers import (
    AssignmentItemSerializer,
    AssignmentSerializer,
    CampaignInputSerializer,
    CampaignRatersInputSerializer,
    CampaignSerializer,
    CaptionPairSerializer,
    PairwiseVoteSerializer,
    RaterAssignmentItemSerializer,
    RaterAssignmentSerializer,
    RaterPairwiseVoteSerializer,
    RaterThumbsRatingSerializer,
    ThumbsRatingSerializer,
)
from ratings.services.campaigns import campaign_add_raters, campaign_create
from ratings.services.pairwise_import import pairwise_judgements_import

OWN_ROWS_FOR_RATERS = {"list": (RATER,), "retrieve": (RATER,), "*": (ADMIN,)}


class RaterBlindedMixin:
    """Admins get `serializer_class` over all rows; everyone else (raters) `rater_serializer_class` over their own.

    `rater_field` names the row's user field (e.g. "rater" or "assignment__rater").
    """

    rater_serializer_class = None
    rater_field = "rater"

    def _is_admin(self) -> bool:
        return user_has_role(self.request.user, ADMIN)

    def get_serializer_class(self):
        if getattr(self, "swagger_fake_view", False) or self._is_admin():
            return self.serializer_class
        return self.rater_serializer_class

    def scope_to_user(self, queryset):
        if getattr(self, "swagger_fake_view", False):  # schema generation has no real user
            return queryset.none()
        if self._is_admin():
            return queryset
        return queryset.filter(**{self.rater_field: self.request.user})


@extend_schema(
    tags=["judgements"],
    parameters=[
        OpenApiParameter("dataset", str, description="Dataset name"),
        OpenApiParameter("clip", int, description="Clip id"),
        OpenApiParameter("split", str, enum=CaptionPair.Split.values),
    ],
)
class CaptionPairViewSet(ActionRolesMixin, viewsets.ReadOnlyModelViewSet):
    """Caption pairs with both captions (and their authorship). Read: annotator, reviewer, admin; never raters."""

    action_roles = {"*": (ANNOTATOR, REVIEWER)}
    serializer_class = CaptionPairSerializer

    def get_queryset(self):
        queryset = (
            CaptionPair.objects.select_related("caption_a__system", "caption_b__system")
            .annotate(vote_count=Count("votes"))
            .order_by("clip_id", "source_key")
        )
        return filter_by_params(
            queryset, self.request, {"dataset": "clip__dataset__name", "clip": "clip_id", "split": "split"}
        )


@extend_schema(tags=["campaigns"])
class CampaignViewSet(ActionRolesMixin, mixins.CreateModelMixin, viewsets.ReadOnlyModelViewSet):
    """Rating campaigns. Admin only: list, read, create, add raters."""

    action_roles = {"*": (ADMIN,)}
    serializer_class = CampaignSerializer

    def get_queryset(self):
        return (
            Campaign.objects.select_related("dataset")
            .annotate(
                caption_count=Count("captions", distinct=True),
                pair_count=Count("pairs", distinct=True),
                assignment_count=Count("assignments", distinct=True),
            )
            .order_by("name")
        )

    def _respond(self, campaign: Campaign, status_code: int) -> Response:
        return Response(self.get_serializer(self.get_queryset().get(pk=campaign.pk)).data, status=status_code)

    @extend_schema(request=CampaignInputSerializer, responses={201: CampaignSerializer})
    def create(self, request):
        """Create a campaign over some captions (THumBS) or pairs (pairwise) of one dataset."""
        serializer = CampaignInputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        campaign = campaign_create(**serializer.validated_data)
        return self._respond(campaign, status.HTTP_201_CREATED)

    @extend_schema(request=CampaignRatersInputSerializer, responses={200: CampaignSerializer})
    @action(detail=True, methods=["post"])
    def raters(self, request, pk=None):
        """Assign raters (by username) to the campaign; each new rater gets a balanced, shuffled share."""
        campaign = self.get_object()
        serializer = CampaignRatersInputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        usernames = serializer.validated_data["raters"]
        users = {user.username: user for user in get_user_model().objects.filter(username__in=usernames)}
        missing = [name for name in usernames if name not in users]
        if missing:
            raise ValidationError({"raters": f"no such user: {', '.join(missing)}"})
        not_raters = [name for name in usernames if not user_has_role(users[name], RATER)]
        if not_raters:
            raise ValidationError({"raters": f"not in the rater group: {', '.join(not_raters)}"})
        campaign_add_raters(campaign=campaign, raters=[users[name] for name in usernames])
        return self._respond(campaign, status.HTTP_200_OK)


@extend_schema(tags=["assignments"], parameters=[OpenApiParameter("campaign", str, description="Campaign name")])
class AssignmentViewSet(RaterBlindedMixin, ActionRolesMixin, viewsets.ReadOnlyModelViewSet):
    """Assignments with progress. Read: raters (their own, blinded), admins (all)."""

    action_roles = OWN_ROWS_FOR_RATERS
    serializer_class = AssignmentSerializer
    rater_serializer_class = RaterAssignmentSerializer

    def get_queryset(self):
        queryset = (
            Assignment.objects.select_related("campaign", "rater")
            .annotate(
                item_count=Count("items", distinct=True),
                completed_count=Count("items", filter=Q(items__completed_at__isnull=False), distinct=True),
            )
            .order_by("campaign__name", "rater__username")
        )
        return filter_by_params(self.scope_to_user(queryset), self.request, {"campaign": "campaign__name"})


@extend_schema(
    tags=["assignments"],
    parameters=[
        OpenApiParameter("assignment", int, description="Assignment id"),
        OpenApiParameter("campaign", str, description="Campaign name"),
    ],
)
class AssignmentItemViewSet(RaterBlindedMixin, ActionRolesMixin, viewsets.ReadOnlyModelViewSet):
    """Assignment items in each rater's order. Raters: their own, with clip audio and captions, blinded.

    Admins: all items with the raw ordering data (a_on_left, caption_order).
    """

    action_roles = OWN_ROWS_FOR_RATERS
    serializer_class = AssignmentItemSerializer
    rater_serializer_class = RaterAssignmentItemSerializer
    rater_field = "assignment__rater"

    def get_queryset(self):
        queryset = AssignmentItem.objects.select_related("assignment__campaign", "clip", "pair").order_by(
            "assignment_id", "position"
        )
        lookups = {"assignment": "assignment_id", "campaign": "assignment__campaign__name"}
        return filter_by_params(self.scope_to_user(queryset), self.request, lookups)


@extend_schema(
    tags=["judgements"],
    parameters=[
        OpenApiParameter("campaign", str, description="Campaign name"),
        OpenApiParameter("caption", int, description="Caption id"),
        OpenApiParameter("rater", str, description="Rater username (admins)"),
    ],
)
class ThumbsRatingViewSet(RaterBlindedMixin, ActionRolesMixin, viewsets.ReadOnlyModelViewSet):
    """THumBS ratings with the computed overall = (P + R) / 2 + F + C + I. Raters: their own; admins: all."""

    action_roles = OWN_ROWS_FOR_RATERS
    serializer_class = ThumbsRatingSerializer
    rater_serializer_class = RaterThumbsRatingSerializer

    def get_queryset(self):
        queryset = ThumbsRating.objects.select_related("rater", "campaign").order_by("caption_id", "rater__username")
        lookups = {"campaign": "campaign__name", "caption": "caption_id", "rater": "rater__username"}
        return filter_by_params(self.scope_to_user(queryset), self.request, lookups)


@extend_schema(
    tags=["judgements"],
    parameters=[
        OpenApiParameter("campaign", str, description="Campaign name"),
        OpenApiParameter("pair", int, description="Caption pair id"),
        OpenApiParameter("rater", str, description="Rater username (admins)"),
    ],
)
class PairwiseVoteViewSet(RaterBlindedMixin, ActionRolesMixin, viewsets.ReadOnlyModelViewSet):
    """Pairwise votes (a better, b better, no preference). Raters: their own; admins: all."""

    action_roles = OWN_ROWS_FOR_RATERS
    serializer_class = PairwiseVoteSerializer
    rater_serializer_class = RaterPairwiseVoteSerializer

    def get_queryset(self):
        queryset = PairwiseVote.objects.select_related("rater", "campaign").order_by("pair_id", "rater__username")
        lookups = {"campaign": "campaign__name", "pair": "pair_id", "rater": "rater__username"}
        return filter_by_params(self.scope_to_user(queryset), self.request, lookups)


@extend_schema(tags=["imports"])
class PairwiseJudgementsImportViewSet(ActionRolesMixin, viewsets.ViewSet):
    """Admin: import pairwise judgements in the FENSE JSON format (Clotho-Eval, AudioCaps-Eval)."""

    action_roles = {"*": (ADMIN,)}
    parser_classes = [MultiPartParser]

    @extend_schema(
        request={"multipart/form-data": JsonImportInputSerializer},
        responses={201: ImportSummarySerializer, 200: ImportSummarySerializer},
    )
    def create(self, request):
        """Clips, captions, HC/HI/HM/MM pairs and votes; all or nothing; a repeated import changes nothing (200)."""
        return json_import_respond(request, pairwise_judgements_import)


def register_routes(router) -> None:
    router.register("caption-pairs", CaptionPairViewSet, basename="caption-pair")
    router.register("campaigns", CampaignViewSet, basename="campaign")
    router.register("assignments", AssignmentViewSet, basename="assignment")
    router.register("assignment-items", AssignmentItemViewSet, basename="assignment-item")
    router.register("thumbs-ratings", ThumbsRatingViewSet, basename="thumbs-rating")
    router.register("pairwise-votes", PairwiseVoteViewSet, basename="pairwise-vote")
    router.register("imports/pairwise-judgements", PairwiseJudgementsImportViewSet, basename="import-pairwise")
