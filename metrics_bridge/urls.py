from django.urls import path

app_name = "metrics_bridge"
urlpatterns: list = []
