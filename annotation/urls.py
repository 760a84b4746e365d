from django.urls import path

from annotation import views, views_import, views_review, views_workspace

app_name = "annotation"
urlpatterns = [
    path("", views.home, name="home"),
    path("datasets/<id:dataset_id>/", views_import.dataset_detail, name="dataset"),
    path("datasets/new/", views_import.dataset_new, name="dataset_new"),
    path("datasets/<id:dataset_id>/audio/", views_import.dataset_audio, name="dataset_audio"),
    path("datasets/uploads/<id:upload_id>/", views_import.dataset_upload, name="dataset_upload"),
    path("datasets/uploads/<id:upload_id>/status/", views_import.dataset_upload_status, name="dataset_upload_status"),
    path("datasets/import/references/", views_import.import_references, name="import_references"),
    path("datasets/import/audiocaps-f/", views_import.import_audiocaps_f, name="import_audiocaps_f"),
    path("clips/<id:clip_id>/audio/", views.clip_audio, name="clip-audio"),
    path("clips/<id:clip_id>/spectrogram.png", views.clip_spectrogram, name="clip-spectrogram"),
    path("clips/<id:clip_id>/waveform.json", views.clip_waveform, name="clip-waveform"),
    path("annotate/", views_workspace.annotator_home, name="annotator_home"),
    path("annotate/campaigns/<id:campaign_id>/next/", views_workspace.campaign_next, name="campaign_next"),
    path("annotate/tasks/<id:task_id>/", views_workspace.task_page, name="task"),
    path("annotate/staff/campaigns/", views_workspace.campaign_list, name="staff_campaigns"),
    path("annotate/staff/campaigns/<id:campaign_id>/", views_workspace.campaign_detail, name="staff_campaign"),
    path(
        "annotate/staff/campaigns/<id:campaign_id>/toggle/",
        views_workspace.campaign_toggle,
        name="staff_campaign_toggle",
    ),
    path("review/", views_review.review_home, name="review_home"),
    path("review/status/", views_review.review_status, name="review_status"),
    path("review/campaigns/<id:campaign_id>/", views_review.review_campaign, name="review_campaign"),
    path(
        "review/campaigns/<id:campaign_id>/status/",
        views_review.review_campaign_status,
        name="review_campaign_status",
    ),
    path("review/campaigns/<id:campaign_id>/clips/<id:clip_id>/", views_review.review_clip, name="review_clip"),
]
