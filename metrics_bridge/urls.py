from django.urls import path

from metrics_bridge import (
    views,
    views_agreement_pairs,
    views_annotation,
    views_benchmark,
    views_captioning,
    views_dashboards,
    views_submissions,
)

app_name = "metrics_bridge"
urlpatterns = [
    path("", views.metrics_home, name="home"),
    path("status/", views.home_status, name="home_status"),
    path("runs/", views.run_start, name="run_start"),
    path("runs/<id:run_id>/", views.run_detail, name="run_detail"),
    path("runs/<id:run_id>/progress/", views.run_progress, name="run_progress"),
    path("runs/<id:run_id>/cancel/", views.run_cancel, name="run_cancel"),
    path("datasets/<id:dataset_id>/agreement/", views_dashboards.dataset_agreement, name="dataset_agreement"),
    path("datasets/<id:dataset_id>/agreement/compute/", views_dashboards.agreement_compute, name="agreement_compute"),
    path(
        "datasets/<id:dataset_id>/agreement/pairs/", views_agreement_pairs.agreement_pairs, name="agreement_pairs"
    ),
    path("benchmark/", views_benchmark.benchmark_page, name="benchmark"),
    path("benchmark/refresh/", views_benchmark.benchmark_refresh, name="benchmark_refresh"),
    path("datasets/<id:dataset_id>/leaderboard/", views_dashboards.leaderboard, name="leaderboard"),
    path(
        "datasets/<id:dataset_id>/leaderboard/compute/",
        views_dashboards.leaderboard_compute,
        name="leaderboard_compute",
    ),
    path("campaigns/<id:campaign_id>/thumbs/", views_dashboards.thumbs_dashboard, name="thumbs_dashboard"),
    path("campaigns/<id:campaign_id>/thumbs/compute/", views_dashboards.thumbs_compute, name="thumbs_compute"),
    path("captions/<id:caption_id>/", views_dashboards.caption_page, name="caption"),
    path("captions/<id:caption_id>/scores/", views_dashboards.caption_page, name="caption_scores"),
    path("systems/submit/", views_submissions.system_submit, name="system_submit"),
    path(
        "systems/submissions/<id:submission_id>/",
        views_submissions.system_submission_detail,
        name="system_submission_detail",
    ),
    path(
        "dashboards/<slug:kind>/<id:object_id>/refresh/", views_dashboards.dashboard_refresh, name="dashboard_refresh"
    ),
    path("plots/<slug:kind>/<id:object_id>.svg", views_dashboards.plot, name="plot"),
    path("datasets/<id:dataset_id>/sensitivity/", views.dataset_sensitivity, name="dataset_sensitivity"),
    path(
        "datasets/<id:dataset_id>/sensitivity/status/",
        views.dataset_sensitivity_status,
        name="dataset_sensitivity_status",
    ),
    path("evaluate/", views_captioning.evaluate, name="evaluate"),
    path("evaluate/estimate/", views_captioning.evaluate_estimate, name="evaluate_estimate"),
    path("evaluate/jobs/<id:job_id>/", views_captioning.evaluate_job, name="evaluate_job"),
    path("evaluate/jobs/<id:job_id>/progress/", views_captioning.evaluate_job_progress, name="evaluate_job_progress"),
    path("evaluate/jobs/<id:job_id>/cancel/", views_captioning.evaluate_job_cancel, name="evaluate_job_cancel"),
    path("evaluate/jobs/<id:job_id>/resume/", views_captioning.evaluate_job_resume, name="evaluate_job_resume"),
    path("evaluate/jobs/<id:job_id>/campaign/", views_captioning.evaluate_job_campaign, name="evaluate_job_campaign"),
    path("annotation-agreement/", views_annotation.annotation_agreement, name="annotation_agreement"),
    path(
        "annotation-agreement/campaigns/<id:campaign_id>/clips/<id:clip_id>/",
        views_annotation.clip_matching,
        name="annotation_clip_matching",
    ),
]
