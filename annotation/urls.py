from django.urls import path

from annotation import views

app_name = "annotation"
urlpatterns = [path("", views.home, name="home")]
