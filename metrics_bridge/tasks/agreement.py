"""Celery side of the agreement pages: inter-annotator agreement and a metric's agreement pairs, computed by workers
(they load Sentence-BERT or walk a whole pair protocol: never in a page's request)."""

from celery import shared_task
from django.db import transaction

from metrics_bridge.services.evaluation.dashboard_cache import COMPUTE_TIME_LIMIT_SECONDS
from metrics_bridge.tasks.runs import runs_execute_eagerly


@shared_task(
    name="metrics_bridge.tasks.compute_annotation_agreement",
    acks_late=True,
    max_retries=0,
    time_limit=COMPUTE_TIME_LIMIT_SECONDS,
    soft_time_limit=COMPUTE_TIME_LIMIT_SECONDS - 30,
)
def compute_annotation_agreement(dataset_id: int, campaign_id: int | None) -> str:
    """Compute the stored inter-annotator agreement (it loads Sentence-BERT: never in a page's request)."""
    from metrics_bridge.services.evaluation.annotation_agreement import annotation_agreement_compute

    return annotation_agreement_compute(dataset_id=dataset_id, campaign_id=campaign_id)


def request_annotation_agreement(*, dataset, campaign) -> bool:
    """Have a worker compute the dataset's (or campaign's) inter-annotator agreement when it is stale."""
    from metrics_bridge.services.evaluation.annotation_agreement import annotation_agreement_request

    arguments = [dataset.pk, campaign.pk if campaign else None]

    def enqueue() -> None:
        if runs_execute_eagerly():
            compute_annotation_agreement.apply_async(args=arguments)
        else:
            transaction.on_commit(lambda: compute_annotation_agreement.apply_async(args=arguments))

    return annotation_agreement_request(dataset=dataset, campaign=campaign, enqueue=enqueue)


@shared_task(
    name="metrics_bridge.tasks.compute_agreement_pairs",
    acks_late=True,
    max_retries=0,
    time_limit=COMPUTE_TIME_LIMIT_SECONDS,
    soft_time_limit=COMPUTE_TIME_LIMIT_SECONDS - 30,
)
def compute_agreement_pairs(dataset_id: int, metric: str) -> str:
    """Compute the stored pairs behind one metric's agreement on a dataset (its whole pair protocol)."""
    from metrics_bridge.services.evaluation.agreement_pairs_store import agreement_pairs_compute

    return agreement_pairs_compute(dataset_id=dataset_id, metric=metric)


def request_agreement_pairs(*, dataset, metric: str) -> bool:
    """Have a worker compute the pairs page's rows when they are missing or stale; True when sent now."""
    from metrics_bridge.services.evaluation.agreement_pairs_store import agreement_pairs_request

    def enqueue() -> None:
        if runs_execute_eagerly():
            compute_agreement_pairs.apply_async(args=[dataset.pk, metric])
        else:
            transaction.on_commit(lambda: compute_agreement_pairs.apply_async(args=[dataset.pk, metric]))

    return agreement_pairs_request(dataset=dataset, metric=metric, enqueue=enqueue)
