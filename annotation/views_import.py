"""A dataset's page, and the pages that bring data in: a new dataset from audio, references, AudioCaps-F annotations.

A new dataset from audio is imported by a worker (services/dataset_uploads.py) and its page follows the
progress. Data files are imported inside the request, bounded by MAX_DATA_FILE_BYTES (the largest allowed
file takes seconds). Each calls one importer service, which validates everything before writing in one
transaction; its named errors are shown as they are. Judgement files (FENSE, BRACE) have their page in
ratings, which owns that importer; it uses `file_import_page` below.
"""

from collections.abc import Callable
from dataclasses import dataclass

from django.core.paginator import Paginator
from django.db import transaction
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_safe

from accounts.blinding import dataset_visible_check
from accounts.live import live_context, live_status_response, live_version
from accounts.roles import ADMIN, ANNOTATOR, REVIEWER, roles_required, user_has_role
from annotation.forms_import import DataFileImportForm, DatasetFromAudioForm
from annotation.models import Dataset, DatasetUpload
from annotation.selectors_datasets import dataset_clips, dataset_page_data, dataset_uploads_recent
from annotation.services.audiocaps_f import audiocaps_f_import
from annotation.services.dataset_uploads import dataset_upload_create
from annotation.services.import_uploads import (
    MAX_AUDIO_BYTES,
    MAX_AUDIO_FILES,
    MEGABYTE,
    json_content_load,
    uploaded_content_read,
)
from annotation.services.importing import ImportDataError, ImportSummary
from annotation.services.references_import import references_import
from annotation.tasks import import_dataset_upload

CLIPS_PER_PAGE = 50
# An upload still waiting after this long says that no worker has taken it (is one running?).
WORKER_WAIT_NOTE_SECONDS = 60
# A running import that has reported no step for this long has lost its worker (a step takes seconds).
STALLED_NOTE_SECONDS = 300


@dataclass(frozen=True)
class FileImport:
    """One import page: what it says, what file it takes, and the importer it calls."""

    title: str
    intro: str
    file_label: str
    accept: str
    # (content, source_name, dataset_name) -> summary; raises ImportDataError
    importer: Callable[[bytes, str, str], ImportSummary]


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
    """Who: admins. One upload of a new dataset: waiting, its progress, every problem, or what it created."""
    upload = get_object_or_404(DatasetUpload.objects.select_related("dataset", "uploaded_by"), pk=upload_id)
    version, busy = _upload_live(upload)
    summary = upload.summary or {}
    context = {
        "upload": upload,
        "counts": list(summary.get("counts", {}).items()),
        "extra": list(summary.get("extra", {}).items()),
        "waiting_long": _waiting_long(upload),
        "stalled": _stalled(upload),
        "live": live_context(
            status_url=reverse("annotation:dataset_upload_status", args=[upload.pk]), version=version, busy=busy
        ),
    }
    return render(request, "annotation/dataset_upload.html", context)


@roles_required(ADMIN)
@require_safe
def dataset_upload_status(request, upload_id: int):
    """Who: admins. The upload page's live status (static/core/js/live.js)."""
    upload = get_object_or_404(DatasetUpload, pk=upload_id)
    version, busy = _upload_live(upload)
    return live_status_response(version=version, busy=busy)


def file_import_page(request, spec: FileImport):
    """The page of one file import: the form, the importer's errors (status 400), or what it changed."""
    initial = {}
    dataset_id = request.GET.get("dataset", "")
    if dataset_id.isdigit():
        initial["dataset"] = Dataset.objects.filter(pk=int(dataset_id)).values_list("name", flat=True).first() or ""
    form = DataFileImportForm(
        request.POST or None, request.FILES or None, initial=initial, file_label=spec.file_label, accept=spec.accept
    )
    problems: list[str] = []
    if request.method == "POST" and form.is_valid():
        upload, dataset_name = form.cleaned_data["file"], form.cleaned_data["dataset"]
        try:
            content = uploaded_content_read(upload=upload)
            summary = spec.importer(content, upload.name, dataset_name)
        except ImportDataError as error:
            problems = str(error).splitlines()
        else:
            dataset = Dataset.objects.get(name=dataset_name)
            return render(request, "annotation/import_done.html", _done_context(dataset, summary, spec.title))
    context = {
        "form": form,
        "title": spec.title,
        "intro": spec.intro,
        "problems": problems,
        "dataset_names": Dataset.objects.order_by("name").values_list("name", flat=True),
    }
    return render(request, "annotation/import_file.html", context, status=400 if problems or form.errors else 200)


def _done_context(dataset: Dataset, summary: ImportSummary, title: str) -> dict:
    return {
        "title": title,
        "dataset": dataset,
        "dataset_url": reverse("annotation:dataset", args=[dataset.pk]),
        "summary": summary,
        "counts": [(kind, counts) for kind, counts in summary.counts.items()],
    }


REFERENCES = FileImport(
    title="Import reference captions",
    intro=(
        "A CSV in the Clotho layout (file_name,caption_1,…,caption_5; one row per clip) or the AudioCaps layout "
        "(audiocap_id,youtube_id,start_time,caption; one row per caption). Clips are matched by id or file name, "
        "or created. A clip's reference list becomes the file's; references that judged pairs or ratings use are "
        "never removed. Every problem is listed with its row and nothing is written unless the whole file is good."
    ),
    file_label="Reference captions (.csv)",
    accept=".csv,text/csv",
    importer=lambda content, source_name, dataset_name: references_import(
        content=content, source_name=source_name, dataset_name=dataset_name
    ),
)

AUDIOCAPS_F = FileImport(
    title="Import AudioCaps-F annotations",
    intro=(
        'AudioCaps-F expert annotations, JSON keyed by file ({"Y<id>.wav": {event: {"source": [...], "attr": '
        "[...]}}}), imported as the clips' GOLD annotations of the account audiocaps-f-experts (a new gold "
        "annotation supersedes the clip's previous import; gold that a reviewer published is never replaced: such a "
        "file is refused, naming the clip). Every problem names its key; nothing is written unless the whole file "
        "is good, and importing the same file again changes nothing."
    ),
    file_label="Annotations (.json)",
    accept=".json,application/json",
    importer=lambda content, source_name, dataset_name: audiocaps_f_import(
        data=json_content_load(content=content, source_name=source_name),
        dataset_name=dataset_name,
        source_name=source_name,
    ),
)


@roles_required(ADMIN)
def import_references(request):
    """Who: admins. Upload a references CSV into a dataset (created if new)."""
    return file_import_page(request, REFERENCES)


@roles_required(ADMIN)
def import_audiocaps_f(request):
    """Who: admins. Upload AudioCaps-F annotations as gold annotations of a dataset (created if new)."""
    return file_import_page(request, AUDIOCAPS_F)
