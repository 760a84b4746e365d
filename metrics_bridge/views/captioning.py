"""The "Evaluate a model" page (admins): caption a dataset through a model's API, with a cost estimate before
starting, a progress bar, cancel and resume, and then one click to a pairwise campaign against the best system.

Keys never pass through these pages: the form names an environment variable of the server (only those the
CAPTIONING_KEY_VARIABLES setting lists), and the worker reads it when the job runs.
"""

import os

from django import forms
from django.conf import settings
from django.contrib import messages
from django.http import JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST, require_safe

from accounts.roles import ADMIN, roles_required
from corpus.models import Dataset
from metrics_bridge.captioning.prompts import AFTER_AUDIOCAPBENCH, PromptSetError, prompt_set_label, prompt_set_parse
from metrics_bridge.captioning.providers import DEFAULT_KEY_VARIABLES, PROVIDERS, KeyScopeError, key_variable_check
from metrics_bridge.models import CaptioningJob, CaptioningJobItem
from metrics_bridge.services.captioning.confirmation import confirmation_campaign_create
from metrics_bridge.services.captioning.jobs import (
    MAX_CONCURRENCY,
    CaptioningSetupError,
    captioning_estimate,
    captioning_job_cancel,
    captioning_job_cost,
    captioning_job_counts,
    captioning_job_create,
    captioning_job_resume,
)
from metrics_bridge.services.runs.workers import live_workers
from metrics_bridge.tasks.captioning import enqueue_captioning_job
from metrics_bridge.tasks.runs import current_broker, runs_execute_eagerly
from ratings.services.campaigns import CampaignSetupError

RECENT_JOBS = 20
SHOWN_ANSWERS = 200
MAX_PROMPT_FILE_BYTES = 64 * 1024


class EvaluateModelForm(forms.Form):
    dataset = forms.ModelChoiceField(queryset=Dataset.objects.order_by("name"))
    provider = forms.ChoiceField(choices=[(name, name) for name in PROVIDERS])
    model = forms.CharField(max_length=200, help_text="e.g. gpt-4o-audio-preview, gemini-2.5-flash, qwen-audio-turbo")
    base_url = forms.URLField(
        required=False,
        assume_scheme="https",
        max_length=500,
        label="Base URL",
        help_text="Leave empty for the provider's own API.",
    )
    api_key_variable = forms.ChoiceField(
        label="API key (environment variable)",
        help_text="Read by the worker when the job runs; the key is never stored or shown. A provider's own "
        "variable (OPENAI_API_KEY, ...) is sent only to that provider's API: a server at another base URL needs "
        "a variable of its own (listed in CAPTIONING_KEY_VARIABLES).",
    )
    system = forms.CharField(max_length=100, required=False, help_text="Default: provider/model.")
    prompt_file = forms.FileField(
        required=False,
        label="Prompt file",
        help_text="Empty: two prompts per domain, used alternately, written after AudioCapBench's description of "
        "its categories (not AudioCapBench's own prompt text, which it does not publish). If you hold the "
        'benchmark\'s own prompts, or want others, give them as a file: JSON {"sound": [...], "music": [...], '
        '"speech": [...]} or one prompt per line.',
    )
    concurrency = forms.IntegerField(min_value=1, max_value=MAX_CONCURRENCY, initial=4)
    limit = forms.IntegerField(min_value=1, required=False, help_text="Caption only the first N clips with audio.")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["api_key_variable"].choices = [
            (name, f"{name} ({'set' if os.environ.get(name) else 'not set here'})")
            for name in settings.CAPTIONING_KEY_VARIABLES
        ]

    def clean(self):
        data = super().clean()
        if {"provider", "api_key_variable"} <= data.keys():
            try:
                key_variable_check(
                    provider=data["provider"], base_url=data.get("base_url"), variable=data["api_key_variable"]
                )
            except KeyScopeError as error:
                self.add_error("api_key_variable", str(error).removeprefix("--api-key-env "))
        return data

    def clean_prompt_file(self):
        uploaded = self.cleaned_data.get("prompt_file")
        if not uploaded:
            return AFTER_AUDIOCAPBENCH
        if uploaded.size > MAX_PROMPT_FILE_BYTES:
            raise forms.ValidationError(f"{uploaded.name} is larger than {MAX_PROMPT_FILE_BYTES // 1024} KB")
        try:
            return prompt_set_parse(content=uploaded.read(), source_name=uploaded.name)
        except PromptSetError as error:
            raise forms.ValidationError(str(error)) from None


def _initial_form_data(request) -> dict:
    provider = request.GET.get("provider") if request.GET.get("provider") in PROVIDERS else "openai"
    variable = DEFAULT_KEY_VARIABLES.get(provider)  # an OpenAI-compatible server has no default variable
    initial = {"provider": provider, "concurrency": 4}
    if variable in settings.CAPTIONING_KEY_VARIABLES:
        initial["api_key_variable"] = variable
    if request.GET.get("dataset", "").isdigit():
        initial["dataset"] = request.GET["dataset"]
    return initial


@roles_required(ADMIN)
def evaluate(request):
    """Who: admins. The form (with the cost estimate before starting) and the recent captioning jobs."""
    form = EvaluateModelForm(request.POST or None, request.FILES or None, initial=_initial_form_data(request))
    estimate = None
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        estimate = captioning_estimate(
            dataset=data["dataset"], provider=data["provider"], model=data["model"], limit=data["limit"]
        )
        if request.POST.get("action") == "start":
            try:
                job = captioning_job_create(
                    dataset=data["dataset"],
                    provider=data["provider"],
                    model=data["model"],
                    base_url=data["base_url"],
                    api_key_variable=data["api_key_variable"],
                    system_name=data["system"],
                    prompt_set=data["prompt_file"],
                    concurrency=data["concurrency"],
                    limit=data["limit"],
                    requested_by=request.user,
                )
            except CaptioningSetupError as error:
                form.add_error(None, str(error))
            else:
                enqueue_captioning_job(job.pk)
                return redirect("metrics_bridge:evaluate_job", job_id=job.pk)
    jobs = CaptioningJob.objects.select_related("dataset", "system")[:RECENT_JOBS]
    context = {"form": form, "estimate": estimate, "jobs": jobs, **_worker_state()}
    return render(request, "metrics_bridge/evaluate.html", context, status=400 if form.errors else 200)


@roles_required(ADMIN)
@require_safe
def evaluate_estimate(request):
    """Who: admins. The cost estimate of the form's current choices (the page updates it as they change)."""
    dataset_id, provider, limit = (request.GET.get(key, "").strip() for key in ("dataset", "provider", "limit"))
    dataset = Dataset.objects.filter(pk=int(dataset_id)).first() if dataset_id.isdigit() else None
    if dataset is None or provider not in PROVIDERS or (limit and not limit.isdigit()):
        return JsonResponse({"error": "choose a dataset and a provider (and a whole number as the limit)"}, status=400)
    estimate = captioning_estimate(
        dataset=dataset, provider=provider, model=request.GET.get("model", "").strip(), limit=int(limit or 0) or None
    )
    return JsonResponse(estimate)


def _worker_state() -> dict:
    return {"workers": live_workers(broker=current_broker()), "eager": runs_execute_eagerly()}


@roles_required(ADMIN)
@require_safe
def evaluate_job(request, job_id: int):
    """Who: admins. One job: progress, failed clips with their errors, the answers, the scores and what next."""
    job = get_object_or_404(CaptioningJob.objects.select_related("dataset", "system", "metric_run"), pk=job_id)
    items = job.items.select_related("clip", "answer").order_by("clip_id")
    context = {
        "job": job,
        "counts": captioning_job_counts(job=job),
        "cost": captioning_job_cost(job=job),
        "failed": items.filter(outcome=CaptioningJobItem.Outcome.FAILED),
        "answers": items.filter(answer__isnull=False)[:SHOWN_ANSWERS],
        "can_resume": job.is_finished and job.status != CaptioningJob.Status.DONE,
        "prompt_variants": len(job.prompts.get(job.dataset.domain, [])),
        "prompt_set_label": prompt_set_label(job.prompt_set),
        **_worker_state(),
    }
    return render(request, "metrics_bridge/evaluate_job.html", context)


@roles_required(ADMIN)
@require_safe
def evaluate_job_progress(request, job_id: int):
    job = get_object_or_404(CaptioningJob, pk=job_id)
    return JsonResponse(
        {
            "status": job.status,
            "status_label": job.get_status_display(),
            "is_finished": job.is_finished,
            "error": job.error,
            "workers": len(live_workers(broker=current_broker())),
            **captioning_job_counts(job=job),
        }
    )


@roles_required(ADMIN)
@require_POST
def evaluate_job_cancel(request, job_id: int):
    job = captioning_job_cancel(job=get_object_or_404(CaptioningJob, pk=job_id))
    messages.info(request, "Cancelled: the answers received so far stay in the cache; Resume asks for the rest.")
    return redirect("metrics_bridge:evaluate_job", job_id=job.pk)


@roles_required(ADMIN)
@require_POST
def evaluate_job_resume(request, job_id: int):
    job = get_object_or_404(CaptioningJob, pk=job_id)
    if captioning_job_resume(job=job):
        enqueue_captioning_job(job.pk)
        messages.info(request, "Queued again: cached answers are reused, only the missing clips are asked for.")
    return redirect("metrics_bridge:evaluate_job", job_id=job.pk)


@roles_required(ADMIN)
@require_POST
def evaluate_job_campaign(request, job_id: int):
    """Who: admins. A pairwise campaign (HM and MM pairs) of the job's system against the dataset's best."""
    job = get_object_or_404(CaptioningJob.objects.select_related("dataset", "system"), pk=job_id)
    if job.system is None:
        messages.error(request, "The job filed no captions yet: nothing to compare.")
        return redirect("metrics_bridge:evaluate_job", job_id=job.pk)
    try:
        campaign, best, basis = confirmation_campaign_create(dataset=job.dataset, system=job.system)
    except CampaignSetupError as error:
        messages.error(request, str(error))
        return redirect("metrics_bridge:evaluate_job", job_id=job.pk)
    messages.success(
        request,
        f"Campaign {campaign.name}: {campaign.pairs.count()} pairs of {job.system.name} against {best.name} "
        f"({basis}). Add raters below.",
    )
    return redirect("ratings:campaign_detail", campaign_id=campaign.pk)
