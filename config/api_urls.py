"""One API root; each app registers its own viewsets.

The root lists only the endpoints the signed-in account may use: a rater sees their four blinded
endpoints, not the names of the corpus ones.
"""

from rest_framework.routers import APIRootView, DefaultRouter

from annotation.api import register_routes as register_annotation_routes
from annotation.api_workspace import register_routes as register_workspace_routes
from common.web_input import ID_REGEX
from metrics_bridge.api import register_routes as register_metrics_routes
from ratings.api import register_routes as register_ratings_routes


class RoleAwareAPIRootView(APIRootView):
    viewsets: dict = {}

    def get(self, request, *args, **kwargs):
        response = super().get(request, *args, **kwargs)
        response.data = {name: url for name, url in response.data.items() if self._may_list(name, request)}
        return response

    def _may_list(self, name: str, request) -> bool:
        viewset = self.viewsets.get(name)
        if viewset is None:
            return True
        view = viewset()
        view.action, view.request, view.format_kwarg, view.kwargs, view.args = "list", request, None, {}, ()
        return all(permission.has_permission(request, view) for permission in view.get_permissions())


class RoleAwareRouter(DefaultRouter):
    def get_lookup_regex(self, viewset, lookup_prefix=""):
        """Row ids (the default `pk` lookup) are 1-18 digits (common/web_input.py): a word or a number beyond the
        database's range matches no route (a JSON 404) instead of reaching the ORM. A viewset that looks rows up
        otherwise (assignment items: raters use tokens) declares its own `lookup_value_regex`."""
        if hasattr(viewset, "lookup_value_regex") or getattr(viewset, "lookup_field", "pk") != "pk":
            return super().get_lookup_regex(viewset, lookup_prefix)
        lookup_url_kwarg = getattr(viewset, "lookup_url_kwarg", None) or "pk"
        return f"(?P<{lookup_prefix}{lookup_url_kwarg}>{ID_REGEX})"

    def get_api_root_view(self, api_urls=None):
        self.APIRootView = type(
            "RoleAwareAPIRoot",
            (RoleAwareAPIRootView,),
            {"viewsets": {prefix: viewset for prefix, viewset, _ in self.registry}},
        )
        return super().get_api_root_view(api_urls)


router = RoleAwareRouter()
register_annotation_routes(router)
register_workspace_routes(router)
register_ratings_routes(router)
register_metrics_routes(router)
urlpatterns = router.urls
