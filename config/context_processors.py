"""What every page of the site's layout needs to know about the page itself, across apps (config sits above them)."""

from django.utils.functional import SimpleLazyObject

# How a page's URL names the dataset it is about: (URL namespace, URL argument) -> the path from a Dataset to the
# object the argument names. A namespace of None matches every app. The first argument the URL has wins, so the
# more specific objects come first (a clip page inside a campaign is about the clip's dataset either way).
PAGE_DATASET_LOOKUPS = (
    (None, "dataset_id", "pk"),
    (None, "clip_id", "clips"),
    ("annotation", "task_id", "annotation_campaigns__tasks"),
    ("annotation", "campaign_id", "annotation_campaigns"),
    ("ratings", "token", "campaigns__assignments__items__token"),
    ("ratings", "study_id", "campaigns__study"),
    ("ratings", "campaign_id", "campaigns"),
    ("study", "slug", "campaigns__study__slug"),
    ("metrics_bridge", "run_id", "metric_runs"),
    ("metrics_bridge", "caption_id", "clips__captions"),
    ("metrics_bridge", "submission_id", "system_submissions"),
    ("metrics_bridge", "job_id", "captioning_jobs"),
    ("metrics_bridge", "campaign_id", "campaigns"),
)


def page_dataset_filter(resolver_match) -> dict | None:
    """A Dataset filter selecting the dataset the page is about, or None for pages about no one dataset
    (home pages, lists, sign-in, the admin)."""
    if resolver_match is None:
        return None
    namespace = resolver_match.namespaces[0] if resolver_match.namespaces else None
    for lookup_namespace, argument, path in PAGE_DATASET_LOOKUPS:
        if lookup_namespace in (None, namespace) and argument in resolver_match.kwargs:
            return {path: resolver_match.kwargs[argument]}
    return None


def simulated_study(request) -> dict:
    """Whether this page is one of the simulated study's own (templates/base.html then says it is simulated).

    Only pages whose object belongs to the demo dataset, or whose campaign is on it, say so: a site holding the
    demo also holds real datasets, and their pages and the real raters' pages must not be labelled simulated.
    Lazy: the query runs only when the layout shows the banner's condition."""

    def built() -> bool:
        from corpus.models import Dataset
        from demo.dataset import DEMO_DATASET, DEMO_DESCRIPTION

        found = page_dataset_filter(getattr(request, "resolver_match", None))
        if found is None:
            return False
        demo = Dataset.objects.filter(name=DEMO_DATASET, description=DEMO_DESCRIPTION)
        return demo.filter(**found).exists()

    return {"simulated_study": SimpleLazyObject(built)}
