"""AudioCaps-F import as GOLD annotations, its idempotence, tag linking, errors, and the export round trip."""

import json
from io import StringIO
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command

from annotation.models import AttributeTag, EventAttribute, EventSource, ExpertAnnotation, SoundEvent, TemporalRelation
from annotation.services.audiocaps_f import audiocaps_f_import, audiocaps_f_import_from_path
from annotation.services.audiocaps_f_exporting import audiocaps_f_export
from corpus.models import Clip, Dataset
from corpus.services.importing import ImportDataError
from ratings.services.pairwise_import import pairwise_judgements_import
from tests.annotation.table_counts import all_rows_snapshot, all_table_counts
from tests.ratings.pairwise_data import audiocaps_eval_like


@pytest.fixture(scope="module")
def annotations_path(shared_dir):
    return shared_dir / "datasets" / "audiocaps_f_annotations.json"


@pytest.fixture(scope="module")
def annotations(annotations_path):
    return json.loads(annotations_path.read_text())


@pytest.mark.django_db
def test_import_gives_957_gold_clips_and_2322_events_in_file_order(annotations_path, annotations):
    call_command("import_audiocaps_f", str(annotations_path), "--dataset", "acf")

    gold = ExpertAnnotation.objects.filter(status="gold", clip__dataset__name="acf")
    assert gold.count() == 957
    assert SoundEvent.objects.count() == 2322
    assert EventSource.objects.count() == sum(len(e["source"]) for clip in annotations.values() for e in clip.values())
    assert EventAttribute.objects.count() == sum(len(e["attr"]) for clip in annotations.values() for e in clip.values())
    assert set(gold.values_list("annotator__username", flat=True)) == {"audiocaps-f-experts"}
    expert = get_user_model().objects.get(username="audiocaps-f-experts")
    assert not expert.has_usable_password()

    key = "YPYP-r0nvbFk.wav"
    clip = Clip.objects.get(external_id="PYP-r0nvbFk")
    assert clip.file_name == key
    events = list(clip.expert_annotations.get().events.order_by("position"))
    assert [event.label for event in events] == list(annotations[key])
    assert [a.text for a in events[0].attributes.order_by("position")] == ["Loud", "Alongside", "Casual", "Off and on"]


@pytest.mark.django_db
def test_attributes_link_to_tags_by_trimmed_case_insensitive_text_and_free_ones_are_counted(
    annotations_path, annotations
):
    summary = audiocaps_f_import_from_path(path=annotations_path, dataset_name="acf")

    library = {tag.text.strip().casefold(): tag.pk for tag in AttributeTag.objects.all()}
    templates = {"on a ": library["on a xxx"], "against ": library["against xx"]}  # "on a xxx": "on a <word>"

    def expected_tag(text: str):
        key = " ".join(text.split()).casefold()
        if key in library:
            return library[key]
        return next((tag for prefix, tag in templates.items() if key.startswith(prefix) and key > prefix), None)

    texts = [a for clip in annotations.values() for event in clip.values() for a in event["attr"]]
    expected_free = [text for text in texts if expected_tag(text) is None]
    assert expected_free, "the real data has attributes outside the library"
    assert any(text != text.strip() for text in texts if text.strip().casefold() in library)  # trimming matters
    assert "on a hard surface" in [text.strip().casefold() for text in texts]  # a filled-in template
    assert "twice" in [text.strip().casefold() for text in texts]  # a Count tag of the product's extension
    for attribute in EventAttribute.objects.all():
        assert attribute.tag_id == expected_tag(attribute.text), attribute.text
    assert EventAttribute.objects.filter(tag__isnull=True).count() == len(expected_free)
    assert summary.extra["free attributes (not in the tag library)"] == len(expected_free)
    assert summary.extra["distinct free attribute texts"] == len({t.strip().casefold() for t in expected_free})


@pytest.mark.django_db
def test_sources_of_the_list_of_sound_sources_are_marked_and_others_flagged(annotations_path):
    audiocaps_f_import_from_path(path=annotations_path, dataset_name="acf")
    listed = dict(EventSource.objects.values_list("text", "listed"))
    assert listed["man"] and listed["dog"] and listed["crowd of people"]
    assert listed["dogs"]  # the plural of a listed source
    free = sorted({text for text, is_listed in listed.items() if not is_listed})
    assert free and "man" not in free
    assert EventSource.objects.filter(listed=False).count() < EventSource.objects.count() / 5


@pytest.mark.django_db
def test_second_import_changes_nothing(annotations_path):
    audiocaps_f_import_from_path(path=annotations_path, dataset_name="acf")
    counts, rows = all_table_counts(), all_rows_snapshot()

    summary = audiocaps_f_import_from_path(path=annotations_path, dataset_name="acf")

    assert all_table_counts() == counts
    assert all_rows_snapshot() == rows
    assert not summary.changed_anything
    assert summary.count("expert annotations", "unchanged") == 957


@pytest.mark.django_db
def test_export_reproduces_the_input_exactly_including_order(annotations_path, annotations, tmp_path):
    audiocaps_f_import_from_path(path=annotations_path, dataset_name="acf")
    out = tmp_path / "out.json"

    call_command("export_audiocaps_f", "--dataset", "acf", "--out", str(out))

    exported = json.loads(out.read_text())
    assert exported == annotations
    assert list(exported) == list(annotations)
    for key, events in annotations.items():
        assert list(exported[key]) == list(events)
        for label, event in events.items():
            assert list(exported[key][label]) == ["source", "attr"]
            assert exported[key][label]["source"] == event["source"]
            assert exported[key][label]["attr"] == event["attr"]


@pytest.mark.django_db
def test_reimport_of_changed_annotations_replaces_their_events():
    first = {
        "Yaaa.wav": {"dog": {"source": ["dog"], "attr": ["Loud"]}},
        "Ybbb.wav": {"rain": {"source": [], "attr": []}},
    }
    audiocaps_f_import(data=first, dataset_name="acf", source_name="a.json")
    untouched_event = SoundEvent.objects.get(label="rain")
    second = {
        "Yaaa.wav": {
            "cat": {"source": ["cat", "kitten"], "attr": [" quiet ", "purring-ish"]},
            "dog": {"source": [], "attr": []},
        },
        "Ybbb.wav": {"rain": {"source": [], "attr": []}},
    }

    summary = audiocaps_f_import(data=second, dataset_name="acf", source_name="b.json")

    assert audiocaps_f_export(dataset_name="acf") == second
    assert (summary.count("expert annotations", "updated"), summary.count("expert annotations", "unchanged")) == (1, 1)
    assert SoundEvent.objects.get(label="rain").pk == untouched_event.pk
    assert SoundEvent.objects.count() == 3
    quiet = EventAttribute.objects.get(text=" quiet ")
    assert quiet.tag is not None and quiet.tag.text == "quiet"
    assert EventAttribute.objects.get(text="purring-ish").tag is None


@pytest.mark.django_db
def test_keys_match_clips_made_by_the_audiocaps_eval_import():
    pairwise_judgements_import(data=audiocaps_eval_like(), dataset_name="audiocaps", source_name="ace.json")
    clip_count = Clip.objects.count()

    audiocaps_f_import(
        data={"Yxyz987.wav": {"rain": {"source": ["rain"], "attr": []}}, "Yabc-DEF_123.wav": {}, "Ynew.wav": {}},
        dataset_name="audiocaps",
        source_name="acf.json",
    )

    assert Clip.objects.count() == clip_count + 1
    assert ExpertAnnotation.objects.get(clip__external_id="xyz987").events.get().label == "rain"
    assert Clip.objects.get(external_id="new").file_name == "Ynew.wav"
    # Clips keep the file name the pairwise import gave them; the export still uses the Y<id>.wav keys.
    assert Clip.objects.get(external_id="xyz987").file_name == ""
    assert list(audiocaps_f_export(dataset_name="audiocaps")) == ["Yxyz987.wav", "Yabc-DEF_123.wav", "Ynew.wav"]


@pytest.mark.django_db
def test_keys_come_back_as_they_came_in(tmp_path):
    """A workbook clip "34.wav", a Clotho-style file name with a space, a YouTube id starting with a dash."""
    Clip.objects.create(dataset=Dataset.objects.create(name="mixed"), external_id="34.wav")  # from a workbook
    data = {
        "34.wav": {"birds": {"source": ["birds"], "attr": ["loud"]}},
        "kitchen 02.flac": {"frying": {"source": ["pan"], "attr": []}},
        "Y-abc123.wav": {"barking": {"source": ["dog"], "attr": []}},
    }
    path = tmp_path / "in.json"
    path.write_text(json.dumps(data))
    call_command("import_audiocaps_f", str(path), "--dataset", "mixed")
    assert Clip.objects.filter(dataset__name="mixed").count() == 3  # "34.wav" is the workbook's clip
    assert Clip.objects.get(file_name="Y-abc123.wav").external_id == "-abc123"
    out = tmp_path / "out.json"
    call_command("export_audiocaps_f", "--dataset", "mixed", "--out", str(out))
    assert json.loads(out.read_text()) == data
    rows = all_rows_snapshot()
    call_command("import_audiocaps_f", str(out), "--dataset", "mixed")
    assert all_rows_snapshot() == rows


@pytest.mark.django_db
def test_two_clips_with_the_same_export_key_are_refused_naming_both(tmp_path):
    dataset = Dataset.objects.create(name="clash")
    Clip.objects.create(dataset=dataset, external_id="ab")
    audiocaps_f_import(data={"Yab.wav": {"x": {}}}, dataset_name="clash", source_name="a.json")
    Clip.objects.create(dataset=dataset, external_id="other", file_name="Yab.wav")
    other = Clip.objects.get(external_id="other")
    from annotation.services.expert_annotations import expert_annotation_save, expert_annotation_set_status

    annotation = expert_annotation_save(clip=other, annotator=ExpertAnnotation.objects.get().annotator, events=[])
    expert_annotation_set_status(annotation=annotation, status="gold", is_admin=True)
    with pytest.raises(CommandError, match='clips "ab" and "other" would both be exported as "Yab.wav"'):
        call_command("export_audiocaps_f", "--dataset", "clash", "--out", str(tmp_path / "out.json"))
    assert not (tmp_path / "out.json").exists()


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("data", "expected_message"),
    [
        ([1, 2], 'acf.json: expected an object {"Y<youtube_id>.wav": {event: ...}}, got a list'),
        ({"Yok.wav": {}, " padded.wav": {}}, 'acf.json: key " padded.wav": a clip key is its file name or id'),
        ({"Yok.wav": {}, "": {}}, 'acf.json: key "": a clip key is its file name or id'),
        ({"Yok.wav": ["dog"]}, 'acf.json: key "Yok.wav": expected an object {event: {...}}, got a list'),
        (
            {"Yok.wav": {"dog": ["dog"]}},
            'acf.json: key "Yok.wav" event "dog": expected {"source": [...], "attr": [...]}',
        ),
        (
            {"Yok.wav": {"dog": {"source": "dog"}}},
            'acf.json: key "Yok.wav" event "dog" key "source": expected a list of strings',
        ),
        (
            {"Yok.wav": {"dog": {"source": [], "attr": [3]}}},
            'acf.json: key "Yok.wav" event "dog" key "attr" index 0: expected a string',
        ),
        ({"Yok.wav": {"dog": {"source": [], "tags": []}}}, 'acf.json: key "Yok.wav" event "dog": unknown key "tags"'),
    ],
)
def test_bad_input_names_file_and_key_and_writes_nothing(tmp_path, data, expected_message):
    path = tmp_path / "acf.json"
    path.write_text(json.dumps(data))
    before = all_table_counts()

    with pytest.raises(CommandError) as raised:
        call_command("import_audiocaps_f", str(path), "--dataset", "acf")

    assert str(raised.value).startswith(expected_message)
    assert all_table_counts() == before


@pytest.mark.django_db
def test_not_json_missing_file_and_unknown_export_dataset(tmp_path):
    broken = tmp_path / "acf.json"
    broken.write_text("{nope")
    before = all_table_counts()
    with pytest.raises(CommandError, match=r"^acf\.json: not valid JSON"):
        call_command("import_audiocaps_f", str(broken), "--dataset", "acf")
    with pytest.raises(CommandError, match=r"absent\.json: no such file"):
        call_command("import_audiocaps_f", str(tmp_path / "absent.json"), "--dataset", "acf")
    with pytest.raises(CommandError, match='dataset "acf" does not exist'):
        call_command("export_audiocaps_f", "--dataset", "acf", "--out", str(tmp_path / "out.json"))
    assert all_table_counts() == before
    assert not (tmp_path / "out.json").exists()


# --- As one annotator's submissions (--annotator / --status) ---------------------------------------------


@pytest.fixture
def small_file(tmp_path):
    path = tmp_path / "acf.json"
    data = {
        "Yaaa.wav": {"dog": {"source": ["dog"], "attr": ["loud"]}},
        "Ybbb.wav": {"rain": {"source": ["rain"], "attr": []}},
    }
    path.write_text(json.dumps(data))
    return path


@pytest.mark.django_db
def test_import_as_an_annotators_submissions_is_not_gold_and_idempotent(small_file, make_user):
    make_user("ann1", "annotator")
    as_ann1 = ["--dataset", "acf", "--annotator", "ann1", "--status", "submitted"]
    call_command("import_audiocaps_f", str(small_file), *as_ann1)
    rows = all_rows_snapshot()

    call_command("import_audiocaps_f", str(small_file), *as_ann1)

    assert all_rows_snapshot() == rows
    annotations = ExpertAnnotation.objects.filter(clip__dataset__name="acf")
    assert set(annotations.values_list("annotator__username", "status")) == {("ann1", "submitted")}
    assert annotations.count() == 2
    call_command("import_audiocaps_f", str(small_file), "--dataset", "acf")  # the expert gold beside it
    assert ExpertAnnotation.objects.filter(status="gold").count() == 2 and annotations.count() == 4


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("username", "message"),
    [("ghost", 'user "ghost" does not exist'), ("rater1", 'user "rater1" is not an annotator')],
)
def test_import_as_an_unknown_or_non_annotator_user_writes_nothing(small_file, make_user, username, message):
    make_user("rater1", "rater")
    before = all_table_counts()
    with pytest.raises(CommandError, match=message):
        call_command("import_audiocaps_f", str(small_file), "--dataset", "acf", "--annotator", username)
    assert all_table_counts() == before


@pytest.mark.django_db
def test_a_gold_import_supersedes_other_gold_and_a_submission_import_never_demotes_gold(small_file, make_user):
    make_user("ann1", "annotator")
    call_command("import_audiocaps_f", str(small_file), "--dataset", "acf", "--annotator", "ann1", "--status", "gold")
    before = all_table_counts()
    with pytest.raises(CommandError, match='key "Yaaa.wav": the clip has gold published by "ann1"'):
        call_command("import_audiocaps_f", str(small_file), "--dataset", "acf")  # not without being asked
    assert all_table_counts() == before
    assert set(ExpertAnnotation.objects.filter(status="gold").values_list("annotator__username", flat=True)) == {"ann1"}
    # the experts' gold replaces ann1's when asked to
    call_command("import_audiocaps_f", str(small_file), "--dataset", "acf", "--replace-gold")
    gold = ExpertAnnotation.objects.filter(status="gold")
    assert set(gold.values_list("annotator__username", flat=True)) == {"audiocaps-f-experts"} and gold.count() == 2
    assert ExpertAnnotation.objects.filter(status="superseded", annotator__username="ann1").count() == 2
    summary = audiocaps_f_import_from_path(
        path=small_file, dataset_name="acf", annotator_username="audiocaps-f-experts", status="submitted"
    )
    assert gold.count() == 2 and "left gold" in summary.notes[0]


@pytest.mark.django_db
def test_a_relation_the_spans_contradict_is_refused_naming_clip_event_and_relation(tmp_path):
    path = tmp_path / "acf.json"
    clip = {
        "rustling": {"source": ["leaves"], "attr": [], "spans": [[5.0, 6.0]], "relations": {"tap": "before"}},
        "tap": {"source": ["finger"], "attr": [], "spans": [[1.0, 1.2]]},
    }
    path.write_text(json.dumps({"35.wav": clip}))
    before = all_table_counts()
    with pytest.raises(CommandError) as refused:
        call_command("import_audiocaps_f", str(path), "--dataset", "acf")
    assert str(refused.value) == (
        'acf.json: key "35.wav" event "rustling" key "relations" event "tap": against the time spans: '
        '"rustling" (5.00–6.00 s) before "tap" (1.00–1.20 s): the spans say after'
    )
    assert all_table_counts() == before
    clip["rustling"]["relations"] = {"tap": "after"}  # as the spans say: imported
    path.write_text(json.dumps({"35.wav": clip}))
    call_command("import_audiocaps_f", str(path), "--dataset", "acf")
    stored = TemporalRelation.objects.get()
    assert (stored.first_event.label, stored.kind, stored.second_event.label) == ("rustling", "after", "tap")


@pytest.mark.django_db
def test_relations_the_chain_rule_would_carry_past_a_long_background_sound_are_not_refused(tmp_path):
    # wind sounds all along: with the tap and with the later rustle, which are not simultaneous. The chain rule
    # alone would imply "tap simultaneous rustling" and refuse the stated "tap before rustling".
    path = tmp_path / "acf.json"
    clip = {
        "wind": {"source": ["wind"], "attr": [], "spans": [[0, 10]], "relations": {"tap": "simultaneous"}},
        "tap": {"source": ["finger"], "attr": [], "spans": [[1, 2]], "relations": {"rustling": "before"}},
        "rustling": {"source": ["leaves"], "attr": [], "spans": [[7, 8]], "relations": {"wind": "simultaneous"}},
    }
    path.write_text(json.dumps({"36.wav": clip}))
    call_command("import_audiocaps_f", str(path), "--dataset", "acf")
    assert TemporalRelation.objects.count() == 3


def _clips_with_conflicting_attributes(annotations) -> tuple[set[str], int]:
    """(clip keys, attribute pairs) the tag library's own data files call opposites or different counts: an
    oracle read straight from annotation/data, not through the product's checks."""
    data = Path(__file__).resolve().parents[2] / "annotation" / "data"
    tags = {}
    for name in ("attribute_tags.json", "attribute_tags_extension.json"):
        tags.update({text.strip().casefold(): facts for text, facts in json.loads((data / name).read_text()).items()})
    keys, pairs = set(), 0
    for key, events in annotations.items():
        for event in events.values():
            known = [tags[text.strip().casefold()] for text in event["attr"] if text.strip().casefold() in tags]
            for index, first in enumerate(known):
                for second in known[index + 1 :]:
                    if first["class"] != second["class"] or first["sym"] == second["sym"]:
                        continue
                    if first["class"] == "Count" or second["sym"] in first["ant"] or first["sym"] in second["ant"]:
                        keys.add(key)
                        pairs += 1
    return keys, pairs


@pytest.mark.django_db
def test_gold_import_flags_clips_whose_attributes_the_tag_library_contradicts_and_keeps_them_gold(
    annotations_path, annotations
):
    keys, pairs = _clips_with_conflicting_attributes(annotations)
    assert (len(keys), pairs) == (66, 76)  # the released file, as the data files read

    summary = audiocaps_f_import_from_path(path=annotations_path, dataset_name="acf")

    assert summary.extra["clips with conflicting attributes"] == len(keys)
    [note] = [note for note in summary.notes if "tag library calls opposites" in note]
    assert note.startswith("66 clips hold attributes") and "kept gold as the file gives them" in note
    assert note.endswith(f"(and {pairs - 5} more)")
    assert "clip Y" in note and "are opposites" in note
    # Kept as the file gives them: the export round trip still holds.
    assert ExpertAnnotation.objects.filter(status="gold").count() == 957


@pytest.mark.django_db
def test_gold_import_can_hold_back_contradicted_clips_as_submissions_for_a_reviewer(annotations_path, annotations):
    keys, _pairs = _clips_with_conflicting_attributes(annotations)
    printed = StringIO()

    call_command(
        "import_audiocaps_f",
        str(annotations_path),
        "--dataset",
        "acf",
        "--conflicting-attributes",
        "submitted",
        stdout=printed,
    )

    gold = ExpertAnnotation.objects.filter(status="gold")
    held = ExpertAnnotation.objects.filter(status="submitted")
    assert gold.count() == 957 - len(keys)
    assert {annotation.clip.file_name for annotation in held.select_related("clip")} == keys
    assert set(audiocaps_f_export(dataset_name="acf")) == set(annotations) - keys
    assert "66 clips hold attributes" in printed.getvalue() and "imported as submitted, not gold" in printed.getvalue()


@pytest.mark.django_db
def test_an_unknown_choice_for_conflicting_clips_names_the_parameter_and_writes_nothing(small_file):
    before = all_table_counts()
    with pytest.raises(ImportDataError, match='conflicting_as "draft"'):
        audiocaps_f_import_from_path(path=small_file, dataset_name="acf", conflicting_as="draft")
    assert all_table_counts() == before
