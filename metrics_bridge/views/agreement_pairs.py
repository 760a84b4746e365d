"""The judged pairs behind one metric's agreement on a dataset (linked from the benchmark and agreement tables).

The rows are computed by a worker and stored (metrics_bridge/services/evaluation/agreement_pairs_store.py): the view
reads them, or records the request and answers with the computation's state; the page refreshes itself until they
are there (accounts/live.py)."""

from django.core.exceptions import BadRequest
from django.core.paginator import Page, Paginator
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_http_methods

from accounts.live import live_context, live_status_response, live_version
from accounts.roles import ADMIN, roles_required
from common.web_input import query_choice, query_page
from corpus.models import Dataset
from metrics_bridge.scoring import registry
from metrics_bridge.services.evaluation.agreement_pairs_store import (
    PAIRS_PER_PAGE,
    agreement_pairs_count,
    agreement_pairs_key,
    agreement_pairs_page,
    agreement_pairs_state,
)
from metrics_bridge.services.evaluation.dashboard_cache import computation_retry
from metrics_bridge.tasks.agreement import request_agreement_pairs
from metrics_bridge.tasks.dashboards import dashboard_workers_alive
from metrics_bridge.views.computation import computation_context
from ratings.models import CaptionPair


@roles_required(ADMIN)
@require_http_methods(["GET", "HEAD", "POST"])
def agreement_pairs(request, dataset_id: int):
    """Who: admins. The judged pairs behind one metric's agreement on a dataset: scores, answer, verdict.
    ?format=status: the page's live status; POST retry=1: send a computation given up again."""
    dataset = get_object_or_404(Dataset, pk=dataset_id)
    # Every parameter is checked first: a 400 names the one refused.
    metric = query_choice(request, "metric", registry.all_metric_names())
    if not metric:
        raise BadRequest("The metric parameter is required (one of: " + ", ".join(registry.all_metric_names()) + ").")
    split = query_choice(request, "split", CaptionPair.Split.values)
    verdict = query_choice(request, "verdict", ("right", "wrong"))
    page_number = query_page(request)
    if request.method == "POST" and request.POST.get("retry") == "1":
        computation_retry(key=agreement_pairs_key(dataset_id=dataset.pk, metric=metric))
    state = agreement_pairs_state(dataset=dataset, metric=metric)
    if state.needs_request and request_agreement_pairs(dataset=dataset, metric=metric):
        state = agreement_pairs_state(dataset=dataset, metric=metric)  # done already with eager Celery (tests)
    if request.method == "POST":
        return redirect(f"{request.path}?metric={metric}")
    computation = computation_context(state)
    given_up = bool(computation.get("given_up"))
    version = live_version(state.computed_at, state.fresh, computation.get("phase"), computation.get("attempts"))
    busy = not state.fresh and not given_up
    if request.GET.get("format") == "status":
        return live_status_response(version=version, busy=busy, fresh=state.fresh)
    context = {
        "dataset": dataset,
        "metric": metric,
        "computation": computation,
        "retry_url": f"{request.path}?metric={metric}",
        "no_worker": not state.fresh and not dashboard_workers_alive(),
        "live": live_context(status_url=f"{request.path}?metric={metric}&format=status", version=version, busy=busy),
    }
    data = state.payload
    if data is None:
        title = f"{metric} on {dataset.name}: the pairs behind the figure"
        return render(request, "metrics_bridge/dashboard_pending.html", {"title": title, **context})
    key = agreement_pairs_key(dataset_id=dataset.pk, metric=metric)
    count = agreement_pairs_count(header=data, split=split, verdict=verdict)
    paginator = Paginator(range(count), PAIRS_PER_PAGE)
    number = paginator.get_page(page_number).number  # an out-of-range page shows the last one
    rows = agreement_pairs_page(key=key, header=data, split=split, verdict=verdict, number=number)
    page = Page(rows, number, paginator)
    context.update(
        {
            "data": data,
            "page": page,
            "split": split,
            "verdict": verdict,
            "splits": data["splits"] if "splits" in data else sorted({row["split"] for row in data["pairs"]}),
            "digits": 2 if data["protocol"] == "brace" else 1,
            "stale": not state.fresh,
            "computed_at": state.computed_at,
        }
    )
    return render(request, "metrics_bridge/agreement_pairs.html", context)
