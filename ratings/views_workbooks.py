"""Workbook pages: upload a filled THumBS workbook, download a rater's workbook zip (admins), and the
signed audio links that exported workbooks point to (anyone holding a valid, unexpired link)."""

import tempfile

from django import forms
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.validators import validate_slug
from django.http import FileResponse, Http404, HttpResponseRedirect
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.cache import add_never_cache_headers
from django.views.decorators.http import require_safe

from accounts.roles import ADMIN, roles_required
from annotation.audio import clip_audio_response
from annotation.models import Clip
from ratings.models import Assignment, Campaign, WorkbookUpload
from ratings.services.workbooks import (
    LINKS_LOCAL,
    LINKS_URL,
    WorkbookExportError,
    rater_workbook_export,
    rater_workbook_zip,
    workbook_upload_create,
    workbook_upload_import,
)
from ratings.workbooks.links import DEFAULT_LINK_DAYS, audio_token_make, audio_token_read

RECENT_UPLOADS = 20


class WorkbookUploadForm(forms.Form):
    file = forms.FileField(label="Filled workbook (.xlsx)")
    campaign = forms.CharField(
        max_length=100,
        validators=[validate_slug],
        help_text="An existing THumBS campaign, or a new name to create one.",
    )
    rater = forms.ModelChoiceField(queryset=get_user_model().objects.order_by("username"), to_field_name="username")
    dry_run = forms.BooleanField(required=False, label="Dry run: check and count, write no ratings")

    def clean_file(self):
        uploaded = self.cleaned_data["file"]
        # Larger than anything a workbook may unpack to: refused before it is stored.
        if uploaded.size > settings.WORKBOOK_MAX_UNCOMPRESSED_BYTES:
            raise forms.ValidationError(
                f"{uploaded.name} is too large ({uploaded.size // (1024 * 1024)} MB) to be a workbook"
            )
        return uploaded


@roles_required(ADMIN)
def workbook_upload(request):
    """Who: admins. Upload a filled workbook for a rater; the file is kept whatever the outcome."""
    form = WorkbookUploadForm(request.POST or None, request.FILES or None)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        upload = workbook_upload_create(
            uploaded_file=data["file"], campaign_name=data["campaign"], rater=data["rater"], uploaded_by=request.user
        )
        workbook_upload_import(upload=upload, dry_run=data["dry_run"])
        return redirect("ratings:workbook_upload_detail", upload_id=upload.pk)
    context = {
        "form": form,
        "uploads": WorkbookUpload.objects.select_related("rater", "uploaded_by")[:RECENT_UPLOADS],
        "campaign_names": Campaign.objects.filter(task_type=Campaign.TaskType.THUMBS).values_list("name", flat=True),
    }
    return render(request, "ratings/workbooks/upload.html", context)


@roles_required(ADMIN)
@require_safe
def workbook_upload_detail(request, upload_id: int):
    """Who: admins. One upload: status, every error with its cell, or what the import did."""
    upload = get_object_or_404(WorkbookUpload.objects.select_related("rater", "uploaded_by"), pk=upload_id)
    summary_rows = [(key.replace("_", " "), value) for key, value in upload.summary.items() if key != "warnings"]
    return render(
        request,
        "ratings/workbooks/upload_detail.html",
        {"upload": upload, "summary_rows": summary_rows, "warnings": upload.summary.get("warnings", [])},
    )


@roles_required(ADMIN)
@require_safe
def workbook_upload_file(request, upload_id: int):
    """Who: admins. The uploaded file as it was received (media files are not served to everyone)."""
    upload = get_object_or_404(WorkbookUpload, pk=upload_id)
    try:
        handle = upload.file.open("rb")
    except FileNotFoundError:
        raise Http404("The uploaded file is missing from storage") from None
    return FileResponse(handle, as_attachment=True, filename=upload.original_name)


@roles_required(ADMIN)
@require_safe
def campaign_workbook_download(request, campaign_id: int, rater_id: int):
    """Who: admins. The rater's zip: P<n>_excel.xlsx with audio/, and P<n>_url.xlsx with signed links."""
    campaign = get_object_or_404(Campaign, pk=campaign_id, task_type=Campaign.TaskType.THUMBS)
    assignment = get_object_or_404(Assignment.objects.select_related("rater"), campaign=campaign, rater_id=rater_id)

    def signed_url(clip: Clip) -> str:
        token = audio_token_make(clip_id=clip.pk, days=DEFAULT_LINK_DAYS)
        return request.build_absolute_uri(reverse("ratings:workbook_audio", args=[token]))

    try:
        export = rater_workbook_export(
            campaign=campaign,
            rater=assignment.rater,
            links=[LINKS_LOCAL, LINKS_URL],
            url_for=signed_url,
            assign_if_missing=False,
        )
    except WorkbookExportError as error:
        raise Http404(str(error)) from None
    stream = tempfile.TemporaryFile()
    rater_workbook_zip(export=export, stream=stream)
    stream.seek(0)
    return FileResponse(
        stream, as_attachment=True, filename=f"{export.folder_name}.zip", content_type="application/zip"
    )


@require_safe
def workbook_audio(request, token: str):
    """Who: anyone with a signed link from an exported workbook (no sign-in: raters open it from Excel)."""
    clip_id = audio_token_read(token)
    clip = Clip.objects.filter(pk=clip_id).first() if clip_id is not None else None
    if clip is None or not clip.audio:
        raise Http404("This audio link is invalid or has expired; ask for a new workbook")
    if settings.USES_S3_STORAGE:
        response = HttpResponseRedirect(clip.audio.storage.url(clip.audio.name))
        add_never_cache_headers(response)
        return response
    try:
        return clip_audio_response(clip, request.headers.get("Range"))
    except FileNotFoundError:
        raise Http404("The audio file of this clip is missing from storage") from None
