"""One API root; each app registers its own viewsets."""
from rest_framework.routers import DefaultRouter

from annotation.api import register_routes as register_annotation_routes
from annotation.api_workspace import register_routes as register_workspace_routes
from metrics_bridge.api import register_routes as register_metrics_routes
from ratings.api import register_routes as register_ratings_routes

router = DefaultRouter()
register_annotation_routes(router)
register_workspace_routes(router)
register_ratings_routes(router)
register_metrics_routes(router)
urlpatterns = router.urls
