from django.utils.functional import SimpleLazyObject


def simulated_study(request) -> dict:
    """Whether this site holds the simulated study of `manage.py demo` (templates/base.html says so on every page).

    Lazy: the query runs only when a page shows the banner's condition (every page using the site's layout)."""

    def built() -> bool:
        from annotation.models import Dataset
        from annotation.services.demo import DEMO_DATASET, DEMO_DESCRIPTION

        return Dataset.objects.filter(name=DEMO_DATASET, description=DEMO_DESCRIPTION).exists()

    return {"simulated_study": SimpleLazyObject(built)}
