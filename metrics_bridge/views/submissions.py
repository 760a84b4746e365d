"""Admins submit a captioning system's captions for a dataset (DCASE CSV or JSON); every upload is kept and a worker
imports it (a 50 MB file takes longer than a web request should), while the submission's page follows it."""

from django import forms
from django.db import transaction
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_safe

from accounts.live import live_context, live_status_response, live_version
from accounts.roles import ADMIN, roles_required
from annotation.tasks import import_system_submission
from corpus.models import Dataset, SystemSubmission
from corpus.services.system_captions import system_submission_create

RECENT_SUBMISSIONS = 20
MAX_SUBMISSION_BYTES = 50 * 1024 * 1024


class SystemSubmissionForm(forms.Form):
    dataset = forms.ModelChoiceField(queryset=Dataset.objects.order_by("name"))
    system = forms.CharField(
        max_length=100, help_text="A new name, or an existing system's name to replace its captions."
    )
    file = forms.FileField(label="Captions (.csv with file_name,caption_predicted, or .json {clip: caption})")

    def clean_file(self):
        uploaded = self.cleaned_data["file"]
        if uploaded.size > MAX_SUBMISSION_BYTES:
            raise forms.ValidationError(f"{uploaded.name} is larger than {MAX_SUBMISSION_BYTES // (1024 * 1024)} MB")
        return uploaded

    def clean_system(self):
        name = self.cleaned_data["system"].strip()
        if not name:
            raise forms.ValidationError("The system needs a name.")
        return name


@roles_required(ADMIN)
def system_submit(request):
    """Who: admins. Upload a system's captions; the file is kept and a worker imports it, all or nothing."""
    initial = {"dataset": request.GET.get("dataset")} if request.GET.get("dataset", "").isdigit() else None
    form = SystemSubmissionForm(request.POST or None, request.FILES or None, initial=initial)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        submission = system_submission_create(
            uploaded_file=data["file"], dataset=data["dataset"], system_name=data["system"], uploaded_by=request.user
        )
        transaction.on_commit(lambda: import_system_submission.delay(submission.pk))
        return redirect("metrics_bridge:system_submission_detail", submission_id=submission.pk)
    submissions = SystemSubmission.objects.select_related("dataset", "uploaded_by")[:RECENT_SUBMISSIONS]
    return render(request, "metrics_bridge/system_submit.html", {"form": form, "submissions": submissions})


@roles_required(ADMIN)
@require_safe
def system_submission_detail(request, submission_id: int):
    """Who: admins. One submission: waiting for the worker, imported (what changed) or failed (every problem with its
    row). ?format=status is the page's live status (static/core/js/live.js)."""
    submission = get_object_or_404(SystemSubmission.objects.select_related("dataset", "uploaded_by"), pk=submission_id)
    version = live_version(submission.status, len(submission.errors))
    busy = submission.status == SystemSubmission.Status.PENDING
    if request.GET.get("format") == "status":
        return live_status_response(version=version, busy=busy)
    counts = submission.summary.get("counts", {}) if submission.summary else {}
    context = {
        "submission": submission,
        "counts": counts,
        "live": live_context(status_url=f"{request.path}?format=status", version=version, busy=busy),
    }
    return render(request, "metrics_bridge/system_submission_detail.html", context)
