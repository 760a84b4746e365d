from django.urls import path

from ratings import (
    views,
    views_headphone,
    views_import,
    views_platforms,
    views_staff,
    views_study_staff,
    views_workbooks,
)

app_name = "ratings"
urlpatterns: list = []

# --- Rater pages (items by their random token, never a database id) --------------------------------------
urlpatterns += [
    path("", views.rater_home, name="home"),
    path("campaigns/<id:campaign_id>/next/", views.campaign_next, name="campaign_next"),
    path("items/<str:token>/", views.item_page, name="item"),
    path("items/<str:token>/audio/", views.item_audio, name="item_audio"),
    path("items/<str:token>/listened/", views.item_listened, name="item_listened"),
    path("items/<str:token>/draft/", views.item_draft, name="item_draft"),
    path("items/<str:token>/change/", views.item_change, name="item_change"),
    path("headphones/", views_headphone.headphone_check_default, name="headphone_check_default"),
    path("headphones/<str:kind>/", views_headphone.headphone_check, name="headphone_check"),
    path(
        "headphones/<str:kind>/calibration.wav",
        views_headphone.headphone_calibration_audio,
        name="headphone_calibration_audio",
    ),
    path(
        "headphones/attempts/<id:check_id>/trials/<id:trial_number>.wav",
        views_headphone.headphone_trial_audio,
        name="headphone_trial_audio",
    ),
]

# --- Campaign administration (admins) ---------------------------------------
urlpatterns += [
    path("staff/campaigns/", views_staff.campaign_list, name="campaign_list"),
    path("staff/campaigns/new/", views_staff.campaign_create, name="campaign_create"),
    path("staff/campaigns/<id:campaign_id>/", views_staff.campaign_detail, name="campaign_detail"),
    path("staff/campaigns/<id:campaign_id>/quality/", views_staff.campaign_quality, name="campaign_quality"),
    path(
        "staff/campaigns/<id:campaign_id>/raters/<id:rater_id>/exclusion/",
        views_staff.campaign_rater_exclusion,
        name="campaign_rater_exclusion",
    ),
    path("staff/raters/", views_staff.rater_list, name="rater_list"),
    path("staff/import/judgements/", views_import.import_judgements, name="import_judgements"),
    path("staff/raters/<id:rater_id>/headphone-reset/", views_staff.headphone_reset, name="headphone_reset"),
]

# --- Crowd studies (admins; the participants' pages are under /study/, ratings/urls_study.py) ------------
urlpatterns += [
    path("staff/studies/", views_study_staff.study_list, name="study_list"),
    path("staff/campaigns/<id:campaign_id>/publish/", views_study_staff.study_publish_page, name="study_publish"),
    path("staff/studies/<id:study_id>/", views_study_staff.study_detail, name="study_detail"),
    path("staff/studies/<id:study_id>/settings/", views_study_staff.study_settings_page, name="study_settings"),
    path("staff/studies/<id:study_id>/live/", views_study_staff.study_live, name="study_live"),
    path(
        "staff/studies/<id:study_id>/participants/<id:participant_id>/",
        views_study_staff.study_participant,
        name="study_participant",
    ),
    path("staff/studies/<id:study_id>/pay.csv", views_study_staff.study_pay_export, name="study_pay_export"),
    path("staff/studies/<id:study_id>/export/", views_study_staff.study_benchmark_export, name="study_export"),
    path("staff/studies/<id:study_id>/platform/", views_platforms.study_platform, name="study_platform"),
]

# --- Offline THumBS workbooks ----------------------------------------------
urlpatterns += [
    path("staff/workbooks/upload/", views_workbooks.workbook_upload, name="workbook_upload"),
    path("staff/workbooks/uploads/status/", views_workbooks.workbook_uploads_status, name="workbook_uploads_status"),
    path(
        "staff/workbooks/uploads/<id:upload_id>/",
        views_workbooks.workbook_upload_detail,
        name="workbook_upload_detail",
    ),
    path(
        "staff/workbooks/uploads/<id:upload_id>/file/",
        views_workbooks.workbook_upload_file,
        name="workbook_upload_file",
    ),
    path(
        "staff/campaigns/<id:campaign_id>/raters/<id:rater_id>/workbook/",
        views_workbooks.campaign_workbook_download,
        name="campaign_workbook_download",
    ),
    path("workbook-audio/<str:token>/", views_workbooks.workbook_audio, name="workbook_audio"),
]
