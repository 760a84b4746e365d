from django.urls import path

from metrics_bridge import views, views_annotation, views_benchmark, views_dashboards, views_submissions

app_name = "metrics_bridge"
urlpatterns = [
    path("", views.metrics_home, name="home"),
    path("runs/", views.run_start, name="run_start"),
    path("runs/<int:run_id>/", views.run_detail, name="run_detail"),
    path("runs/<int:run_id>/progress/", views.run_progress, name="run_progress"),
    path("runs/<int:run_id>/cancel/", views.run_cancel, name="run_cancel"),
    path("datasets/<int:dataset_id>/agreement/", views_dashboards.dataset_agreement, name="dataset_agreement"),
    path("datasets/<int:dataset_id>/agreement/compute/", views_dashboards.agreement_compute, name="agreement_compute"),
    path("datasets/<int:dataset_id>/agreement/pairs/", views_benchmark.agreement_pairs, name="agreement_pairs"),
    path("benchmark/", views_benchmark.benchmark_page, name="benchmark"),
    path("benchmark/refresh/", views_benchmark.benchmark_refresh, name="benchmark_refresh"),
    path("datasets/<int:dataset_id>/leaderboard/", views_dashboards.leaderboard, name="leaderboard"),
    path(
        "datasets/<int:dataset_id>/leaderboard/compute/",
        views_dashboards.leaderboard_compute,
        name="leaderboard_compute",
    ),
    path("campaigns/<int:campaign_id>/thumbs/", views_dashboards.thumbs_dashboard, name="thumbs_dashboard"),
    path("campaigns/<int:campaign_id>/thumbs/compute/", views_dashboards.thumbs_compute, name="thumbs_compute"),
    path("captions/<int:caption_id>/", views_dashboards.caption_page, name="caption"),
    path("captions/<int:caption_id>/scores/", views_dashboards.caption_page, name="caption_scores"),
    path("systems/submit/", views_submissions.system_submit, name="system_submit"),
    path(
        "systems/submissions/<int:submission_id>/",
        views_submissions.system_submission_detail,
        name="system_submission_detail",
    ),
    path(
        "dashboards/<slug:kind>/<int:object_id>/refresh/", views_dashboards.dashboard_refresh, name="dashboard_refresh"
    ),
    path("plots/<slug:kind>/<int:object_id>.svg", views_dashboards.plot, name="plot"),
    path("datasets/<int:dataset_id>/sensitivity/", views.dataset_sensitivity, name="dataset_sensitivity"),
    path("annotation-agreement/", views_annotation.annotation_agreement, name="annotation_agreement"),
    path(
        "annotation-agreement/campaigns/<int:campaign_id>/clips/<int:clip_id>/",
        views_annotation.clip_matching,
        name="annotation_clip_matching",
    ),
]
