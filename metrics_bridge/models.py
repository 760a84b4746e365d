"""Stored metric runs and scores. Scoring code itself lives in metrics_bridge/scoring (no Django)."""

from django.conf import settings
from django.db import models

from corpus.models import Caption, CaptioningSystem, Clip, Dataset, TimeStampedModel


class MetricRun(TimeStampedModel):
    """A request to compute some metrics on a dataset, split into chunks that Celery tasks work off.

    It ends DONE when every chunk was scored, DONE_WITH_ERRORS when some chunks failed for good
    (`error` names them), FAILED when every chunk did, or CANCELLED.
    """

    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        RUNNING = "running", "Running"
        DONE = "done", "Done"
        DONE_WITH_ERRORS = "done_with_errors", "Done with errors"
        FAILED = "failed", "Failed"
        CANCELLED = "cancelled", "Cancelled"

    ACTIVE_STATUSES = (Status.PENDING, Status.RUNNING)

    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="metric_runs")
    metrics = models.JSONField(default=list)
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.PENDING)
    chunks_total = models.PositiveIntegerField(default=0)
    chunks_done = models.PositiveIntegerField(default=0)
    chunks_failed = models.PositiveIntegerField(default=0)
    error = models.TextField(blank=True)
    # Metrics that could not run here, with the reason: {name: reason}.
    unavailable = models.JSONField(default=dict, blank=True)
    requested_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"run {self.pk} on {self.dataset} ({self.status} {self.chunks_done}/{self.chunks_total})"

    @property
    def progress(self) -> float:
        return self.chunks_done / self.chunks_total if self.chunks_total else 1.0

    @property
    def is_finished(self) -> bool:
        return self.status not in self.ACTIVE_STATUSES


class MetricRunChunk(models.Model):
    """A unit of work: one metric over a batch of scoring requests (a corpus for CIDEr-D/DATE).

    Scored exactly once: a worker claims it with a conditional update (PENDING, or RUNNING with
    an expired lease), holds a lease it renews while scoring, and stores the scores only if it
    still holds the lease (`lease_token`). Each claim counts an attempt; past the cap it fails.
    """

    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        RUNNING = "running", "Running"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"
        CANCELLED = "cancelled", "Cancelled"

    run = models.ForeignKey(MetricRun, on_delete=models.CASCADE, related_name="chunks")
    index = models.PositiveIntegerField()
    metric = models.CharField(max_length=50)
    # [{"caption_id": int, "reference_set_key": str}, ...]; texts are loaded when the chunk runs.
    requests = models.JSONField(default=list)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    attempts = models.PositiveSmallIntegerField(default=0)
    error = models.TextField(blank=True)
    # Lease of the worker scoring it: who, until when, and the claim's token (a new one per claim).
    claimed_by = models.CharField(max_length=200, blank=True)
    lease_token = models.CharField(max_length=32, blank=True)
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    # Last time a task message was sent for it (a sweep re-sends messages a broker lost).
    dispatched_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["run", "index"]
        constraints = [models.UniqueConstraint(fields=["run", "index"], name="chunk_unique_index_per_run")]
        indexes = [models.Index(fields=["status", "lease_expires_at"], name="chunk_status_lease")]

    def __str__(self) -> str:
        return f"run {self.run_id} chunk {self.index} {self.metric} ({self.status})"


class WorkerHeartbeat(models.Model):
    """A Celery worker's sign of life, written every METRICS_WORKER_HEARTBEAT_SECONDS while it runs.

    `broker` names the broker it listens to (no credentials), so a web process only counts
    the workers that would receive its tasks.
    """

    name = models.CharField(max_length=200, unique=True)
    pid = models.PositiveIntegerField()
    broker = models.CharField(max_length=300)
    started_at = models.DateTimeField()
    last_seen = models.DateTimeField(db_index=True)

    def __str__(self) -> str:
        return f"{self.name} ({self.broker}, seen {self.last_seen:%H:%M:%S})"


class ReferenceSet(models.Model):
    """An ordered list of reference texts, plus the scoring context that shaped it.

    `key` hashes texts + context: under the FENSE protocol the same references are
    scored in different corpora (CIDEr-D document frequencies), so the context is part
    of what a score means.
    """

    key = models.CharField(max_length=64, unique=True)
    texts = models.JSONField()
    context = models.CharField(max_length=100, blank=True)

    def __str__(self) -> str:
        return f"{self.key[:10]} ({len(self.texts)} refs, {self.context})"


class MetricScore(models.Model):
    metric = models.CharField(max_length=50)
    # Names the implementation, model and library versions and the settings behind the value (can be long).
    version = models.CharField(max_length=500)
    caption = models.ForeignKey(Caption, on_delete=models.CASCADE, related_name="metric_scores")
    reference_set = models.ForeignKey(ReferenceSet, on_delete=models.PROTECT, related_name="scores")
    # Null when the metric does not apply (an X-ACE factor absent from both graphs); aggregations skip nulls.
    value = models.FloatField(null=True, blank=True)
    # Explanations, e.g. X-ACE matched / missed / hallucinated nodes per factor.
    details = models.JSONField(default=dict, blank=True)
    run = models.ForeignKey(MetricRun, on_delete=models.SET_NULL, null=True, blank=True, related_name="scores")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["metric", "version", "caption", "reference_set"],
                name="score_unique_metric_version_caption_refs",
            )
        ]
        indexes = [
            models.Index(fields=["metric", "version"]),
            # The run page lists a run's highest and lowest scores of one metric: read in value order from this
            # index, a handful of rows, instead of sorting every score of the run (tens of thousands on BRACE).
            models.Index(fields=["run", "metric", "value"], name="score_run_metric_value"),
        ]

    def __str__(self) -> str:
        shown = "n/a" if self.value is None else f"{self.value:.4f}"
        return f"{self.metric} {self.caption_id}: {shown}"


class LLMResponse(models.Model):
    """Cache of chat-completion responses by (model, prompt hash), with token counts."""

    model = models.CharField(max_length=200)
    prompt_hash = models.CharField(max_length=64)
    response_text = models.TextField()
    prompt_tokens = models.PositiveIntegerField(default=0)
    completion_tokens = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["model", "prompt_hash"], name="llm_response_unique_prompt")]

    def __str__(self) -> str:
        return f"{self.model} {self.prompt_hash[:10]}"


class SensitivityReport(TimeStampedModel):
    """How strongly each metric reacts to factor perturbations of a dataset's reference captions (X-ACE Table 4).

    `result` holds the table the plain-Python analysis returns (metrics_bridge.sensitivity.analysis):
    per perturbation the captions it applied to, examples, and per metric -log10 p of Kruskal-Wallis.
    """

    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        RUNNING = "running", "Running"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"

    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="sensitivity_reports")
    seed = models.IntegerField(default=0)
    # Metric names asked for; empty: every available metric.
    requested_metrics = models.JSONField(default=list, blank=True)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    result = models.JSONField(default=dict, blank=True)
    error = models.TextField(blank=True)
    requested_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"sensitivity {self.pk} on {self.dataset} ({self.status})"


class SystemScore(models.Model):
    """A metric's value for one captioning system over its current captions of a dataset.

    `fingerprint` hashes exactly what was scored (each distinct caption with its clip's references, and
    the gold annotations when the scorer uses them), so a changed submission or reference list simply has
    no score at its new fingerprint: a stale value is never shown for it.
    """

    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="system_scores")
    system = models.ForeignKey(CaptioningSystem, on_delete=models.CASCADE, related_name="system_scores")
    metric = models.CharField(max_length=50)
    version = models.CharField(max_length=500)
    fingerprint = models.CharField(max_length=64)
    # None when no caption could be scored (or every per-caption value was not applicable).
    value = models.FloatField(null=True, blank=True)
    # How the value was aggregated, the number of captions, X-ACE factor and attribute breakdowns.
    details = models.JSONField(default=dict, blank=True)
    run = models.ForeignKey(MetricRun, on_delete=models.SET_NULL, null=True, blank=True, related_name="system_scores")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["dataset", "system", "metric", "version", "fingerprint"], name="system_score_unique_inputs"
            )
        ]
        indexes = [models.Index(fields=["dataset", "metric", "version"])]

    def __str__(self) -> str:
        return f"{self.metric} {self.system_id} on {self.dataset_id}: {self.value}"


class DashboardCache(models.Model):
    """A computed dashboard table or plot, valid while the data it was computed from has this fingerprint."""

    key = models.CharField(max_length=200, unique=True)
    fingerprint = models.CharField(max_length=64)
    payload = models.JSONField(default=dict, blank=True)
    content = models.TextField(blank=True)  # e.g. an SVG plot
    computed_at = models.DateTimeField(auto_now=True)
    # The computation asked of a worker (services/evaluation/dashboard_cache.py): for which data, when it was sent,
    # when a worker began it, how many times it was sent for that data, and the last failure. A page shows it and
    # sends a lost one again or reports a failed one instead of waiting forever.
    requested_fingerprint = models.CharField(max_length=64, blank=True)
    requested_at = models.DateTimeField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    attempts = models.PositiveSmallIntegerField(default=0)
    error = models.TextField(blank=True)

    def __str__(self) -> str:
        return f"{self.key} ({self.fingerprint[:10]})"


class PhraseVector(models.Model):
    """A phrase's sentence vector, kept so pages and commands that compare annotations (inter-annotator
    agreement) embed each phrase once, not on every request. `model` names the encoder and its versions."""

    model = models.CharField(max_length=200)
    text_sha256 = models.CharField(max_length=64)
    text = models.TextField()
    vector = models.BinaryField()  # float32, unit length
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["model", "text_sha256"], name="phrase_vector_unique_text")]

    def __str__(self) -> str:
        return f"{self.text[:40]} ({self.model})"


class ModelAnswer(models.Model):
    """An audio-language model's caption of one audio file under one prompt: the cache a re-run reads.

    Keyed by (endpoint, prompt, audio sha256), the endpoint being the provider, the server's base URL, the model,
    every generation parameter and what is sent of the audio (metrics_bridge/captioning/providers.py,
    `endpoint_identity`): a re-run asks only for what is missing, and a changed prompt, parameter or server asks
    again. Keeps what the API returned (raw response, token counts, latency, cost) and a note when the clip was
    trimmed to the model's limit. Failed requests leave no row. Rows from before endpoint keys carry a key no
    endpoint has: they stay with the jobs that filed them and are never reused.
    """

    provider = models.CharField(max_length=20)
    model = models.CharField(max_length=200)
    base_url = models.CharField(max_length=500, blank=True)  # where the answer came from ('' before endpoint keys)
    parameters = models.JSONField(default=dict, blank=True)  # the endpoint's generation parameters and audio sent
    endpoint_sha256 = models.CharField(max_length=64)
    prompt_sha256 = models.CharField(max_length=64)
    audio_sha256 = models.CharField(max_length=64)
    prompt = models.TextField()
    text = models.TextField()  # the caption: markdown stripped, one line
    raw_text = models.TextField(blank=True)  # the model's text as it came
    raw_response = models.JSONField(default=dict, blank=True)
    finish_reason = models.CharField(max_length=50, blank=True)
    latency_seconds = models.FloatField(default=0)
    prompt_tokens = models.PositiveIntegerField(default=0)
    completion_tokens = models.PositiveIntegerField(default=0)  # every billed output token, thinking included
    audio_tokens = models.PositiveIntegerField(null=True, blank=True)
    reasoning_tokens = models.PositiveIntegerField(null=True, blank=True)  # of completion_tokens; None: not reported
    audio_seconds = models.FloatField(default=0)  # sent (after trimming)
    cost = models.FloatField(null=True, blank=True)  # US dollars; None: no price for the model
    note = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["endpoint_sha256", "prompt_sha256", "audio_sha256"], name="model_answer_unique_request"
            )
        ]

    def __str__(self) -> str:
        return f"{self.provider}/{self.model}: {self.text[:60]}"


class CaptioningJob(TimeStampedModel):
    """Captioning a dataset's clips through a model's API, filing the answers as a captioning system, and the
    metric run that scores them. Started by `generate_captions` or the "Evaluate a model" page.

    The API key is never stored: only the name of the environment variable it is read from.
    """

    class Status(models.TextChoices):
        PENDING = "pending", "Waiting for a worker"
        RUNNING = "running", "Captioning"
        DONE = "done", "Done"
        DONE_WITH_FAILURES = "done_with_failures", "Done, some clips failed"
        FAILED = "failed", "Failed"
        CANCELLED = "cancelled", "Cancelled"
        # the process running it was stopped (Ctrl-C): the answers so far are cached, a resume asks for the rest
        INTERRUPTED = "interrupted", "Interrupted (resumable)"

    ACTIVE_STATUSES = (Status.PENDING, Status.RUNNING)

    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="captioning_jobs")
    provider = models.CharField(max_length=20)
    model = models.CharField(max_length=200)
    base_url = models.CharField(max_length=500, blank=True)
    api_key_variable = models.CharField(max_length=100)
    system_name = models.CharField(max_length=100)
    system = models.ForeignKey(
        CaptioningSystem, on_delete=models.SET_NULL, null=True, blank=True, related_name="captioning_jobs"
    )
    prompt_set = models.CharField(max_length=255, default="audiocapbench")
    prompts = models.JSONField(default=dict)  # {domain: [variants]}: what was asked
    concurrency = models.PositiveSmallIntegerField(default=4)
    clip_limit = models.PositiveIntegerField(null=True, blank=True)
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.PENDING)
    clips_total = models.PositiveIntegerField(default=0)
    estimated_cost = models.FloatField(null=True, blank=True)
    error = models.TextField(blank=True)
    metric_run = models.ForeignKey(MetricRun, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    requested_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True)
    # Renewed while a process works on the job: a job whose process died is taken over once it is stale.
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.CheckConstraint(condition=models.Q(concurrency__gte=1), name="captioning_job_concurrency")
        ]

    def __str__(self) -> str:
        return f"captioning job {self.pk}: {self.provider}/{self.model} on {self.dataset} ({self.status})"

    @property
    def is_finished(self) -> bool:
        return self.status not in self.ACTIVE_STATUSES


class CaptioningJobItem(models.Model):
    """What became of one clip in a job: answered (asked now or read from the cache) or failed, and why."""

    class Outcome(models.TextChoices):
        REQUESTED = "requested", "Answered by the API"
        CACHED = "cached", "Answer from the cache"
        FAILED = "failed", "Failed"

    job = models.ForeignKey(CaptioningJob, on_delete=models.CASCADE, related_name="items")
    clip = models.ForeignKey(Clip, on_delete=models.CASCADE, related_name="+")
    outcome = models.CharField(max_length=10, choices=Outcome.choices)
    prompt_variant = models.PositiveSmallIntegerField(default=0)
    answer = models.ForeignKey(ModelAnswer, on_delete=models.SET_NULL, null=True, blank=True, related_name="items")
    requests = models.PositiveSmallIntegerField(default=0)  # HTTP requests this job sent for the clip
    error = models.TextField(blank=True)
    raw_response = models.JSONField(default=dict, blank=True)  # of a failed request, if the server said anything
    # what failed answers were billed (cut off, withheld, not a caption): answers' own costs are on ModelAnswer
    failed_cost = models.FloatField(null=True, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["job", "clip"]
        constraints = [models.UniqueConstraint(fields=["job", "clip"], name="captioning_item_once_per_clip")]

    def __str__(self) -> str:
        return f"job {self.job_id} clip {self.clip_id}: {self.outcome}"
