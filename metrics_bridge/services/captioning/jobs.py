"""Evaluate an audio-language model in one loop: caption every clip of a dataset that has audio through the
model's API, file the answers as a captioning system, and start the metric run that scores them.

- A job (CaptioningJob) records what is asked: dataset, provider, model, base URL, the NAME of the environment
  variable holding the key (the key itself is read when the job runs and never stored, logged or shown), the
  system's name, the prompt set, the concurrency and an optional clip limit. A key goes only to the server it
  is for: a base URL other than the provider's own API needs a variable named for it, and the providers' own
  variables (OPENAI_API_KEY, ...) never go elsewhere (checked when the job is made and again when it runs).
- Each clip gets its domain's prompt variants in turn (the dataset's `domain` setting). An answer is cached by
  (endpoint, prompt, audio sha256) in ModelAnswer, the endpoint being provider, base URL, model, generation
  parameters and audio format: a re-run asks only for what is missing, a changed prompt or another server with
  the same model name asks again. Answers are stored one by one as they arrive; a failed clip is named with its
  error, and what its answer was billed is kept.
- Ctrl-C (KeyboardInterrupt) while captioning ends the job as interrupted, resumable like a cancelled one.
- Only when every clip was tried are the answers filed as the system's captions, in one transaction: an
  interrupted or cancelled job leaves cached answers (a re-run files them without asking again) and never a
  system with half of its captions.
- `captioning_job_score` plans the metric run of the default metrics (LLM judges included when an endpoint is
  configured) over the system scores the dataset lacks; the caller sends it to the workers.

The provider code is plain Python in metrics_bridge/captioning/; this module only reads and writes rows.
"""

import hashlib
import json
import logging
import os
import re
import time
from collections.abc import Callable
from datetime import timedelta
from urllib.parse import urlparse

from django.conf import settings
from django.db import transaction
from django.db.models import Count, Q, Sum
from django.utils import timezone

from common.structured_log import log_event
from corpus.models import Clip, Dataset
from corpus.services.importing import ImportDataError
from corpus.services.system_captions import system_captions_file, system_name_validate
from metrics_bridge.captioning.pricing import Price, price_for, price_table_load, run_estimate
from metrics_bridge.captioning.prompts import (
    AFTER_AUDIOCAPBENCH,
    PromptSet,
    PromptSetError,
    prompt_set_from_dict,
    prompt_sha256,
)
from metrics_bridge.captioning.providers import (
    PROVIDERS,
    KeyScopeError,
    endpoint_identity,
    endpoint_sha256,
    key_variable_check,
    provider_for,
)
from metrics_bridge.captioning.runner import ClipOutcome, ClipRequest, RetryPolicy, caption_all
from metrics_bridge.models import CaptioningJob, CaptioningJobItem, MetricRun, ModelAnswer
from metrics_bridge.services.evaluation.dataset_runs import dataset_run_create

logger = logging.getLogger("captioneval.captioning")

MAX_CONCURRENCY = 32
#: seconds between two looks at the job row (cancel flag, heartbeat) while captioning
CHECK_SECONDS = 1.0
KEY_VARIABLE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,99}$")
Outcome = CaptioningJobItem.Outcome


class CaptioningSetupError(ValueError):
    """The job cannot be set up as asked; the message names the parameter."""


# --- Setting a job up -------------------------------------------------------------------------------------


def audio_clips(*, dataset: Dataset, limit: int | None = None) -> list[Clip]:
    """The dataset's clips that have audio, in a fixed order (by id: clips added later come last, so the prompt
    variant of a clip does not change when the dataset grows), the first `limit` of them."""
    clips = Clip.objects.filter(dataset=dataset).exclude(audio="").order_by("pk")
    return list(clips[:limit] if limit else clips)


def price_table() -> dict[str, Price]:
    return price_table_load(settings.CAPTIONING_PRICE_TABLE or None)


def captioning_estimate(*, dataset: Dataset, provider: str, model: str, limit: int | None = None) -> dict:
    """What a job would ask for: clips, seconds of audio and the cost estimate (clips x the price table)."""
    from metrics_bridge.captioning.providers import DASHSCOPE_MAX_SECONDS

    clips = audio_clips(dataset=dataset, limit=limit)
    seconds = [clip.duration_seconds or 0.0 for clip in clips]
    price = price_for(price_table(), provider=provider, model=model)
    max_seconds = DASHSCOPE_MAX_SECONDS if provider == "dashscope" else None
    return {
        "clips": len(clips),
        "audio_seconds": sum(min(s, max_seconds) if max_seconds else s for s in seconds),
        "trimmed_clips": sum(1 for s in seconds if max_seconds and s > max_seconds),
        "cost": run_estimate(price, seconds, max_seconds=max_seconds),
        "price": None if price is None else price.__dict__,
    }


def _checked_base_url(base_url: str) -> str:
    base_url = (base_url or "").strip()
    if not base_url:
        return ""
    parsed = urlparse(base_url)
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        raise CaptioningSetupError(f"--base-url {base_url!r}: must be an http:// or https:// URL with a host")
    if parsed.username or parsed.password:
        raise CaptioningSetupError("--base-url: must not carry credentials (give the key in an environment variable)")
    return base_url


def captioning_job_create(
    *,
    dataset: Dataset,
    provider: str,
    model: str,
    base_url: str = "",
    api_key_variable: str = "",
    system_name: str = "",
    prompt_set: PromptSet = AFTER_AUDIOCAPBENCH,
    concurrency: int = 4,
    limit: int | None = None,
    requested_by=None,
    status: str = CaptioningJob.Status.PENDING,
) -> CaptioningJob:
    """Check the request and record the job (nothing is asked yet). Raises CaptioningSetupError."""
    if provider not in PROVIDERS:
        raise CaptioningSetupError(f"--provider {provider!r}: use one of {', '.join(PROVIDERS)}")
    model = (model or "").strip()
    if not model or len(model) > 200:
        raise CaptioningSetupError("--model: give the model's name (at most 200 characters)")
    base_url = _checked_base_url(base_url)
    if provider == "openai-compatible" and not base_url:
        raise CaptioningSetupError("--base-url: an OpenAI-compatible provider needs its server's base URL")
    api_key_variable = (api_key_variable or "").strip()
    if api_key_variable and not KEY_VARIABLE.match(api_key_variable):
        raise CaptioningSetupError(f"--api-key-env {api_key_variable!r}: not an environment variable name")
    try:
        api_key_variable = key_variable_check(provider=provider, base_url=base_url, variable=api_key_variable)
    except KeyScopeError as error:
        raise CaptioningSetupError(str(error)) from None
    if not 1 <= concurrency <= MAX_CONCURRENCY:
        raise CaptioningSetupError(f"--concurrency {concurrency}: must be between 1 and {MAX_CONCURRENCY}")
    if limit is not None and limit < 1:
        raise CaptioningSetupError(f"--limit {limit}: must be at least 1")
    try:
        system_name = system_name_validate(name=system_name or f"{provider}/{model}")
        prompt_set.prompt_for(domain=dataset.domain, index=0)
    except (ImportDataError, PromptSetError) as error:
        raise CaptioningSetupError(str(error)) from None
    estimate = captioning_estimate(dataset=dataset, provider=provider, model=model, limit=limit)
    if not estimate["clips"]:
        raise CaptioningSetupError(f"dataset {dataset.name} has no clip with audio: import its audio first")
    return CaptioningJob.objects.create(
        dataset=dataset,
        provider=provider,
        model=model,
        base_url=base_url,
        api_key_variable=api_key_variable,
        system_name=system_name,
        prompt_set=prompt_set.name[:255],
        prompts=prompt_set.as_dict(),
        concurrency=concurrency,
        clip_limit=limit,
        clips_total=estimate["clips"],
        estimated_cost=estimate["cost"],
        requested_by=requested_by,
        status=status,
        heartbeat_at=timezone.now() if status == CaptioningJob.Status.RUNNING else None,
    )


# --- Running a job ----------------------------------------------------------------------------------------


def captioning_job_claim(*, job_id: int, stale_seconds: float | None = None) -> CaptioningJob | None:
    """Take a pending job, or a running one whose process stopped renewing its heartbeat; None if another
    process has it (or it is finished). A conditional update: two workers never caption the same job."""
    stale_seconds = stale_seconds if stale_seconds is not None else settings.CAPTIONING_JOB_STALE_SECONDS
    now = timezone.now()
    stale = Q(status=CaptioningJob.Status.RUNNING) & (
        Q(heartbeat_at__isnull=True) | Q(heartbeat_at__lt=now - timedelta(seconds=stale_seconds))
    )
    claimed = CaptioningJob.objects.filter(Q(pk=job_id) & (Q(status=CaptioningJob.Status.PENDING) | stale)).update(
        status=CaptioningJob.Status.RUNNING, heartbeat_at=now, error="", finished_at=None
    )
    return CaptioningJob.objects.get(pk=job_id) if claimed else None


def redact(text: str, secret: str) -> str:
    """`text` without the secret (error messages of libraries and servers may echo what was sent)."""
    return text.replace(secret, "[redacted]") if secret else text


def redact_json(value, secret: str):
    """JSON data (a raw response) without the secret, wherever a server echoed it."""
    if not secret:
        return value
    dumped = json.dumps(value, ensure_ascii=False)
    return json.loads(dumped.replace(json.dumps(secret, ensure_ascii=False)[1:-1], "[redacted]"))


def _audio_sha256(clip: Clip) -> str:
    if clip.sha256:
        return clip.sha256
    digest = hashlib.sha256()
    with clip.audio.open("rb") as handle:
        while chunk := handle.read(1024 * 1024):
            digest.update(chunk)
    return digest.hexdigest()


def _read_audio(clip: Clip) -> Callable[[], bytes]:
    def read() -> bytes:
        with clip.audio.open("rb") as handle:
            return handle.read()

    return read


def _finish(job: CaptioningJob, status: str, error: str = "") -> CaptioningJob:
    """End the job unless it was cancelled meanwhile (a cancel wins)."""
    CaptioningJob.objects.filter(pk=job.pk).exclude(status=CaptioningJob.Status.CANCELLED).update(
        status=status, error=error[:5000], finished_at=timezone.now()
    )
    job.refresh_from_db()
    log_event(
        logger,
        "captioning_job_finished",
        level=logging.WARNING if job.error else logging.INFO,
        job=job.pk,
        status=job.status,
        error=job.error[:300],
        **captioning_job_counts(job=job),
    )
    return job


def captioning_job_run(
    *,
    job: CaptioningJob,
    api_key: str | None = None,
    policy: RetryPolicy | None = None,
    timeout: float | None = None,
    on_progress: Callable[[dict], None] | None = None,
) -> CaptioningJob:
    """Caption the job's clips and file the answers as its system. The job must be claimed (RUNNING).

    `api_key`: by default read from the environment variable the job names, here and now. Every error stored
    on the job or its items has the key removed. A job whose variable may not go to its server (a row from
    before the check, or edited) fails without a request.
    """
    try:
        key_variable_check(provider=job.provider, base_url=job.base_url, variable=job.api_key_variable)
    except KeyScopeError as error:
        return _finish(job, CaptioningJob.Status.FAILED, f"not sent: {error}")
    api_key = api_key if api_key is not None else os.environ.get(job.api_key_variable, "")
    if not api_key:
        return _finish(
            job,
            CaptioningJob.Status.FAILED,
            f"the environment variable {job.api_key_variable} is not set (or empty) in the process that runs the "
            "job: set it to the API key (any value for a server without authentication)",
        )
    log_event(
        logger,
        "captioning_job_started",
        job=job.pk,
        dataset=job.dataset.name,
        provider=job.provider,
        model=job.model,
        clips=job.clips_total,
    )
    provider = provider_for(
        provider=job.provider,
        model=job.model,
        api_key=api_key,
        base_url=job.base_url or None,
        timeout=timeout or settings.CAPTIONING_REQUEST_TIMEOUT_SECONDS,
    )
    price = price_for(price_table(), provider=job.provider, model=job.model)
    prompts = prompt_set_from_dict(name=job.prompt_set, prompts=job.prompts)
    requests = _requests_after_cache(job, audio_clips(dataset=job.dataset, limit=job.clip_limit), prompts)

    def store(outcome: ClipOutcome) -> None:
        _item_store(job, outcome, api_key)
        if on_progress:
            on_progress(captioning_job_counts(job=job))

    last_check = [time.monotonic()]

    def should_stop() -> bool:
        """Cancelled on the page? Renews the heartbeat while at it (once a second, not on every clip)."""
        if time.monotonic() - last_check[0] < CHECK_SECONDS:
            return False
        last_check[0] = time.monotonic()
        CaptioningJob.objects.filter(pk=job.pk).update(heartbeat_at=timezone.now())
        return CaptioningJob.objects.filter(pk=job.pk, status=CaptioningJob.Status.CANCELLED).exists()

    try:
        if on_progress:
            on_progress(captioning_job_counts(job=job))
        reason = caption_all(
            provider,
            requests,
            concurrency=job.concurrency,
            policy=policy or RetryPolicy(),
            price=price,
            on_outcome=store,
            should_stop=should_stop,
        )
    except KeyboardInterrupt:  # Ctrl-C in generate_captions: not "Captioning" forever, and resumable
        _finish(
            job,
            CaptioningJob.Status.INTERRUPTED,
            "interrupted (Ctrl-C): the answers received so far are cached; run the same command again, or Resume "
            "on the job's page, to ask only for the missing clips",
        )
        raise
    if reason == "cancelled":
        return _finish(job, CaptioningJob.Status.CANCELLED)
    if reason:
        return _finish(job, CaptioningJob.Status.FAILED, f"stopped: {redact(reason, api_key)}")
    return captioning_job_file(job=job)


def _requests_after_cache(job: CaptioningJob, clips: list[Clip], prompts: PromptSet) -> list[ClipRequest]:
    """Record the clips the cache answers (as CACHED items) and return requests for the others."""
    planned = []
    for index, clip in enumerate(clips):
        prompt, variant = prompts.prompt_for(domain=job.dataset.domain, index=index)
        planned.append((clip, prompt, variant, prompt_sha256(prompt), _audio_sha256(clip)))
    cached = {
        (answer.prompt_sha256, answer.audio_sha256): answer
        for answer in ModelAnswer.objects.filter(
            endpoint_sha256=_job_endpoint(job)[1], audio_sha256__in={sha for *_, sha in planned}
        ).only("pk", "prompt_sha256", "audio_sha256")
    }
    earlier = {item.clip_id: item for item in job.items.all()}  # a resumed job keeps what it asked itself
    requests, items = [], []
    for clip, prompt, variant, prompt_key, audio_key in planned:
        answer = cached.get((prompt_key, audio_key))
        if answer is None:
            requests.append(
                ClipRequest(
                    key=(clip.pk, variant, audio_key),
                    name=clip.file_name or clip.external_id,
                    prompt=prompt,
                    load_audio=_read_audio(clip),
                )
            )
            continue
        previous = earlier.get(clip.pk)
        if previous is not None and previous.outcome == Outcome.REQUESTED and previous.answer_id == answer.pk:
            continue
        items.append(
            CaptioningJobItem(job=job, clip=clip, outcome=Outcome.CACHED, prompt_variant=variant, answer=answer)
        )
    CaptioningJobItem.objects.bulk_create(
        items,
        update_conflicts=True,
        unique_fields=["job", "clip"],
        update_fields=["outcome", "prompt_variant", "answer", "error", "raw_response", "updated_at"],
    )
    return requests


def _job_endpoint(job: CaptioningJob) -> tuple[dict, str]:
    """The job's endpoint identity and its sha256 (the answer cache's key besides prompt and audio)."""
    identity = endpoint_identity(provider=job.provider, model=job.model, base_url=job.base_url or None)
    return identity, endpoint_sha256(identity)


def _item_store(job: CaptioningJob, outcome: ClipOutcome, api_key: str) -> None:
    """Store one clip's answer (in the cache) and its item, in one transaction."""
    clip_id, variant, audio_key = outcome.request.key
    with transaction.atomic():
        answer = None
        if outcome.answer is not None:
            result = outcome.answer
            identity, endpoint_key = _job_endpoint(job)
            answer, _ = ModelAnswer.objects.get_or_create(
                endpoint_sha256=endpoint_key,
                prompt_sha256=prompt_sha256(outcome.request.prompt),
                audio_sha256=audio_key,
                defaults={
                    "provider": job.provider,
                    "model": job.model,
                    "base_url": identity["base_url"],
                    "parameters": {"generation": identity["parameters"], "audio": identity["audio"]},
                    "prompt": outcome.request.prompt,
                    "text": redact(result.caption, api_key),
                    "raw_text": redact(result.raw_text, api_key),
                    "raw_response": redact_json(result.raw_response, api_key),
                    "finish_reason": result.finish_reason[:50],
                    "latency_seconds": result.latency_seconds,
                    "prompt_tokens": result.prompt_tokens,
                    "completion_tokens": result.completion_tokens,
                    "audio_tokens": result.audio_tokens,
                    "reasoning_tokens": result.reasoning_tokens,
                    "audio_seconds": result.audio_seconds,
                    "cost": result.cost,
                    "note": result.note,
                },
            )
        item, _ = CaptioningJobItem.objects.select_for_update().get_or_create(
            job=job, clip_id=clip_id, defaults={"outcome": Outcome.FAILED}
        )
        item.outcome = Outcome.REQUESTED if answer else Outcome.FAILED
        item.answer = answer
        item.prompt_variant = variant
        item.requests += outcome.requests
        item.error = redact(outcome.error, api_key)[:5000]
        item.raw_response = redact_json(outcome.raw_response, api_key) if answer is None else {}
        if answer is None and outcome.cost is not None:  # a billed answer that is not a caption
            item.failed_cost = (item.failed_cost or 0.0) + outcome.cost
        item.save()


def captioning_job_file(*, job: CaptioningJob) -> CaptioningJob:
    """File the job's answers as its system's captions (one transaction) and end the job."""
    answered = job.items.filter(answer__isnull=False).select_related("answer")
    captions = {item.clip_id: (item.answer.text, item.answer.note) for item in answered}
    failed = job.items.filter(outcome=Outcome.FAILED).count()
    if not captions:
        return _finish(job, CaptioningJob.Status.FAILED, f"no clip was captioned ({failed} failed)")
    source = f"{job.provider}/{job.model} job {job.pk}"
    system, _ = system_captions_file(
        dataset=job.dataset, system_name=job.system_name, captions=captions, source_label=source
    )
    CaptioningJob.objects.filter(pk=job.pk).update(system=system)
    return _finish(job, CaptioningJob.Status.DONE_WITH_FAILURES if failed else CaptioningJob.Status.DONE)


def captioning_job_score(*, job: CaptioningJob, metric_names: list[str] | None = None, requested_by=None) -> MetricRun:
    """Plan the dataset's metric run (metrics_bridge/services/evaluation/dataset_runs.py: the new captions' scores
    and the system scores, everything the pages show) for what is missing: `metric_names`, else the CAPTIONING_METRICS
    setting, else every metric that can run here (LLM judges included when an endpoint is configured). Nothing
    is sent yet: the caller dispatches it or waits for it."""
    metric_names = metric_names or list(settings.CAPTIONING_METRICS) or None
    run = dataset_run_create(dataset=job.dataset, metric_names=metric_names, requested_by=requested_by)
    CaptioningJob.objects.filter(pk=job.pk).update(metric_run=run)
    job.metric_run = run
    return run


# --- Reading a job ----------------------------------------------------------------------------------------


def captioning_job_counts(*, job: CaptioningJob) -> dict:
    counts = job.items.aggregate(
        done=Count("pk"),
        requested=Count("pk", filter=Q(outcome=Outcome.REQUESTED)),
        cached=Count("pk", filter=Q(outcome=Outcome.CACHED)),
        failed=Count("pk", filter=Q(outcome=Outcome.FAILED)),
        requests=Sum("requests"),
    )
    counts["requests"] = counts["requests"] or 0
    counts["total"] = job.clips_total
    return counts


def captioning_job_cost(*, job: CaptioningJob) -> float | None:
    """What this job's requests cost: its answers, and the billed answers that were not captions (cut off,
    withheld, a list); cached answers cost nothing now. None when the model has no price."""
    costs = list(
        job.items.filter(outcome=Outcome.REQUESTED, answer__isnull=False).values_list("answer__cost", flat=True)
    )
    if any(cost is None for cost in costs):
        return None
    failed = job.items.filter(failed_cost__isnull=False).aggregate(total=Sum("failed_cost"))["total"]
    if not costs and failed is None and price_for(price_table(), provider=job.provider, model=job.model) is None:
        return None
    return round(sum(costs) + (failed or 0.0), 6)


def captioning_job_summary(*, job: CaptioningJob) -> dict:
    """The `generate_captions --format json` summary."""
    job.refresh_from_db()
    counts = captioning_job_counts(job=job)
    failed = [
        {"clip": item.clip.file_name or item.clip.external_id, "error": item.error}
        for item in job.items.filter(outcome=Outcome.FAILED).select_related("clip").order_by("clip_id")
    ]
    run = job.metric_run
    return {
        "system": job.system.name if job.system else job.system_name,
        "clips": job.clips_total,
        "requested": counts["requested"],
        "cached": counts["cached"],
        "failed": failed,
        "cost": captioning_job_cost(job=job),
        "estimated_cost": job.estimated_cost,
        "requests": counts["requests"],
        "job": job.pk,
        "status": job.status,
        "error": job.error,
        "metric_run": None if run is None else {"id": run.pk, "status": run.status, "metrics": run.metrics},
    }


def captioning_job_fail(*, job: CaptioningJob, error: Exception) -> CaptioningJob:
    """End a job that broke off with an unexpected error (the key, if the error quotes it, removed)."""
    message = redact(f"{type(error).__name__}: {error}", os.environ.get(job.api_key_variable, ""))
    return _finish(job, CaptioningJob.Status.FAILED, message)


def captioning_job_cancel(*, job: CaptioningJob) -> CaptioningJob:
    """Stop a job: the clips in flight finish (their answers are kept in the cache), no system is filed."""
    CaptioningJob.objects.filter(pk=job.pk, status__in=CaptioningJob.ACTIVE_STATUSES).update(
        status=CaptioningJob.Status.CANCELLED, finished_at=timezone.now()
    )
    job.refresh_from_db()
    return job


def captioning_job_resume(*, job: CaptioningJob) -> bool:
    """Queue a finished job again (cancelled, failed, or with failed clips): cached answers are reused, so only
    the missing clips are asked for. False when the job is still active."""
    return bool(
        CaptioningJob.objects.filter(pk=job.pk)
        .exclude(status__in=CaptioningJob.ACTIVE_STATUSES)
        .update(status=CaptioningJob.Status.PENDING, error="", finished_at=None, heartbeat_at=None)
    )
