from django.urls import path

from metrics_bridge import views, views_annotation

app_name = "metrics_bridge"
urlpatterns = [
    path("", views.metrics_home, name="home"),
    path("runs/", views.run_start, name="run_start"),
    path("runs/<int:run_id>/", views.run_detail, name="run_detail"),
    path("runs/<int:run_id>/progress/", views.run_progress, name="run_progress"),
    path("runs/<int:run_id>/cancel/", views.run_cancel, name="run_cancel"),
    path("datasets/<int:dataset_id>/agreement/", views.dataset_agreement, name="dataset_agreement"),
    path("captions/<int:caption_id>/scores/", views.caption_scores, name="caption_scores"),
    path("annotation-agreement/", views_annotation.annotation_agreement, name="annotation_agreement"),
    path(
        "annotation-agreement/campaigns/<int:campaign_id>/clips/<int:clip_id>/",
        views_annotation.clip_matching,
        name="annotation_clip_matching",
    ),
]
