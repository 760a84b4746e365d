from django.urls import path

app_name = "ratings"
urlpatterns: list = []
