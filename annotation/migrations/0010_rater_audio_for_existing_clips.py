"""Give every clip stored before rater copies existed its rater copy (corpus/services/rater_audio.py).

A file that cannot be read is skipped (and reported): its copy is made the first time a rater asks for
it, or by `manage.py build_rater_audio`, which does the same as this migration and lists failures.
"""

from django.core.files.base import ContentFile
from django.db import migrations


def rater_copies_build(apps, schema_editor):
    from corpus.services.rater_audio import rater_wav_from_path, stored_audio_path

    Clip = apps.get_model("annotation", "Clip")
    skipped = 0
    for clip in Clip.objects.exclude(audio="").filter(rater_audio="").order_by("pk").iterator():
        try:
            with stored_audio_path(clip) as path:
                content = rater_wav_from_path(path)
        except Exception:  # a missing or unreadable file: the copy is made on first use instead
            skipped += 1
            continue
        clip.rater_audio.save("rater.wav", ContentFile(content), save=False)
        Clip.objects.filter(pk=clip.pk).update(rater_audio=clip.rater_audio.name)
    if skipped:
        print(f"\n  rater audio: {skipped} clip(s) skipped (unreadable audio); see manage.py build_rater_audio")


class Migration(migrations.Migration):
    dependencies = [("annotation", "0009_clip_rater_audio_caption_pair_artefact")]

    operations = [migrations.RunPython(rater_copies_build, migrations.RunPython.noop)]
