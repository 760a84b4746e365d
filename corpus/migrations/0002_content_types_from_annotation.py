from django.db import migrations

# Content types of the models that moved from `annotation`: permissions ("corpus.view_clip") and admin log
# entries hang on them, so the existing rows are relabelled rather than new ones created beside them.
MOVED_MODELS = ["dataset", "clip", "captioningsystem", "caption", "systemsubmission", "datasetupload"]


def relabel(apps, old_label: str, new_label: str) -> None:
    content_types = apps.get_model("contenttypes", "ContentType").objects
    for model in MOVED_MODELS:
        # A row under the new label exists only if post_migrate made one before this ran; then keep both as they are.
        if not content_types.filter(app_label=new_label, model=model).exists():
            content_types.filter(app_label=old_label, model=model).update(app_label=new_label)


def forwards(apps, schema_editor) -> None:
    relabel(apps, "annotation", "corpus")


def backwards(apps, schema_editor) -> None:
    relabel(apps, "corpus", "annotation")


class Migration(migrations.Migration):
    dependencies = [
        ("contenttypes", "0002_remove_content_type_name"),
        ("corpus", "0001_corpus_models_to_corpus_app"),
    ]

    operations = [migrations.RunPython(forwards, backwards)]
