"""REST endpoints of the corpus: datasets, clips, captions, systems, attribute tags, expert annotations.

Who may use what (admins pass every check):
- annotators and reviewers read the corpus; admins also add captioning systems, upload clip audio and
  import AudioCaps-F files;
- annotators create, replace and delete their own expert annotations (not once gold);
- reviewers read every expert annotation and move it through review (submitted -> gold);
- raters get nothing here: they see their clips and captions, blinded, through /api/assignment-items/;
- the rater lock (accounts/blinding.py): an annotator or reviewer who is also a rater in an active
  campaign gets no clips or captions of that campaign's dataset.
"""

from django.db import transaction
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import PermissionDenied, ValidationError
from rest_framework.parsers import MultiPartParser
from rest_framework.response import Response

from accounts.permissions import ActionRolesMixin
from accounts.roles import ADMIN, ANNOTATOR, REVIEWER, user_has_role
from annotation import selectors
from annotation.api_helpers import RaterLockMixin, filter_by_params, summary_respond, uploaded_json_load
from annotation.models import AttributeTag, ExpertAnnotation
from annotation.selectors_expert import expert_annotations_visible_to, expert_annotations_with_graph
from annotation.serializers import (
    AttributeTagSerializer,
    AudioCapsFImportInputSerializer,
    AudioUploadInputSerializer,
    AudioUploadResultSerializer,
    CaptioningSystemSerializer,
    CaptionSerializer,
    ClipSerializer,
    DatasetSerializer,
    DatasetUploadSerializer,
    ExpertAnnotationInputSerializer,
    ExpertAnnotationSerializer,
    ExpertAnnotationStatusSerializer,
    ImportSummarySerializer,
)
from annotation.services.audiocaps_f import audiocaps_f_import, audiocaps_f_needs_embedding
from annotation.services.dataset_uploads import data_file_upload_create
from annotation.services.expert_annotations import (
    ExpertAnnotationError,
    ExpertAnnotationPermissionError,
    expert_annotation_delete,
    expert_annotation_outside_campaign_check,
    expert_annotation_save,
    expert_annotation_set_status,
)
from annotation.services.file_imports import AUDIOCAPS_F
from annotation.tasks import import_dataset_upload
from corpus.models import Caption, CaptioningSystem, Clip, DatasetUpload
from corpus.services.audio import clip_attach_audio
from corpus.services.importing import ImportDataError

CORPUS_READERS = (ANNOTATOR, REVIEWER)
CORPUS_READ_ONLY = {"list": CORPUS_READERS, "retrieve": CORPUS_READERS, "*": (ADMIN,)}


@extend_schema(tags=["corpus"])
class DatasetViewSet(ActionRolesMixin, viewsets.ReadOnlyModelViewSet):
    """Datasets with clip, audio and caption counts. Read: annotator, reviewer, admin."""

    action_roles = CORPUS_READ_ONLY
    serializer_class = DatasetSerializer

    def get_queryset(self):
        return selectors.dataset_overview()


@extend_schema(
    tags=["corpus"],
    parameters=[
        OpenApiParameter("dataset", str, description="Dataset name"),
        OpenApiParameter("external_id", str, description="Clip id in its source, e.g. a YouTube id"),
    ],
)
class ClipViewSet(RaterLockMixin, ActionRolesMixin, viewsets.ReadOnlyModelViewSet):
    """Clips with audio URL and waveform peaks. Read: annotator, reviewer, admin (rater lock applies)."""

    blinded_dataset_lookup = "dataset_id"

    action_roles = CORPUS_READ_ONLY
    serializer_class = ClipSerializer

    def get_queryset(self):
        queryset = Clip.objects.select_related("dataset").order_by("dataset__name", "external_id")
        return filter_by_params(queryset, self.request, {"dataset": "dataset__name", "external_id": "external_id"})

    @extend_schema(
        request={"multipart/form-data": AudioUploadInputSerializer}, responses={200: AudioUploadResultSerializer}
    )
    @action(detail=True, methods=["post"], parser_classes=[MultiPartParser])
    def audio(self, request, pk=None):
        """Admin: upload the clip's audio; it is decoded and measured (duration, rate, waveform) before storing."""
        clip = self.get_object()
        serializer = AudioUploadInputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        upload = serializer.validated_data["file"]
        try:
            changed = clip_attach_audio(clip=clip, file=upload, file_name=upload.name)
        except ImportDataError as error:
            raise ValidationError({"file": str(error)}) from None
        clip.refresh_from_db()
        context = self.get_serializer_context()
        return Response(AudioUploadResultSerializer({"changed": changed, "clip": clip}, context=context).data)


@extend_schema(
    tags=["corpus"],
    parameters=[
        OpenApiParameter("clip", int, description="Clip id"),
        OpenApiParameter("dataset", str, description="Dataset name"),
        OpenApiParameter("role", str, enum=Caption.Role.values),
        OpenApiParameter("system", str, description="Captioning system name"),
    ],
)
class CaptionViewSet(RaterLockMixin, ActionRolesMixin, viewsets.ReadOnlyModelViewSet):
    """Captions with their authorship (role, author kind, system). Read: annotator, reviewer, admin; never raters
    (and not the datasets an annotator or reviewer rates in an active campaign: the rater lock)."""

    blinded_dataset_lookup = "clip__dataset_id"

    action_roles = CORPUS_READ_ONLY
    serializer_class = CaptionSerializer

    def get_queryset(self):
        # The corpus: an HI pair's copy of another clip's caption is not one of this clip's captions.
        queryset = Caption.objects.corpus().select_related("system").order_by("clip_id", "role", "position", "id")
        lookups = {"clip": "clip_id", "dataset": "clip__dataset__name", "role": "role", "system": "system__name"}
        return filter_by_params(queryset, self.request, lookups)


@extend_schema(tags=["corpus"])
class CaptioningSystemViewSet(ActionRolesMixin, viewsets.ModelViewSet):
    """Captioning systems. Read: annotator, reviewer, admin. Write: admin."""

    action_roles = CORPUS_READ_ONLY
    serializer_class = CaptioningSystemSerializer
    queryset = CaptioningSystem.objects.order_by("name")


@extend_schema(tags=["corpus"], parameters=[OpenApiParameter("category", str, enum=AttributeTag.Category.values)])
class AttributeTagViewSet(ActionRolesMixin, viewsets.ReadOnlyModelViewSet):
    """The AudioCaps-F attribute tag library. Read: annotator, reviewer, admin."""

    action_roles = {"*": CORPUS_READERS}
    serializer_class = AttributeTagSerializer
    pagination_class = None  # ~ a few hundred short rows; annotation forms want them all at once

    def get_queryset(self):
        return filter_by_params(AttributeTag.objects.all(), self.request, {"category": "category"})


def _refuse_campaign_annotation(annotation: ExpertAnnotation) -> None:
    try:
        expert_annotation_outside_campaign_check(annotation=annotation)
    except ExpertAnnotationError as error:
        raise ValidationError({"detail": str(error)}) from None


@extend_schema(
    tags=["expert annotations"],
    parameters=[
        OpenApiParameter("clip", int, description="Clip id"),
        OpenApiParameter("dataset", str, description="Dataset name"),
        OpenApiParameter("status", str, enum=ExpertAnnotation.Status.values),
        OpenApiParameter("annotator", str, description="Annotator username"),
    ],
)
class ExpertAnnotationViewSet(
    ActionRolesMixin,
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    mixins.DestroyModelMixin,
    viewsets.GenericViewSet,
):
    """AudioCaps-F expert annotations (events with sources and attributes, temporal relations).

    Read: annotators see their own; reviewers also others' submitted and gold ones (not drafts, not of clips
    they annotate themselves); admins see all.
    Create / replace / delete: annotators, on their own annotations, while not gold.
    Status (review): reviewers (submitted -> gold, submitted -> draft, gold -> submitted) and admins (any).
    """

    action_roles = {
        "list": (ANNOTATOR, REVIEWER),
        "retrieve": (ANNOTATOR, REVIEWER),
        "create": (ANNOTATOR,),
        "update": (ANNOTATOR,),
        "destroy": (ANNOTATOR,),
        "set_status": (REVIEWER,),
        "*": (ADMIN,),
    }
    serializer_class = ExpertAnnotationSerializer

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):  # schema generation has no real user
            return ExpertAnnotation.objects.none()
        queryset = expert_annotations_visible_to(user=self.request.user).order_by("clip_id", "annotator__username")
        lookups = {
            "clip": "clip_id",
            "dataset": "clip__dataset__name",
            "status": "status",
            "annotator": "annotator__username",
        }
        return filter_by_params(queryset, self.request, lookups)

    def _validated_input(self, request) -> dict:
        input_serializer = ExpertAnnotationInputSerializer(data=request.data)
        input_serializer.is_valid(raise_exception=True)
        return input_serializer.validated_data

    def _save(self, request, data: dict) -> ExpertAnnotation:
        try:
            return expert_annotation_save(
                clip=data["clip"],
                annotator=request.user,
                events=data["events"],
                relations=data["relations"],
                status=data["status"],
            )
        except ExpertAnnotationError as error:
            raise ValidationError({"detail": str(error)}) from None

    def _respond(self, annotation: ExpertAnnotation, status_code: int) -> Response:
        fresh = expert_annotations_with_graph().get(pk=annotation.pk)
        return Response(self.get_serializer(fresh).data, status=status_code)

    @extend_schema(request=ExpertAnnotationInputSerializer, responses={201: ExpertAnnotationSerializer})
    def create(self, request):
        """Save the caller's annotation of a clip (creates it, or replaces the caller's existing one)."""
        data = self._validated_input(request)
        existed = ExpertAnnotation.objects.filter(
            clip=data["clip"], annotator=request.user, campaign__isnull=True
        ).exists()
        annotation = self._save(request, data)
        return self._respond(annotation, status.HTTP_200_OK if existed else status.HTTP_201_CREATED)

    @extend_schema(request=ExpertAnnotationInputSerializer, responses={200: ExpertAnnotationSerializer})
    def update(self, request, pk=None):
        """Replace the caller's own annotation (the whole graph)."""
        annotation = get_object_or_404(ExpertAnnotation, pk=pk, annotator=request.user)
        _refuse_campaign_annotation(annotation)
        data = self._validated_input(request)
        if data["clip"] != annotation.clip:
            raise ValidationError(
                {"clip": f"annotation {annotation.pk} is of clip {annotation.clip_id}; the clip cannot change"}
            )
        return self._respond(self._save(request, data), status.HTTP_200_OK)

    def perform_destroy(self, instance: ExpertAnnotation) -> None:
        try:
            expert_annotation_delete(annotation=instance, user=self.request.user)
        except ExpertAnnotationPermissionError as error:
            raise PermissionDenied(str(error)) from None
        except ExpertAnnotationError as error:
            raise ValidationError({"detail": str(error)}) from None

    @extend_schema(request=ExpertAnnotationStatusSerializer, responses={200: ExpertAnnotationSerializer})
    @action(detail=True, methods=["post"], url_path="status")
    def set_status(self, request, pk=None):
        """Review step: reviewers accept (gold), return (draft) or revoke gold; admins set any status."""
        annotation = self.get_object()
        serializer = ExpertAnnotationStatusSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        try:
            annotation = expert_annotation_set_status(
                annotation=annotation,
                status=serializer.validated_data["status"],
                is_admin=user_has_role(request.user, ADMIN),
            )
        except ExpertAnnotationError as error:
            raise ValidationError({"detail": str(error)}) from None
        return self._respond(annotation, status.HTTP_200_OK)


@extend_schema(tags=["imports"])
class AudioCapsFImportViewSet(ActionRolesMixin, viewsets.ViewSet):
    """Admin: import AudioCaps-F expert annotations (JSON keyed Y<id>.wav) as gold annotations."""

    action_roles = {"*": (ADMIN,)}
    parser_classes = [MultiPartParser]

    @extend_schema(
        request={"multipart/form-data": AudioCapsFImportInputSerializer},
        responses={201: ImportSummarySerializer, 200: ImportSummarySerializer, 202: DatasetUploadSerializer},
    )
    def create(self, request):
        """All or nothing; importing the same file again changes nothing (200). A file with a clip of two events
        or more, all with spans, is checked for duplicate events by embedding phrases, which takes longer than a
        request may last: it is handed to the worker (202) and `status_url` follows it."""
        serializer = AudioCapsFImportInputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        upload = serializer.validated_data["file"]
        dataset_name = serializer.validated_data["dataset"]
        options = {
            "duplicates_as": serializer.validated_data["duplicate_events"],
            "conflicting_as": serializer.validated_data["conflicting_attributes"],
        }
        data = uploaded_json_load(upload)
        try:
            if audiocaps_f_needs_embedding(data=data, source_name=upload.name):
                record = data_file_upload_create(
                    kind=AUDIOCAPS_F.kind,
                    dataset_name=dataset_name,
                    upload=upload,
                    uploaded_by=request.user,
                    options=options,
                )
                transaction.on_commit(lambda: import_dataset_upload.delay(record.pk))
                return Response(DatasetUploadSerializer(record).data, status=status.HTTP_202_ACCEPTED)
            summary = audiocaps_f_import(data=data, dataset_name=dataset_name, source_name=upload.name, **options)
        except ImportDataError as error:
            raise ValidationError({"file": str(error)}) from None
        return summary_respond(summary)


@extend_schema(tags=["imports"])
class ImportUploadViewSet(ActionRolesMixin, viewsets.ReadOnlyModelViewSet):
    """Admin: an import handed to the worker (a 202 answer's `status_url`): pending, running, imported (with its
    summary) or failed (with the importer's named errors)."""

    action_roles = {"*": (ADMIN,)}
    serializer_class = DatasetUploadSerializer
    queryset = DatasetUpload.objects.order_by("-created_at", "-pk")


def register_routes(router) -> None:
    router.register("datasets", DatasetViewSet, basename="dataset")
    router.register("clips", ClipViewSet, basename="clip")
    router.register("captions", CaptionViewSet, basename="caption")
    router.register("captioning-systems", CaptioningSystemViewSet, basename="captioning-system")
    router.register("attribute-tags", AttributeTagViewSet, basename="attribute-tag")
    router.register("expert-annotations", ExpertAnnotationViewSet, basename="expert-annotation")
    router.register("imports/audiocaps-f", AudioCapsFImportViewSet, basename="import-audiocaps-f")
    router.register("imports/uploads", ImportUploadViewSet, basename="import-upload")
