from django.urls import path

from annotation import views

app_name = "annotation"
urlpatterns = [
    path("", views.home, name="home"),
    path("clips/<int:clip_id>/audio/", views.clip_audio, name="clip-audio"),
]
