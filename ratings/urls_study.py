"""The crowd participant's pages: /study/<random slug>/... (the items are the rating pages, /ratings/items/)."""

from django.urls import path

from ratings import views_study, views_study_alive

app_name = "study"
urlpatterns = [
    path("<str:slug>/", views_study.study_entry, name="entry"),
    path("<str:slug>/consent/", views_study.study_consent, name="consent"),
    path("<str:slug>/questionnaire/", views_study.study_questionnaire, name="questionnaire"),
    path("<str:slug>/headphones/", views_study.study_headphones, name="headphones"),
    path("<str:slug>/instructions/", views_study.study_instructions, name="instructions"),
    path("<str:slug>/practice.wav", views_study.study_practice_audio, name="practice_audio"),
    path("<str:slug>/start/", views_study.study_start, name="start"),
    path("<str:slug>/items/", views_study.study_items, name="items"),
    path("<str:slug>/leave/", views_study.study_leave, name="leave"),
    path("<str:slug>/alive/", views_study_alive.study_alive, name="alive"),
    path("<str:slug>/end/", views_study.study_end, name="end"),
    path("<str:slug>/enter/<str:token>/", views_study.study_enter, name="enter"),
    path("<str:slug>/status/<str:token>/", views_study.study_status, name="status"),
]
