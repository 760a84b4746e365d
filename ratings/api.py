"""REST endpoints of human judgements: pairs, campaigns, assignments, THumBS ratings, pairwise votes.

Who may use what (admins pass every check):
- caption pairs: annotators and reviewers read (they show authorship); admins too;
- campaigns: admins only (create, add raters);
- assignments, assignment items, THumBS ratings, pairwise votes: admins read all rows with full
  detail; raters read their own rows only, through blinded serializers (items by token, captions by
  number or side, votes by side; no ids, authorship, split or gold flag), filtered by study only;
- raters never reach captions except through their own assignment items.
"""

from django.contrib.auth import get_user_model
from django.db.models import Count, Q
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.parsers import MultiPartParser
from rest_framework.response import Response
from rest_framework.settings import api_settings

from accounts.permissions import ActionRolesMixin
from accounts.roles import ADMIN, ANNOTATOR, RATER, REVIEWER, user_has_role
from annotation.api_helpers import RaterLockMixin, filter_by_params, json_import_respond
from annotation.serializers import ImportSummarySerializer, JsonImportInputSerializer
from ratings import projection
from ratings.models import (
    Assignment,
    AssignmentItem,
    Campaign,
    CaptionPair,
    PairwiseVote,
    ThumbsRating,
    campaign_rater_code,
)
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
from ratings.services.campaign_rules import CampaignRuleError, campaign_raters_role_check, campaign_request_setup
from ratings.services.campaigns import CampaignSetupError, campaign_add_raters
from ratings.services.pairwise_import import pairwise_judgements_import

OWN_ROWS_FOR_RATERS = {"list": (RATER,), "retrieve": (RATER,), "*": (ADMIN,)}


def rater_study_filter(queryset, request, campaign_field: str):
    """A rater's rows narrowed by `?study=` (a study's opaque `study_id`, never a campaign's database id); an
    unknown code lists nothing. Lists only, as filter_by_params."""
    value = request.query_params.get("study", "").strip()
    view = (getattr(request, "parser_context", None) or {}).get("view")
    if not value or getattr(view, "action", "list") not in ("list", None):
        return queryset
    campaign_ids = set(queryset.values_list(f"{campaign_field}_id", flat=True).distinct())
    return queryset.filter(
        **{f"{campaign_field}_id__in": [pk for pk in campaign_ids if campaign_rater_code(pk) == value]}
    )


class RaterBlindedMixin:
    """Admins get `serializer_class` over all rows; everyone else (raters) `rater_serializer_class` over
    their own rows, built by the rater projection (`rater_rows`, ratings/projection.py): in the rater's
    order and terms, never in database order. Raters filter only by study (campaign id).

    `rater_field` names the row's user field (e.g. "rater" or "assignment__rater"); `campaign_field`
    its campaign. Raters cannot filter by caption, pair, clip or assignment id: such filters would let
    them probe which ids their items hold.
    """

    rater_serializer_class = None
    rater_field = "rater"
    campaign_field = "campaign"
    admin_lookups: dict[str, str] = {}

    def _is_admin(self) -> bool:
        return user_has_role(self.request.user, ADMIN)

    def _is_rater_view(self) -> bool:
        return not getattr(self, "swagger_fake_view", False) and not self._is_admin()

    def get_serializer_class(self):
        return self.rater_serializer_class if self._is_rater_view() else self.serializer_class

    def rater_rows(self, assignments) -> list:
        """The rows a rater lists, from the projection, in the rater's order."""
        raise NotImplementedError

    def rater_assignment_scope(self):
        """The signed-in rater's assignments, narrowed by `?study=`."""
        assignments = projection.rater_assignments(rater=self.request.user)
        return rater_study_filter(assignments, self.request, "campaign")

    def list(self, request, *args, **kwargs):
        if not self._is_rater_view():
            return super().list(request, *args, **kwargs)
        page = self.paginate_queryset(self.rater_rows(self.rater_assignment_scope()))
        return self.get_paginated_response(self.get_serializer(page, many=True).data)

    def scoped(self, queryset):
        if getattr(self, "swagger_fake_view", False):  # schema generation has no real user
            return queryset.none()
        if self._is_admin():
            return filter_by_params(queryset, self.request, self.admin_lookups)
        queryset = queryset.filter(**{self.rater_field: self.request.user, f"{self.campaign_field}__isnull": False})
        return rater_study_filter(queryset, self.request, self.campaign_field)


@extend_schema(
    tags=["judgements"],
    parameters=[
        OpenApiParameter("dataset", str, description="Dataset name"),
        OpenApiParameter("clip", int, description="Clip id"),
        OpenApiParameter("split", str, enum=CaptionPair.Split.values),
    ],
)
class CaptionPairViewSet(RaterLockMixin, ActionRolesMixin, viewsets.ReadOnlyModelViewSet):
    """Caption pairs with both captions (and their authorship). Read: annotator, reviewer, admin; never raters
    (nor the datasets an annotator or reviewer rates in an active campaign: the rater lock)."""

    blinded_dataset_lookup = "clip__dataset_id"

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
        """Create a campaign as the campaign form does: captions (THumBS) or generated pairs (pairwise, with HI
        donors planned) of one dataset, and the raters' balanced shares; all or nothing. A breached rule answers
        400 naming its field."""
        serializer = CampaignInputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        try:
            campaign = campaign_request_setup(**serializer.validated_data)
        except CampaignRuleError as error:
            raise ValidationError({error.field: [str(error)]}) from None
        except CampaignSetupError as error:
            raise ValidationError({api_settings.NON_FIELD_ERRORS_KEY: [str(error)]}) from None
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
            raise ValidationError({"raters": [f"no such user: {', '.join(missing)}"]})
        raters = [users[name] for name in usernames]
        try:
            campaign_raters_role_check(raters=raters)
            campaign_add_raters(campaign=campaign, raters=raters)
        except CampaignSetupError as error:
            raise ValidationError({"raters": [str(error)]}) from None
        return self._respond(campaign, status.HTTP_200_OK)


@extend_schema(
    tags=["assignments"],
    parameters=[
        OpenApiParameter("campaign", str, description="Campaign name (admins)"),
        OpenApiParameter("study", str, description="Study: the `study_id` a rater's lists give (raters)"),
    ],
)
class AssignmentViewSet(RaterBlindedMixin, ActionRolesMixin, viewsets.ReadOnlyModelViewSet):
    """Assignments with progress. Read: raters (their own, blinded), admins (all)."""

    action_roles = OWN_ROWS_FOR_RATERS
    serializer_class = AssignmentSerializer
    rater_serializer_class = RaterAssignmentSerializer
    rater_field = "rater"
    admin_lookups = {"campaign": "campaign__name"}

    def get_queryset(self):
        queryset = (
            Assignment.objects.select_related("campaign", "rater")
            .annotate(
                item_count=Count("items", distinct=True),
                completed_count=Count("items", filter=Q(items__completed_at__isnull=False), distinct=True),
            )
            .order_by("campaign__name", "rater__username")
        )
        return self.scoped(queryset)

    def rater_rows(self, assignments) -> list:
        return projection.studies(assignments)


@extend_schema(
    tags=["assignments"],
    parameters=[
        OpenApiParameter("assignment", int, description="Assignment id (admins)"),
        OpenApiParameter("campaign", str, description="Campaign name (admins)"),
        OpenApiParameter("study", str, description="Study: the `study_id` a rater's lists give (raters)"),
    ],
)
class AssignmentItemViewSet(RaterBlindedMixin, ActionRolesMixin, viewsets.ReadOnlyModelViewSet):
    """Assignment items in each rater's order. Raters: their own, by token, with their item audio URL,
    the captions by number or side and their saved answer (blinded). Admins: all items with the raw
    ordering data (a_on_left, caption_order)."""

    action_roles = OWN_ROWS_FOR_RATERS
    serializer_class = AssignmentItemSerializer
    rater_serializer_class = RaterAssignmentItemSerializer
    rater_field = "assignment__rater"
    campaign_field = "assignment__campaign"
    admin_lookups = {"assignment": "assignment_id", "campaign": "assignment__campaign__name"}
    # Admins address an item by id, raters by its token (ratings.models.opaque_token: URL-safe characters).
    lookup_value_regex = "[A-Za-z0-9_-]{1,32}"

    def get_object(self):
        # Raters address their items by token, never by database id.
        if self._is_admin() or getattr(self, "swagger_fake_view", False):
            return super().get_object()
        item = self.get_queryset().filter(token=self.kwargs[self.lookup_field]).first()
        if item is None:
            raise NotFound("no such item among yours")
        return item

    def get_queryset(self):
        queryset = AssignmentItem.objects.select_related("assignment__campaign", "clip", "pair").order_by(
            "assignment_id", "position"
        )
        return self.scoped(queryset)

    def rater_rows(self, assignments) -> list:
        return projection.items(assignments)


@extend_schema(
    tags=["judgements"],
    parameters=[
        OpenApiParameter("campaign", str, description="Campaign name (admins)"),
        OpenApiParameter("caption", int, description="Caption id (admins)"),
        OpenApiParameter("rater", str, description="Rater username (admins)"),
        OpenApiParameter("study", str, description="Study: the `study_id` a rater's lists give (raters)"),
    ],
)
class ThumbsRatingViewSet(RaterBlindedMixin, mixins.ListModelMixin, ActionRolesMixin, viewsets.GenericViewSet):
    """THumBS ratings with the computed overall = (P + R) / 2 + F + C + I. Raters: their own, by item
    token and caption number; admins: all, with ids. (A list only: raters have no row ids to ask for.)"""

    action_roles = OWN_ROWS_FOR_RATERS
    serializer_class = ThumbsRatingSerializer
    rater_serializer_class = RaterThumbsRatingSerializer
    admin_lookups = {"campaign": "campaign__name", "caption": "caption_id", "rater": "rater__username"}

    def get_queryset(self):
        queryset = ThumbsRating.objects.select_related("rater", "campaign", "caption").order_by(
            "campaign_id", "caption_id", "rater__username"
        )
        return self.scoped(queryset)

    def rater_rows(self, assignments) -> list:
        return projection.ratings(assignments)


@extend_schema(
    tags=["judgements"],
    parameters=[
        OpenApiParameter("campaign", str, description="Campaign name (admins)"),
        OpenApiParameter("pair", int, description="Caption pair id (admins)"),
        OpenApiParameter("rater", str, description="Rater username (admins)"),
        OpenApiParameter("study", str, description="Study: the `study_id` a rater's lists give (raters)"),
    ],
)
class PairwiseVoteViewSet(RaterBlindedMixin, mixins.ListModelMixin, ActionRolesMixin, viewsets.GenericViewSet):
    """Pairwise votes. Admins: all, as a better / b better / no preference with ids. Raters: their own,
    by item token and the side they chose (left / right / none), never a/b. (A list only.)"""

    action_roles = OWN_ROWS_FOR_RATERS
    serializer_class = PairwiseVoteSerializer
    rater_serializer_class = RaterPairwiseVoteSerializer
    admin_lookups = {"campaign": "campaign__name", "pair": "pair_id", "rater": "rater__username"}

    def get_queryset(self):
        queryset = PairwiseVote.objects.select_related("rater", "campaign").order_by(
            "pair_id", "rater__username", "campaign_id"
        )
        return self.scoped(queryset)

    def rater_rows(self, assignments) -> list:
        return projection.votes(assignments)


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
