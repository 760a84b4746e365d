"""Role checks for API viewsets, stated per action where the viewset is defined."""

from rest_framework.permissions import BasePermission

from accounts.roles import ANNOTATOR, REVIEWER, HasRole, user_has_role


class ActionRolesMixin:
    """A viewset lists the roles each action admits in `action_roles`; "*" covers the other actions.

    Admins pass every role check (see accounts.roles.user_has_role). Which rows a role
    sees is the viewset's `get_queryset`; this mixin only decides who may call what.
    """

    action_roles: dict[str, tuple[str, ...]] = {}

    def get_permissions(self):
        roles = self.action_roles.get(getattr(self, "action", None) or "*", self.action_roles["*"])
        return [HasRole(*roles)()]


class RaterLockMixin:
    """Applies the rater lock (accounts/blinding.py) to a read-only corpus viewset.

    `blinded_dataset_lookup` is the queryset path to the row's dataset id (e.g. "clip__dataset_id");
    lists drop blinded datasets' rows, a `?dataset=` naming one and a blinded row itself get 403.
    """

    blinded_dataset_lookup = "dataset_id"

    def filter_queryset(self, queryset):
        from accounts.blinding import blinded_dataset_ids, dataset_visible_check

        queryset = super().filter_queryset(queryset)
        hidden = blinded_dataset_ids(self.request.user)
        if not hidden:
            return queryset
        dataset_name = self.request.query_params.get("dataset")
        if dataset_name:
            from annotation.models import Dataset

            dataset_visible_check(
                self.request.user, Dataset.objects.filter(name=dataset_name).values_list("pk", flat=True).first()
            )
        if getattr(self, "action", None) == "list":
            return queryset.exclude(**{f"{self.blinded_dataset_lookup}__in": hidden})
        return queryset

    def get_object(self):
        from accounts.blinding import dataset_visible_check

        obj = super().get_object()
        dataset_id = type(obj).objects.filter(pk=obj.pk).values_list(self.blinded_dataset_lookup, flat=True).first()
        dataset_visible_check(self.request.user, dataset_id)
        return obj


class SchemaReaders(BasePermission):
    """The OpenAPI schema and its docs page: for annotators, reviewers and admins, not for raters.

    The schema lists every field and enum of the corpus (author kinds, splits, gold answers); raters
    use the rating pages, and their few API endpoints are described in the README.
    """

    message = "The API documentation is for annotators, reviewers and admins."

    def has_permission(self, request, view) -> bool:
        return bool(request.user and request.user.is_authenticated and user_has_role(request.user, ANNOTATOR, REVIEWER))
