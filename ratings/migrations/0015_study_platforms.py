"""A study recruits on a set of platforms instead of one: existing studies keep their one platform."""

from django.db import migrations, models

import ratings.models_study


def platforms_from_platform(apps, schema_editor):
    """Each study recruits on its one platform; an MTurk study's last sync was MTurk's."""
    Study = apps.get_model("ratings", "Study")
    StudyPlatformLink = apps.get_model("ratings", "StudyPlatformLink")
    for study in Study.objects.all().only("pk", "platform"):
        Study.objects.filter(pk=study.pk).update(platforms=[study.platform])
    StudyPlatformLink.objects.filter(study__platform="mturk").update(
        mturk_synced_at=models.F("synced_at"), synced_at=None
    )


def platform_from_platforms(apps, schema_editor):
    """Going back, a study keeps the first of its platforms (the old field holds one), and its link the sync time
    of that platform."""
    Study = apps.get_model("ratings", "Study")
    StudyPlatformLink = apps.get_model("ratings", "StudyPlatformLink")
    for study in Study.objects.all().only("pk", "platforms"):
        platform = (study.platforms or ["prolific"])[0]
        Study.objects.filter(pk=study.pk).update(platform=platform)
        if platform == "mturk":
            StudyPlatformLink.objects.filter(study=study).update(synced_at=models.F("mturk_synced_at"))


class Migration(migrations.Migration):
    dependencies = [
        ("ratings", "0014_platform_mturk_assignment_states"),
    ]

    operations = [
        migrations.AddField(
            model_name="study",
            name="platforms",
            field=models.JSONField(default=ratings.models_study.default_platforms),
        ),
        migrations.AddField(
            model_name="studyplatformlink",
            name="mturk_synced_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.RunPython(platforms_from_platform, platform_from_platforms),
        migrations.RemoveField(model_name="study", name="platform"),
    ]
