"""The rater lock: corpus data whose authorship a rater must not see.

Rule (docs/studies.md, "The rater lock"): an account that is a rater in an *active* campaign on dataset D gets no
corpus endpoint or page that carries author kind, role, source label, system, pair split, gold
answers, clip external ids or metric scores of D's captions, whatever other roles it holds
(annotator, reviewer): lists leave D's rows out, and asking for D or one of its rows explicitly is
refused with 403. The lock ends when the campaign is closed. Admins are excepted: they run the
study (they chose its systems, splits and gold items, so blinding them hides nothing from them);
what an admin sees *as a rater* is blinded like anyone's, and the quality page marks admin raters'
judgements as not blind.

Layers point one way (annotation <- ratings <- metrics_bridge), so the corpus app cannot ask the
ratings app who rates what; ratings registers a provider here when it loads (ratings/apps.py).
"""

from collections.abc import Callable

from django.core.exceptions import PermissionDenied

from accounts.roles import ADMIN, user_roles

BLINDED_MESSAGE = (
    "You rate in an active study on this dataset, so who wrote its captions is hidden from you "
    "until the study is closed."
)
_providers: list[Callable] = []


def blinded_datasets_provider_register(provider: Callable) -> None:
    """`provider(user) -> set of dataset ids` the user must be blinded to; called once per request and user."""
    if provider not in _providers:
        _providers.append(provider)


def blinded_dataset_ids(user) -> frozenset[int]:
    """Datasets whose authorship `user` must not see (empty for admins and anonymous users)."""
    if not getattr(user, "is_authenticated", False) or ADMIN in user_roles(user):
        return frozenset()
    cached = getattr(user, "_blinded_dataset_ids", None)
    if cached is None:
        cached = frozenset(dataset_id for provider in _providers for dataset_id in provider(user))
        user._blinded_dataset_ids = cached
    return cached


def dataset_visible_check(user, dataset_id: int | None) -> None:
    """Raise PermissionDenied when `dataset_id` is blinded for `user`."""
    if dataset_id is not None and dataset_id in blinded_dataset_ids(user):
        raise PermissionDenied(BLINDED_MESSAGE)
