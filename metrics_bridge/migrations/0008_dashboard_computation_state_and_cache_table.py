"""Dashboard computations are tracked (requested, started, attempts, error), and the shared cache's table exists.

The database cache (CACHES on the default install) needs its table; creating it here means `migrate` (run by
`./scripts/run` and by the test database's setup) is the only command a new install needs. `createcachetable`
creates only the tables of the configured database caches that are missing, so with Redis it does nothing.
"""

from django.core.management import call_command
from django.db import migrations, models


def create_cache_table(apps, schema_editor):
    call_command("createcachetable", database=schema_editor.connection.alias, verbosity=0)


class Migration(migrations.Migration):
    dependencies = [
        ("metrics_bridge", "0007_captioning_jobs_and_model_answers"),
    ]

    operations = [
        migrations.AddField(
            model_name="dashboardcache",
            name="requested_fingerprint",
            field=models.CharField(blank=True, max_length=64),
        ),
        migrations.AddField(
            model_name="dashboardcache",
            name="requested_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="dashboardcache",
            name="started_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="dashboardcache",
            name="attempts",
            field=models.PositiveSmallIntegerField(default=0),
        ),
        migrations.AddField(
            model_name="dashboardcache",
            name="error",
            field=models.TextField(blank=True),
        ),
        migrations.RunPython(create_cache_table, migrations.RunPython.noop),
    ]
