"""An index on (run, metric, value) of the scores: the run page reads a run's highest and lowest scores of one metric
in value order from it instead of sorting every score of the run."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("metrics_bridge", "0010_corpus_models_to_corpus_app"),
    ]

    operations = [
        migrations.AddIndex(
            model_name="metricscore",
            index=models.Index(fields=["run", "metric", "value"], name="score_run_metric_value"),
        ),
    ]
