from django.urls import path

from metrics_bridge.views import agreement_pairs, annotation, benchmark, captioning, dashboards, runs, submissions

app_name = "metrics_bridge"
urlpatterns = [
    path("", runs.metrics_home, name="home"),
    path("status/", runs.home_status, name="home_status"),
    path("runs/", runs.run_start, name="run_start"),
    path("runs/<id:run_id>/", runs.run_detail, name="run_detail"),
    path("runs/<id:run_id>/progress/", runs.run_progress, name="run_progress"),
    path("runs/<id:run_id>/cancel/", runs.run_cancel, name="run_cancel"),
    path("datasets/<id:dataset_id>/agreement/", dashboards.dataset_agreement, name="dataset_agreement"),
    path("datasets/<id:dataset_id>/agreement/compute/", dashboards.agreement_compute, name="agreement_compute"),
    path("datasets/<id:dataset_id>/agreement/pairs/", agreement_pairs.agreement_pairs, name="agreement_pairs"),
    path("benchmark/", benchmark.benchmark_page, name="benchmark"),
    path("benchmark/refresh/", benchmark.benchmark_refresh, name="benchmark_refresh"),
    path("datasets/<id:dataset_id>/leaderboard/", dashboards.leaderboard, name="leaderboard"),
    path(
        "datasets/<id:dataset_id>/leaderboard/compute/",
        dashboards.leaderboard_compute,
        name="leaderboard_compute",
    ),
    path("campaigns/<id:campaign_id>/thumbs/", dashboards.thumbs_dashboard, name="thumbs_dashboard"),
    path("campaigns/<id:campaign_id>/thumbs/compute/", dashboards.thumbs_compute, name="thumbs_compute"),
    path("captions/<id:caption_id>/", dashboards.caption_page, name="caption"),
    path("captions/<id:caption_id>/scores/", dashboards.caption_page, name="caption_scores"),
    path("systems/submit/", submissions.system_submit, name="system_submit"),
    path(
        "systems/submissions/<id:submission_id>/",
        submissions.system_submission_detail,
        name="system_submission_detail",
    ),
    path("dashboards/<slug:kind>/<id:object_id>/refresh/", dashboards.dashboard_refresh, name="dashboard_refresh"),
    path("plots/<slug:kind>/<id:object_id>.svg", dashboards.plot, name="plot"),
    path("datasets/<id:dataset_id>/sensitivity/", runs.dataset_sensitivity, name="dataset_sensitivity"),
    path(
        "datasets/<id:dataset_id>/sensitivity/status/",
        runs.dataset_sensitivity_status,
        name="dataset_sensitivity_status",
    ),
    path("evaluate/", captioning.evaluate, name="evaluate"),
    path("evaluate/estimate/", captioning.evaluate_estimate, name="evaluate_estimate"),
    path("evaluate/jobs/<id:job_id>/", captioning.evaluate_job, name="evaluate_job"),
    path("evaluate/jobs/<id:job_id>/progress/", captioning.evaluate_job_progress, name="evaluate_job_progress"),
    path("evaluate/jobs/<id:job_id>/cancel/", captioning.evaluate_job_cancel, name="evaluate_job_cancel"),
    path("evaluate/jobs/<id:job_id>/resume/", captioning.evaluate_job_resume, name="evaluate_job_resume"),
    path("evaluate/jobs/<id:job_id>/campaign/", captioning.evaluate_job_campaign, name="evaluate_job_campaign"),
    path("annotation-agreement/", annotation.annotation_agreement, name="annotation_agreement"),
    path(
        "annotation-agreement/campaigns/<id:campaign_id>/clips/<id:clip_id>/",
        annotation.clip_matching,
        name="annotation_clip_matching",
    ),
]
