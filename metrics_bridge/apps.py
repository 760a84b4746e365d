from django.apps import AppConfig


class MetricsBridgeConfig(AppConfig):
    name = "metrics_bridge"
    verbose_name = "Automatic metrics and agreement"

    def ready(self) -> None:
        # The annotation app flags gold events naming one sound with the review's matching rule, which needs
        # this layer's phrase encoder; it cannot import this layer, so the finder is handed to it here.
        from annotation.services.gold_duplicates import duplicate_finder_register
        from metrics_bridge.annotation_checks import gold_duplicate_pairs

        duplicate_finder_register(gold_duplicate_pairs)
