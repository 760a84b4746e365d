from django.urls import path

from metrics_bridge import views

app_name = "metrics_bridge"
urlpatterns = [
    path("", views.metrics_home, name="home"),
    path("runs/", views.run_start, name="run_start"),
    path("runs/<int:run_id>/", views.run_detail, name="run_detail"),
    path("runs/<int:run_id>/progress/", views.run_progress, name="run_progress"),
    path("runs/<int:run_id>/cancel/", views.run_cancel, name="run_cancel"),
    path("datasets/<int:dataset_id>/agreement/", views.dataset_agreement, name="dataset_agreement"),
    path("datasets/<int:dataset_id>/sensitivity/", views.dataset_sensitivity, name="dataset_sensitivity"),
    path("captions/<int:caption_id>/scores/", views.caption_scores, name="caption_scores"),
]
