# Several occurrences per event (EventSpan replaces SoundEvent.onset/offset), flagged sources, and the tag
# library's templates and Count extension.

import django.db.models.deletion
from django.db import migrations, models

from annotation.tag_library import attribute_tag_extensions_seed
from annotation.vocabulary import AttributeVocabulary, source_is_listed


def _draft_to_spans(draft):
    changed = False
    for event in (draft or {}).get("events", []) if isinstance(draft, dict) else []:
        if isinstance(event, dict) and ("onset" in event or "offset" in event):
            onset, offset = event.pop("onset", None), event.pop("offset", None)
            if onset is not None or offset is not None:
                onset = offset if onset is None else onset
                offset = onset if offset is None else offset
                event["spans"] = [[onset, offset]]
            else:
                event.setdefault("spans", [])
            changed = True
    return changed


def _draft_to_onset(draft):
    changed = False
    for event in (draft or {}).get("events", []) if isinstance(draft, dict) else []:
        if isinstance(event, dict) and "spans" in event:
            spans = event.pop("spans") or []
            event["onset"] = min((span[0] for span in spans), default=None)
            event["offset"] = max((span[1] for span in spans), default=None)
            changed = True
    return changed


def _convert_drafts(apps, convert):
    for name in ("AnnotationTask", "AnnotationReview"):
        model = apps.get_model("annotation", name)
        for row in model.objects.exclude(draft={}).only("pk", "draft").iterator():
            if convert(row.draft):
                model.objects.filter(pk=row.pk).update(draft=row.draft)


def forwards(apps, schema_editor):
    SoundEvent = apps.get_model("annotation", "SoundEvent")
    EventSpan = apps.get_model("annotation", "EventSpan")
    EventSource = apps.get_model("annotation", "EventSource")
    EventAttribute = apps.get_model("annotation", "EventAttribute")
    AttributeTag = apps.get_model("annotation", "AttributeTag")
    spans = []
    for event_id, onset, offset in SoundEvent.objects.exclude(onset_seconds=None, offset_seconds=None).values_list(
        "pk", "onset_seconds", "offset_seconds"
    ):
        onset = offset if onset is None else onset
        offset = onset if offset is None else offset
        spans.append(EventSpan(event_id=event_id, position=0, onset_seconds=onset, offset_seconds=max(onset, offset)))
    EventSpan.objects.bulk_create(spans, batch_size=1000)
    listed = [pk for pk, text in EventSource.objects.values_list("pk", "text") if source_is_listed(text)]
    for start in range(0, len(listed), 1000):
        EventSource.objects.filter(pk__in=listed[start : start + 1000]).update(listed=True)
    attribute_tag_extensions_seed(AttributeTag)
    vocabulary = AttributeVocabulary(AttributeTag.objects.values_list("pk", "text", "template"))
    for pk, text in EventAttribute.objects.filter(tag=None).values_list("pk", "text"):
        tag_id = vocabulary.tag_of(text)
        if tag_id is not None:
            EventAttribute.objects.filter(pk=pk).update(tag_id=tag_id)
    _convert_drafts(apps, _draft_to_spans)
    _check_deferred_constraints_now(schema_editor)


def backwards(apps, schema_editor):
    SoundEvent = apps.get_model("annotation", "SoundEvent")
    EventSpan = apps.get_model("annotation", "EventSpan")
    EventAttribute = apps.get_model("annotation", "EventAttribute")
    AttributeTag = apps.get_model("annotation", "AttributeTag")
    extents = {}
    for event_id, onset, offset in EventSpan.objects.values_list("event_id", "onset_seconds", "offset_seconds"):
        low, high = extents.get(event_id, (onset, offset))
        extents[event_id] = (min(low, onset), max(high, offset))
    for event_id, (onset, offset) in extents.items():
        SoundEvent.objects.filter(pk=event_id).update(onset_seconds=onset, offset_seconds=offset)
    filled_in = [
        pk
        for pk, text, tag_text in EventAttribute.objects.exclude(tag__template="").values_list("pk", "text", "tag__text")
        if " ".join(text.split()).casefold() != tag_text.casefold()
    ]
    EventAttribute.objects.filter(pk__in=filled_in).update(tag=None)
    product = AttributeTag.objects.filter(origin="product")
    EventAttribute.objects.filter(tag__in=product.values("pk")).update(tag=None)
    product.delete()
    _convert_drafts(apps, _draft_to_onset)
    _check_deferred_constraints_now(schema_editor)


def _check_deferred_constraints_now(schema_editor):
    """PostgreSQL refuses ALTER TABLE on a table with pending deferred foreign-key checks (rows of annotation_attributetag
    updated or deleted above): the field removals that follow in this migration's transaction need them fired now."""
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute("SET CONSTRAINTS ALL IMMEDIATE")


class Migration(migrations.Migration):

    dependencies = [
        ('annotation', '0007_caption_note'),
    ]

    operations = [
        migrations.CreateModel(
            name='EventSpan',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('position', models.PositiveSmallIntegerField()),
                ('onset_seconds', models.FloatField()),
                ('offset_seconds', models.FloatField()),
                ('event', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='spans', to='annotation.soundevent')),
            ],
            options={
                'ordering': ['event', 'position'],
                'constraints': [
                    models.UniqueConstraint(fields=('event', 'position'), name='span_unique_position'),
                    models.CheckConstraint(condition=models.Q(('onset_seconds__gte', 0)), name='span_onset_not_negative'),
                    models.CheckConstraint(condition=models.Q(('offset_seconds__gte', models.F('onset_seconds'))), name='span_offset_after_onset'),
                ],
            },
        ),
        migrations.AddField(
            model_name='attributetag',
            name='origin',
            field=models.CharField(choices=[('audiocaps-f', "AudioCaps-F's tag library"), ('product', "This product's extension of the library")], default='audiocaps-f', max_length=12),
        ),
        migrations.AddField(
            model_name='attributetag',
            name='template',
            field=models.CharField(blank=True, max_length=100),
        ),
        migrations.AddField(
            model_name='eventsource',
            name='listed',
            field=models.BooleanField(default=False),
        ),
        migrations.RunPython(forwards, backwards),
        migrations.RemoveConstraint(
            model_name='soundevent',
            name='event_onset_not_negative',
        ),
        migrations.RemoveConstraint(
            model_name='soundevent',
            name='event_offset_after_onset',
        ),
        migrations.RemoveField(
            model_name='soundevent',
            name='offset_seconds',
        ),
        migrations.RemoveField(
            model_name='soundevent',
            name='onset_seconds',
        ),
    ]
