"""The answer cache is keyed by endpoint (provider, base URL, model, generation parameters, audio sent) instead of
(provider, model); answers keep their reasoning tokens; failed answers keep what they were billed; a job stopped
by Ctrl-C is "interrupted".

Answers cached before this carry a key no endpoint has (built from their provider and model): they were made at
a server the row does not record and without today's explicit limits, so they stay with the jobs that filed
them and are never served for a new request.
"""

import hashlib

from django.db import migrations, models


def legacy_endpoint_keys(apps, schema_editor):
    ModelAnswer = apps.get_model("metrics_bridge", "ModelAnswer")
    for answer in ModelAnswer.objects.only("pk", "provider", "model").iterator():
        key = hashlib.sha256(f"before endpoint keys:{answer.provider}/{answer.model}".encode()).hexdigest()
        ModelAnswer.objects.filter(pk=answer.pk).update(endpoint_sha256=key)


class Migration(migrations.Migration):
    dependencies = [
        ("metrics_bridge", "0008_dashboard_computation_state_and_cache_table"),
    ]

    operations = [
        migrations.RemoveConstraint(model_name="modelanswer", name="model_answer_unique_request"),
        migrations.AddField(
            model_name="modelanswer",
            name="base_url",
            field=models.CharField(blank=True, max_length=500),
        ),
        migrations.AddField(
            model_name="modelanswer",
            name="parameters",
            field=models.JSONField(blank=True, default=dict),
        ),
        migrations.AddField(
            model_name="modelanswer",
            name="endpoint_sha256",
            field=models.CharField(default="", max_length=64),
            preserve_default=False,
        ),
        migrations.AddField(
            model_name="modelanswer",
            name="reasoning_tokens",
            field=models.PositiveIntegerField(blank=True, null=True),
        ),
        migrations.RunPython(legacy_endpoint_keys, migrations.RunPython.noop),
        migrations.AddConstraint(
            model_name="modelanswer",
            constraint=models.UniqueConstraint(
                fields=["endpoint_sha256", "prompt_sha256", "audio_sha256"], name="model_answer_unique_request"
            ),
        ),
        migrations.AddField(
            model_name="captioningjobitem",
            name="failed_cost",
            field=models.FloatField(blank=True, null=True),
        ),
        migrations.AlterField(
            model_name="captioningjob",
            name="status",
            field=models.CharField(
                choices=[
                    ("pending", "Waiting for a worker"),
                    ("running", "Captioning"),
                    ("done", "Done"),
                    ("done_with_failures", "Done, some clips failed"),
                    ("failed", "Failed"),
                    ("cancelled", "Cancelled"),
                    ("interrupted", "Interrupted (resumable)"),
                ],
                default="pending",
                max_length=20,
            ),
        ),
    ]
