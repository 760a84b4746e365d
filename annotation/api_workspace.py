"""REST endpoints of the annotation workspace (the browser pages use the same ones).

Who may use what (admins pass every check):
- annotation campaigns: annotators see the campaigns they annotate, reviewers those they review;
  admins create them; annotators ask a campaign for their next clip;
- annotation tasks: annotators see and edit only their own (draft autosave with versions, checks,
  submit, skip); reviewers send a submitted task back with a comment;
- annotation reviews: reviewers open a clip of a campaign they review (never one they annotated),
  see its submitted annotations side by side, edit the gold draft and publish it.
"""

from django.db.models import Exists, OuterRef
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import PermissionDenied, ValidationError
from rest_framework.response import Response

from accounts.permissions import ActionRolesMixin
from accounts.roles import ADMIN, ANNOTATOR, REVIEWER, user_roles
from annotation import selectors_workspace as selectors
from annotation.api_helpers import filter_by_params
from annotation.models import AnnotationCampaign, AnnotationReview, AnnotationTask
from annotation.serializers_workspace import (
    AnnotationCampaignInputSerializer,
    AnnotationCampaignSerializer,
    AnnotationReviewSerializer,
    AnnotationTaskSerializer,
    ChecksInputSerializer,
    ChecksResultSerializer,
    DraftConflictSerializer,
    DraftSavedSerializer,
    DraftSaveInputSerializer,
    PublishInputSerializer,
    ReturnInputSerializer,
    ReviewOpenInputSerializer,
    SkipInputSerializer,
    SubmitInputSerializer,
    SubmitRefusedSerializer,
)
from annotation.services.annotation_campaigns import (
    CampaignError,
    annotation_campaign_create,
    annotation_task_next,
    annotation_task_skip,
)
from annotation.services.annotation_checks import has_errors
from annotation.services.annotation_drafts import (
    DraftConflictError,
    DraftInvalidError,
    DraftTooLargeError,
    draft_size_check,
)
from annotation.services.annotation_reviews import (
    ReviewDeniedError,
    annotation_task_return,
    review_checks,
    review_draft_save,
    review_open,
    review_publish,
)
from annotation.services.annotation_tasks import (
    SubmitRefusedError,
    TaskLockedError,
    task_checks,
    task_draft_save,
    task_submit,
)

CONFLICT_RESPONSES = {409: DraftConflictSerializer, 400: OpenApiResponse(description="Field name -> message")}


def conflict_response(error: Exception) -> Response:
    if isinstance(error, DraftConflictError):
        body = {
            "detail": str(error),
            "code": "stale_version",
            "current_version": error.current_version,
            "base_version": error.base_version,
        }
        if error.current_draft is not None:
            body["current_draft"] = error.current_draft
    else:
        body = {"detail": str(error), "code": "locked"}
    return Response(body, status=status.HTTP_409_CONFLICT)


def invalid_draft(error: DraftInvalidError) -> ValidationError:
    return ValidationError({error.field: [error.message]})


def draft_save_respond(request, save) -> Response:
    """Parse {base_version, draft}, call save(**it): 200 {version, saved_at}, 400 naming the field, 409, or 413
    when the draft weighs more than MAX_DRAFT_BYTES (nothing saved; the editor shows the message)."""
    try:
        draft_size_check(len(request.body))
    except DraftTooLargeError as error:
        body = {"detail": str(error), "code": "draft_too_large", "size": error.size, "max_bytes": error.max_bytes}
        return Response(body, status=status.HTTP_413_REQUEST_ENTITY_TOO_LARGE)
    serializer = DraftSaveInputSerializer(data=request.data)
    serializer.is_valid(raise_exception=True)
    try:
        saved = save(**serializer.validated_data)
    except DraftInvalidError as error:
        raise invalid_draft(error) from None
    except (DraftConflictError, TaskLockedError) as error:
        return conflict_response(error)
    return Response(DraftSavedSerializer({"version": saved.version, "saved_at": saved.saved_at}).data)


def submission_respond(request, submit, respond) -> Response:
    """Parse {base_version, confirm_warnings}, call submit(**it), answer respond(result); 400 lists the checks."""
    serializer = SubmitInputSerializer(data=request.data)
    serializer.is_valid(raise_exception=True)
    try:
        result = submit(**serializer.validated_data)
    except SubmitRefusedError as error:
        return refused_response(error)
    except DraftInvalidError as error:
        raise invalid_draft(error) from None
    except (DraftConflictError, TaskLockedError) as error:
        return conflict_response(error)
    return respond(result)


def refused_response(error: SubmitRefusedError) -> Response:
    body = {
        "detail": str(error),
        "checks": [check.as_dict() for check in error.checks],
        "needs_confirmation": error.needs_confirmation_only,
    }
    return Response(body, status=status.HTTP_400_BAD_REQUEST)


@extend_schema(tags=["annotation workspace"])
class AnnotationCampaignViewSet(
    ActionRolesMixin, mixins.ListModelMixin, mixins.RetrieveModelMixin, mixins.CreateModelMixin, viewsets.GenericViewSet
):
    """Annotation campaigns. Read: their annotators and reviewers. Create: admins. Next clip: annotators."""

    action_roles = {
        "list": (ANNOTATOR, REVIEWER),
        "retrieve": (ANNOTATOR, REVIEWER),
        "next": (ANNOTATOR,),
        "*": (ADMIN,),
    }
    serializer_class = AnnotationCampaignSerializer

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):
            return AnnotationCampaign.objects.none()
        return selectors.campaigns_visible_to(self.request.user).prefetch_related("annotators", "reviewers")

    @extend_schema(request=AnnotationCampaignInputSerializer, responses={201: AnnotationCampaignSerializer})
    def create(self, request):
        serializer = AnnotationCampaignInputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        try:
            campaign = annotation_campaign_create(**serializer.validated_data, created_by=request.user)
        except CampaignError as error:
            raise ValidationError({error.field or "detail": str(error)}) from None
        return Response(AnnotationCampaignSerializer(campaign).data, status=status.HTTP_201_CREATED)

    @extend_schema(
        request=None,
        responses={200: AnnotationTaskSerializer, 204: OpenApiResponse(description="Nothing left for this annotator")},
    )
    @action(detail=True, methods=["post"])
    def next(self, request, pk=None):
        """The caller's unfinished clip (returned work first), else a newly scheduled one; 204 when none is left."""
        campaign = self.get_object()
        try:
            task = annotation_task_next(campaign=campaign, annotator=request.user)
        except CampaignError as error:
            raise PermissionDenied(str(error)) from None
        if task is None:
            return Response(status=status.HTTP_204_NO_CONTENT)
        return Response(AnnotationTaskSerializer(task, context=self.get_serializer_context()).data)


@extend_schema(
    tags=["annotation workspace"],
    parameters=[
        OpenApiParameter("campaign", int, description="Campaign id"),
        OpenApiParameter("status", str, enum=AnnotationTask.Status.values),
    ],
)
class AnnotationTaskViewSet(
    ActionRolesMixin, mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet
):
    """An annotator's clips: draft (autosaved, versioned), automated checks, submit, skip.

    Annotators see only their own tasks; admins see all. Reviewers send submissions back (`return`).
    """

    action_roles = {"return_to_annotator": (REVIEWER,), "*": (ANNOTATOR,)}
    serializer_class = AnnotationTaskSerializer

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):
            return AnnotationTask.objects.none()
        tasks = AnnotationTask.objects.select_related("campaign", "clip", "annotator").order_by("-updated_at")
        user = self.request.user
        if self.action == "return_to_annotator" or ADMIN in user_roles(user):
            pass  # the service decides whether this reviewer may act on this clip
        else:
            tasks = tasks.filter(annotator=user)
        return filter_by_params(tasks, self.request, {"campaign": "campaign_id", "status": "status"})

    @extend_schema(
        methods=["PUT"], request=DraftSaveInputSerializer, responses={200: DraftSavedSerializer, **CONFLICT_RESPONSES}
    )
    @extend_schema(methods=["GET"], responses={200: AnnotationTaskSerializer})
    @action(detail=True, methods=["get", "put"])
    def draft(self, request, pk=None):
        """GET: the task with its draft. PUT: save the draft if `base_version` is still the stored version
        (else 409 with the current version: another tab or device saved meanwhile; nothing is overwritten)."""
        task = self.get_object()
        if request.method == "GET":
            return Response(self.get_serializer(task).data)
        return draft_save_respond(request, lambda **data: task_draft_save(task=task, annotator=request.user, **data))

    @extend_schema(request=ChecksInputSerializer, responses={200: ChecksResultSerializer})
    @action(detail=True, methods=["post"])
    def checks(self, request, pk=None):
        """The automated checks of the given draft (or the stored one); nothing is saved."""
        task = self.get_object()
        serializer = ChecksInputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        try:
            checks = task_checks(task=task, draft=serializer.validated_data.get("draft"))
        except DraftInvalidError as error:
            raise invalid_draft(error) from None
        return Response({"checks": [check.as_dict() for check in checks], "can_submit": not has_errors(checks)})

    @extend_schema(
        request=SubmitInputSerializer,
        responses={200: AnnotationTaskSerializer, 400: SubmitRefusedSerializer, 409: DraftConflictSerializer},
    )
    @action(detail=True, methods=["post"])
    def submit(self, request, pk=None):
        """Submit the stored draft at `base_version`: errors refuse, warnings need `confirm_warnings`."""
        task = self.get_object()
        return submission_respond(
            request,
            lambda **data: task_submit(task=task, annotator=request.user, **data),
            lambda submitted: Response(self.get_serializer(submitted).data),
        )

    @extend_schema(request=SkipInputSerializer, responses={200: AnnotationTaskSerializer})
    @action(detail=True, methods=["post"])
    def skip(self, request, pk=None):
        """Give the clip up with a reason the admins see (bad audio, silence, other + comment)."""
        task = self.get_object()
        serializer = SkipInputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        try:
            task = annotation_task_skip(task=task, **serializer.validated_data)
        except CampaignError as error:
            raise ValidationError({error.field or "detail": str(error)}) from None
        return Response(self.get_serializer(task).data)

    @extend_schema(request=ReturnInputSerializer, responses={200: AnnotationTaskSerializer})
    @action(detail=True, methods=["post"], url_path="return")
    def return_to_annotator(self, request, pk=None):
        """Reviewer: send a submission back to its annotator with a comment (shown in their queue)."""
        task = get_object_or_404(AnnotationTask.objects.select_related("campaign", "clip"), pk=pk)
        serializer = ReturnInputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        try:
            task = annotation_task_return(
                task=task, reviewer=request.user, comment=serializer.validated_data["comment"]
            )
        except ReviewDeniedError as error:
            raise PermissionDenied(str(error)) from None
        return Response(self.get_serializer(task).data)


@extend_schema(tags=["annotation workspace"], parameters=[OpenApiParameter("campaign", int, description="Campaign id")])
class AnnotationReviewViewSet(
    ActionRolesMixin, mixins.ListModelMixin, mixins.RetrieveModelMixin, mixins.CreateModelMixin, viewsets.GenericViewSet
):
    """Reviews into gold: one per clip of a campaign, with the clip's submitted annotations side by side.

    Reviewers of the campaign only, and never for a clip they annotated themselves (403).
    """

    action_roles = {"*": (REVIEWER,)}
    serializer_class = AnnotationReviewSerializer

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):
            return AnnotationReview.objects.none()
        user = self.request.user
        campaigns = selectors.campaigns_visible_to(user).values("pk")
        own_work = AnnotationTask.objects.filter(campaign=OuterRef("campaign"), clip=OuterRef("clip"), annotator=user)
        reviews = (
            AnnotationReview.objects.filter(campaign__in=campaigns)
            .exclude(Exists(own_work))  # never a clip the caller annotated
            .select_related("campaign", "clip", "reviewer")
        )
        return filter_by_params(reviews.order_by("campaign_id", "clip_id"), self.request, {"campaign": "campaign_id"})

    def get_object(self):
        review = super().get_object()
        self._require(review)
        return review

    def _require(self, review: AnnotationReview) -> None:
        from annotation.services.annotation_reviews import clip_review_denial

        denial = clip_review_denial(campaign=review.campaign, clip=review.clip, user=self.request.user)
        if denial:
            raise PermissionDenied(denial)

    @extend_schema(request=ReviewOpenInputSerializer, responses={200: AnnotationReviewSerializer})
    def create(self, request):
        """Open (or get) the review of a clip in a campaign."""
        serializer = ReviewOpenInputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        try:
            review = review_open(reviewer=request.user, **serializer.validated_data)
        except ReviewDeniedError as error:
            raise PermissionDenied(str(error)) from None
        return Response(self.get_serializer(review).data)

    @extend_schema(request=DraftSaveInputSerializer, responses={200: DraftSavedSerializer, **CONFLICT_RESPONSES})
    @action(detail=True, methods=["put"])
    def draft(self, request, pk=None):
        """Save the gold draft if `base_version` is still the stored version (else 409)."""
        review = self.get_object()
        return draft_save_respond(
            request, lambda **data: review_draft_save(review=review, reviewer=request.user, **data)
        )

    @extend_schema(request=ChecksInputSerializer, responses={200: ChecksResultSerializer})
    @action(detail=True, methods=["post"])
    def checks(self, request, pk=None):
        """The checks publishing runs on the given gold draft (or the stored one), events that may name one
        sound included; nothing is saved."""
        review = self.get_object()
        serializer = ChecksInputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        try:
            checks = review_checks(review=review, reviewer=request.user, draft=serializer.validated_data.get("draft"))
        except DraftInvalidError as error:
            raise invalid_draft(error) from None
        return Response({"checks": [check.as_dict() for check in checks], "can_submit": not has_errors(checks)})

    @extend_schema(
        request=PublishInputSerializer,
        responses={200: AnnotationReviewSerializer, 400: SubmitRefusedSerializer, 409: DraftConflictSerializer},
    )
    @action(detail=True, methods=["post"])
    def publish(self, request, pk=None):
        """Publish the gold draft as the clip's gold annotation (the previous gold one is superseded)."""
        review = self.get_object()

        def published(_gold) -> Response:
            review.refresh_from_db()
            return Response(self.get_serializer(review).data)

        return submission_respond(
            request, lambda **data: review_publish(review=review, reviewer=request.user, **data), published
        )


def register_routes(router) -> None:
    router.register("annotation-campaigns", AnnotationCampaignViewSet, basename="annotation-campaign")
    router.register("annotation-tasks", AnnotationTaskViewSet, basename="annotation-task")
    router.register("annotation-reviews", AnnotationReviewViewSet, basename="annotation-review")
