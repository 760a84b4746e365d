from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("ratings", "0008_participant_exclusion_codes"),
    ]

    operations = [
        migrations.AddField(
            model_name="assignmentitem",
            name="listening_from",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="assignmentitem",
            name="listening_until",
            field=models.DateTimeField(blank=True, null=True),
        ),
    ]
