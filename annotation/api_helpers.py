"""Small pieces every app's API uses: query-parameter filters, the rater lock of corpus viewsets, JSON file imports."""

import json

from rest_framework import status
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response

from accounts.blinding import blinded_dataset_ids, dataset_visible_check
from annotation.serializers import ImportSummarySerializer, JsonImportInputSerializer
from common.web_input import QueryParameterError, query_value
from corpus.models import Dataset
from corpus.services.importing import ImportDataError


def filter_by_params(queryset, request, lookups: dict[str, str]):
    """Apply `?param=value` filters named in `lookups` ({param: ORM lookup}); blank values are ignored.

    Each value is checked against the field its lookup reaches (common/web_input.py): a 400 names the
    parameter of an id out of the database's range, a word for a number, a value outside the choices.
    They filter lists only: a viewset's other actions (a row, its custom actions) ignore them, and the
    schema documents them on the list operation alone (config/api_schema.py).
    """
    view = (getattr(request, "parser_context", None) or {}).get("view")
    if getattr(view, "action", "list") not in ("list", None):
        return queryset
    for param, lookup in lookups.items():
        value = request.query_params.get(param, "").strip()
        if not value:
            continue
        try:
            queryset = queryset.filter(**{lookup: query_value(queryset.model, lookup, param, value, using=queryset.db)})
        except QueryParameterError as error:
            raise ValidationError({param: [str(error)]}) from None
    return queryset


class RaterLockMixin:
    """Applies the rater lock (accounts/blinding.py) to a read-only corpus viewset.

    It lives in the corpus layer, not in accounts, because it looks datasets up by name (accounts imports no app).

    `blinded_dataset_lookup` is the queryset path to the row's dataset id (e.g. "clip__dataset_id");
    lists drop blinded datasets' rows, a `?dataset=` naming one and a blinded row itself get 403.
    """

    blinded_dataset_lookup = "dataset_id"

    def filter_queryset(self, queryset):
        queryset = super().filter_queryset(queryset)
        hidden = blinded_dataset_ids(self.request.user)
        if not hidden:
            return queryset
        dataset_name = self.request.query_params.get("dataset")
        if dataset_name:
            dataset_visible_check(
                self.request.user, Dataset.objects.filter(name=dataset_name).values_list("pk", flat=True).first()
            )
        if getattr(self, "action", None) == "list":
            return queryset.exclude(**{f"{self.blinded_dataset_lookup}__in": hidden})
        return queryset

    def get_object(self):
        obj = super().get_object()
        dataset_id = type(obj).objects.filter(pk=obj.pk).values_list(self.blinded_dataset_lookup, flat=True).first()
        dataset_visible_check(self.request.user, dataset_id)
        return obj


def uploaded_json_load(upload) -> object:
    """Parse an uploaded JSON file; a 400 names the file and where the JSON breaks."""
    try:
        text = upload.read().decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise ValidationError({"file": f"{upload.name}: not UTF-8 text (byte {error.start})"}) from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        message = f"{upload.name}: not valid JSON (line {error.lineno} column {error.colno}: {error.msg})"
        raise ValidationError({"file": message}) from None


def json_import_respond(request, importer) -> Response:
    """Run `importer(data=..., dataset_name=..., source_name=...)` on an uploaded file; 201 if it changed rows."""
    serializer = JsonImportInputSerializer(data=request.data)
    serializer.is_valid(raise_exception=True)
    upload = serializer.validated_data["file"]
    data = uploaded_json_load(upload)
    try:
        summary = importer(data=data, dataset_name=serializer.validated_data["dataset"], source_name=upload.name)
    except ImportDataError as error:
        raise ValidationError({"file": str(error)}) from None
    return summary_respond(summary)


def summary_respond(summary) -> Response:
    """An import's summary: 201 if it changed rows, else 200."""
    status_code = status.HTTP_201_CREATED if summary.changed_anything else status.HTTP_200_OK
    return Response(ImportSummarySerializer(summary.as_dict()).data, status=status_code)
