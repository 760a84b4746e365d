from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.templatetags.static import static
from django.urls import include, path, register_converter
from django.views.generic import RedirectView
from drf_spectacular.views import SpectacularSwaggerView

from common.web_input import IdConverter
from config.api_schema_view import RoleSchemaView
from config.authentication import ThrottledObtainAuthToken

# `<id:name>` in every urls.py: row ids of 1-18 digits (common/web_input.py). Registered before the apps' URLs load.
register_converter(IdConverter, "id")

urlpatterns = [
    path("", include("annotation.urls")),
    path("ratings/", include("ratings.urls")),
    # Crowd studies: the public link participants arrive by (ratings/urls_study.py).
    path("study/", include("ratings.urls_study")),
    path("metrics/", include("metrics_bridge.urls")),
    # Token sign-in goes through the same lockout backend as the login page (LOGIN_FAILURE_LIMIT).
    path("api/token/", ThrottledObtainAuthToken.as_view(), name="api-token"),
    path("api/", include("config.api_urls")),
    # The schema as one role receives it: ?role=rater documents the blinded answers raters get.
    path("api/schema/", RoleSchemaView.as_view(), name="api-schema"),
    # An HTML page: anonymous visitors go to the login page rather than getting a bare 403.
    path(
        "api/docs/",
        login_required(SpectacularSwaggerView.as_view(url_name="api-schema", template_name="core/api_docs.html")),
        name="api-docs",
    ),
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("accounts/", include("accounts.urls")),
    path("admin/", admin.site.urls),
    # Browsers ask for /favicon.ico on pages that name no icon (API JSON, the admin): the site's icon.
    path("favicon.ico", RedirectView.as_view(url=static("core/favicon.svg"), permanent=False)),
]
# No route serves MEDIA_ROOT: uploaded audio and workbooks are only reachable through views that check
# who asks (annotation.views.clip_audio, the workbook downloads), in development too. /healthz is
# answered by config.healthz.HealthCheckMiddleware.

# Error pages in the site's layout, with next steps; never debug output (config/errors.py).
handler400 = "config.errors.bad_request"
handler403 = "config.errors.permission_denied"
handler404 = "config.errors.page_not_found"
handler500 = "config.errors.server_error"
