"""Small pieces every app's API uses: query-parameter filters and JSON file imports."""

import json

from django.core.exceptions import ValidationError as DjangoValidationError
from rest_framework import status
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response

from annotation.serializers import ImportSummarySerializer, JsonImportInputSerializer
from annotation.services.importing import ImportDataError

BIGGEST_ID = 2**63 - 1  # PostgreSQL bigint and SQLite INTEGER: a larger number fails inside the database


def filter_by_params(queryset, request, lookups: dict[str, str]):
    """Apply `?param=value` filters named in `lookups` ({param: ORM lookup}); blank values are ignored."""
    for param, lookup in lookups.items():
        value = request.query_params.get(param, "").strip()
        if not value:
            continue
        if value.lstrip("+-").isdigit() and abs(int(value)) > BIGGEST_ID:
            raise ValidationError({param: f"{value!r} is not a valid value"})
        try:
            queryset = queryset.filter(**{lookup: value})
        except (ValueError, DjangoValidationError):
            raise ValidationError({param: f"{value!r} is not a valid value"}) from None
    return queryset


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
    status_code = status.HTTP_201_CREATED if summary.changed_anything else status.HTTP_200_OK
    return Response(ImportSummarySerializer(summary.as_dict()).data, status=status_code)
