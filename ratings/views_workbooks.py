"""Workbook pages: upload a filled THumBS workbook, download a rater's workbook zip (admins), and the
signed audio links that exported workbooks point to (anyone holding a valid, unexpired link)."""

import tempfile

from django.http import FileResponse, Http404, HttpResponseRedirect
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.cache import add_never_cache_headers
from django.views.decorators.http import require_safe

from accounts.live import live_context, live_status_response, live_version
from accounts.roles import ADMIN, roles_required
from corpus.audio import stored_file_response
from ratings.forms import WorkbookUploadForm
from ratings.models import Assignment, AssignmentItem, Campaign, WorkbookUpload
from ratings.services.rater_audio import RATER_AUDIO_TYPE, rater_audio_redirect_url
from ratings.services.workbook_import import upload_error_kind
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


@roles_required(ADMIN)
def workbook_upload(request):
    """Who: admins. Upload a filled workbook for one rater of one campaign; the file is kept whatever the outcome.

    The rater list offers only the chosen campaign's raters (all of them are sent with the campaign they
    belong to, and the page's script hides the others); creating a campaign for a study run outside the
    app is an explicit checkbox. The rule itself is in ratings/services/workbook_import.py.
    """
    preselected = request.GET.get("campaign", "")
    initial = {"campaign": preselected, "rater": request.GET.get("rater", "")}
    form = WorkbookUploadForm(request.POST or None, request.FILES or None, initial=initial)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        upload = workbook_upload_create(
            uploaded_file=data["file"],
            campaign_name=data["campaign_name"],
            rater=data["rater"],
            uploaded_by=request.user,
            create_campaign=data["create_campaign"],
            replace_newer=data["replace_newer"],
        )
        workbook_upload_import(upload=upload, dry_run=data["dry_run"])
        return redirect("ratings:workbook_upload_detail", upload_id=upload.pk)
    uploads = list(WorkbookUpload.objects.select_related("rater", "uploaded_by")[:RECENT_UPLOADS])
    version, busy = _uploads_live(uploads)
    context = {
        "form": form,
        "uploads": uploads,
        "rater_options": form.rater_options(),
        "live": live_context(status_url=reverse("ratings:workbook_uploads_status"), version=version, busy=busy),
    }
    return render(request, "ratings/workbooks/upload.html", context, status=400 if form.errors else 200)


def _uploads_live(uploads: list[WorkbookUpload]) -> tuple[str, bool]:
    """The recent uploads' live version, and whether one is still being imported (another admin's, say)."""
    version = live_version([(upload.pk, upload.status, len(upload.errors)) for upload in uploads])
    # pending with a summary: a dry run, which stays pending; without one: being imported right now
    return version, any(upload.status == WorkbookUpload.Status.PENDING and not upload.summary for upload in uploads)


@roles_required(ADMIN)
@require_safe
def workbook_uploads_status(request):
    """Who: admins. The upload page's live status: its list of recent uploads shows new ones and outcomes."""
    uploads = WorkbookUpload.objects.only("pk", "status", "errors", "summary")[:RECENT_UPLOADS]
    version, busy = _uploads_live(list(uploads))
    return live_status_response(version=version, busy=busy)


@roles_required(ADMIN)
@require_safe
def workbook_upload_detail(request, upload_id: int):
    """Who: admins. One upload: status, every error (titled as file, rule or cell errors), or what it did."""
    upload = get_object_or_404(WorkbookUpload.objects.select_related("rater", "uploaded_by"), pk=upload_id)
    summary_rows = [(key.replace("_", " "), value) for key, value in upload.summary.items() if key != "warnings"]
    return render(
        request,
        "ratings/workbooks/upload_detail.html",
        {
            "upload": upload,
            "error_kind": upload_error_kind(upload.errors),
            "summary_rows": summary_rows,
            "warnings": upload.summary.get("warnings", []),
        },
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
    """Who: admins. An assigned rater's zip: P<n>_excel.xlsx with audio/, and P<n>_url.xlsx with signed links."""
    campaign = get_object_or_404(Campaign, pk=campaign_id, task_type=Campaign.TaskType.THUMBS)
    assignment = get_object_or_404(Assignment.objects.select_related("rater"), campaign=campaign, rater_id=rater_id)

    def signed_url(item: AssignmentItem) -> str:
        token = audio_token_make(item_token=item.token, days=DEFAULT_LINK_DAYS)
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
    """Who: anyone with a signed link from an exported workbook (no sign-in: raters open it from Excel).

    The link names the rater's item by its token; the response is the clip's rater copy (no metadata) and
    carries no file name.
    """
    item_token = audio_token_read(token)
    item = (
        AssignmentItem.objects.select_related("clip").filter(token=item_token).first()
        if item_token is not None
        else None
    )
    if item is None or not item.clip.audio:
        raise Http404("This audio link is invalid or has expired; ask for a new workbook")
    try:
        redirect_url = rater_audio_redirect_url(item.clip)
        if redirect_url:
            response = HttpResponseRedirect(redirect_url)
            add_never_cache_headers(response)
            return response
        return stored_file_response(
            item.clip.rater_audio, request.headers.get("Range"), disclose_name=False, content_type=RATER_AUDIO_TYPE
        )
    except FileNotFoundError:
        raise Http404("The audio file of this clip is missing from storage") from None
