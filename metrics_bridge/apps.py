from django.apps import AppConfig


class MetricsBridgeConfig(AppConfig):
    name = "metrics_bridge"
    verbose_name = "Automatic metrics and agreement"
