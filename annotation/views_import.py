"""A dataset's page, and the pages that bring data in: a new dataset from audio, audio for an existing dataset's
clips, references, AudioCaps-F annotations.

Every upload is stored and imported by a worker (services/dataset_uploads.py); the upload's page follows the
progress and shows what the import created or the importer's named errors as they are (each importer validates
everything before writing in one transaction). Judgement files (FENSE, BRACE) have their page in ratings,
which owns that importer; it uses `file_import_page` below.
"""

from django.core.paginator import Paginator
from django.db import transaction
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_safe

from accounts.blinding import dataset_visible_check
from accounts.live import live_context, live_status_response, live_version
from accounts.roles import ADMIN, ANNOTATOR, REVIEWER, roles_required, user_has_role
from annotation.forms_import import ClipAudioForm, DataFileImportForm, DatasetFromAudioForm
from annotation.selectors_datasets import dataset_clips, dataset_page_data, dataset_uploads_recent
from annotation.services.dataset_uploads import (
    clip_audio_upload_create,
    data_file_upload_create,
    dataset_upload_create,
)
from annotation.services.file_imports import AUDIOCAPS_F, REFERENCES, FileImportKind, file_import_kind_find
from annotation.tasks import import_dataset_upload
from corpus.models import Dataset, DatasetUpload
from corpus.services.import_uploads import MAX_AUDIO_BYTES, MAX_AUDIO_FILES, MEGABYTE
from corpus.services.importing import ImportDataError

CLIPS_PER_PAGE = 50
# An upload still waiting after this long says that no worker has taken it (is one running?).
WORKER_WAIT_NOTE_SECONDS = 60
# A running import that has reported no step for this long has lost its worker (a step takes seconds).
STALLED_NOTE_SECONDS = 300


@roles_required(ANNOTATOR, REVIEWER)
@require_safe
def dataset_detail(request, dataset_id: int):
    """Who: annotators, reviewers, admins (as the home page's dataset table). The dataset's counts and clips; for
    admins also its systems, campaigns, metric runs, dashboards and the import pages."""
    dataset = get_object_or_404(Dataset, pk=dataset_id)
    dataset_visible_check(request.user, dataset.pk)
    clips = Paginator(dataset_clips(dataset=dataset), CLIPS_PER_PAGE).get_page(request.GET.get("page"))
    context = {"dataset": dataset, "clips": clips, "is_admin": user_has_role(request.user, ADMIN)}
    context.update(dataset_page_data(dataset=dataset))
    return render(request, "annotation/dataset_detail.html", context)


@roles_required(ADMIN)
def dataset_new(request):
    """Who: admins. Upload audio files or zips (and optional reference captions) for a new dataset; the files are
    stored and a worker imports them, all or nothing, while the upload's page shows its progress."""
    form = DatasetFromAudioForm(request.POST or None, request.FILES or None)
    problems: list[str] = []
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            upload = dataset_upload_create(
                dataset_name=data["name"],
                description=data["description"],
                audio_uploads=data["audio"],
                captions_upload=data["captions"],
                uploaded_by=request.user,
            )
        except ImportDataError as error:
            problems = str(error).splitlines()
        else:
            transaction.on_commit(lambda: import_dataset_upload.delay(upload.pk))
            return redirect("annotation:dataset_upload", upload_id=upload.pk)
    context = {
        "form": form,
        "problems": problems,
        "max_files": MAX_AUDIO_FILES,
        "max_megabytes": MAX_AUDIO_BYTES // MEGABYTE,
        "uploads": dataset_uploads_recent(),
    }
    return render(request, "annotation/dataset_new.html", context, status=400 if problems or form.errors else 200)


def _waiting_long(upload: DatasetUpload) -> bool:
    waited = (timezone.now() - upload.created_at).total_seconds()
    return upload.status == DatasetUpload.Status.PENDING and waited > WORKER_WAIT_NOTE_SECONDS


def _stalled(upload: DatasetUpload) -> bool:
    """Running, but no step reported for a long while: the worker stopped (each step takes seconds)."""
    silent = (timezone.now() - upload.updated_at).total_seconds()
    return upload.status == DatasetUpload.Status.RUNNING and silent > STALLED_NOTE_SECONDS


def _upload_live(upload: DatasetUpload) -> tuple[str, bool]:
    version = live_version(
        upload.status,
        upload.audio_done,
        upload.audio_total,
        len(upload.errors),
        _waiting_long(upload),
        _stalled(upload),
    )
    return version, upload.status in (DatasetUpload.Status.PENDING, DatasetUpload.Status.RUNNING)


@roles_required(ADMIN)
@require_safe
def dataset_upload(request, upload_id: int):
    """Who: admins. One upload (a new dataset, audio for a dataset's clips, a data file): waiting, its progress,
    every problem, or what it created."""
    upload = get_object_or_404(DatasetUpload.objects.select_related("dataset", "uploaded_by"), pk=upload_id)
    version, busy = _upload_live(upload)
    summary = upload.summary or {}
    context = {
        "upload": upload,
        **_upload_heading(upload),
        "counts": list(summary.get("counts", {}).items()),
        "extra": list(summary.get("extra", {}).items()),
        "notes": summary.get("notes", []),
        "waiting_long": _waiting_long(upload),
        "stalled": _stalled(upload),
        "live": live_context(
            status_url=reverse("annotation:dataset_upload_status", args=[upload.pk]), version=version, busy=busy
        ),
    }
    return render(request, "annotation/dataset_upload.html", context)


def _upload_heading(upload: DatasetUpload) -> dict:
    """The upload page's title, and where to upload again after a refusal."""
    if upload.kind == DatasetUpload.NEW_DATASET:
        return {"heading": f"New dataset {upload.dataset_name}", "again_url": reverse("annotation:dataset_new")}
    if upload.kind == DatasetUpload.CLIP_AUDIO:
        again = reverse("annotation:dataset_audio", args=[upload.dataset_id]) if upload.dataset_id else ""
        return {"heading": f"Audio for the clips of {upload.dataset_name}", "again_url": again}
    kind = file_import_kind_find(upload.kind)
    title = kind.title if kind else f"Import of {upload.kind}"
    return {
        "heading": f"{title} into {upload.dataset_name}",
        "again_url": reverse(kind.page) if kind else "",
    }


@roles_required(ADMIN)
@require_safe
def dataset_upload_status(request, upload_id: int):
    """Who: admins. The upload page's live status (static/core/js/live.js)."""
    upload = get_object_or_404(DatasetUpload, pk=upload_id)
    version, busy = _upload_live(upload)
    return live_status_response(version=version, busy=busy)


def file_import_page(request, kind: FileImportKind):
    """The page of one data file import: the form, then the upload's page that follows the worker; what can be
    checked at once (name, size) is refused here (status 400)."""
    initial = {}
    dataset_id = request.GET.get("dataset", "")
    if dataset_id.isdigit():
        initial["dataset"] = Dataset.objects.filter(pk=int(dataset_id)).values_list("name", flat=True).first() or ""
    form = DataFileImportForm(
        request.POST or None,
        request.FILES or None,
        initial=initial,
        file_label=kind.file_label,
        accept=kind.accept,
        options=kind.options,
    )
    problems: list[str] = []
    if request.method == "POST" and form.is_valid():
        try:
            upload = data_file_upload_create(
                kind=kind.kind,
                dataset_name=form.cleaned_data["dataset"],
                upload=form.cleaned_data["file"],
                uploaded_by=request.user,
                options=form.chosen_options(),
            )
        except ImportDataError as error:
            problems = str(error).splitlines()
        else:
            transaction.on_commit(lambda: import_dataset_upload.delay(upload.pk))
            return redirect("annotation:dataset_upload", upload_id=upload.pk)
    context = {
        "form": form,
        "title": kind.title,
        "intro": kind.intro,
        "problems": problems,
        "dataset_names": Dataset.objects.order_by("name").values_list("name", flat=True),
    }
    return render(request, "annotation/import_file.html", context, status=400 if problems or form.errors else 200)


@roles_required(ADMIN)
def dataset_audio(request, dataset_id: int):
    """Who: admins. Upload audio files or zips for the clips of an existing dataset (e.g. one imported from a
    judgement file, whose clips have no audio); a worker matches them to clips by name and attaches them."""
    dataset = get_object_or_404(Dataset, pk=dataset_id)
    form = ClipAudioForm(request.POST or None, request.FILES or None)
    problems: list[str] = []
    if request.method == "POST" and form.is_valid():
        try:
            upload = clip_audio_upload_create(
                dataset=dataset, audio_uploads=form.cleaned_data["audio"], uploaded_by=request.user
            )
        except ImportDataError as error:
            problems = str(error).splitlines()
        else:
            transaction.on_commit(lambda: import_dataset_upload.delay(upload.pk))
            return redirect("annotation:dataset_upload", upload_id=upload.pk)
    context = {
        "form": form,
        "title": f"Audio for the clips of {dataset.name}",
        "intro": (
            "Audio files or zips of them, in any format ffmpeg decodes. A file is attached to the clip whose id or "
            "file name it carries (with or without extension; an AudioCaps file Y<id>.wav matches clip <id>); files "
            "that match no clip are listed and ignored; a clip that has audio gets the new file. Every matched file "
            "is decoded before anything is stored: one that does not decode is named and nothing is attached."
        ),
        "problems": problems,
        "dataset": dataset,
    }
    return render(request, "annotation/import_file.html", context, status=400 if problems or form.errors else 200)


@roles_required(ADMIN)
def import_references(request):
    """Who: admins. Upload a references CSV into a dataset (created if new); a worker imports it."""
    return file_import_page(request, REFERENCES)


@roles_required(ADMIN)
def import_audiocaps_f(request):
    """Who: admins. Upload AudioCaps-F annotations as gold annotations of a dataset (created if new), choosing what
    becomes of clips with duplicate events or conflicting attributes; a worker imports them."""
    return file_import_page(request, AUDIOCAPS_F)
