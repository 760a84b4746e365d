"""Forms of the import pages: a new dataset from audio, audio for a dataset's clips, one data file into a dataset."""

from django import forms
from django.conf import settings

from corpus.models import Dataset
from corpus.services.import_uploads import MAX_AUDIO_BYTES, MAX_AUDIO_FILES, MAX_DATA_FILE_BYTES, MEGABYTE


class MultipleFileInput(forms.ClearableFileInput):
    allow_multiple_selected = True


class MultipleFileField(forms.FileField):
    """Several files from one input (Django's FileField takes one)."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("widget", MultipleFileInput())
        super().__init__(*args, **kwargs)

    def clean(self, data, initial=None):
        files = [item for item in (data if isinstance(data, (list, tuple)) else [data]) if item]
        if not files:
            if self.required:
                raise forms.ValidationError(self.error_messages["required"], code="required")
            return []
        return [super(MultipleFileField, self).clean(item, initial) for item in files]


def audio_files_field(help_text: str) -> MultipleFileField:
    return MultipleFileField(
        # Django refuses a form with more files than this (a bare 400); the page's script says so before sending.
        widget=MultipleFileInput(attrs={"data-max-files": settings.DATA_UPLOAD_MAX_NUMBER_FILES or ""}),
        label="Audio files or zip archives",
        help_text=(
            f"Any format ffmpeg decodes (WAV, FLAC, MP3, OGG, …), or zips of them; at most {MAX_AUDIO_FILES} files "
            f"and {MAX_AUDIO_BYTES // MEGABYTE} MB of audio (unpacked) per upload. {help_text}"
        ),
    )


class DatasetFromAudioForm(forms.Form):
    name = forms.SlugField(
        max_length=Dataset._meta.get_field("name").max_length,
        label="Dataset name",
        help_text="Letters, digits, - and _; a name no dataset has yet.",
    )
    description = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}))
    audio = audio_files_field("Each file becomes a clip named after it; folders inside a zip are ignored.")
    captions = forms.FileField(
        required=False,
        label="Reference captions (optional)",
        help_text=(
            "CSV with file_name,caption_1,…,caption_N (Clotho) or audiocap_id,youtube_id,start_time,caption "
            '(AudioCaps), or JSON {"file name": ["caption", …]}; every row must name an uploaded file '
            f"(with or without extension). At most {MAX_DATA_FILE_BYTES // MEGABYTE} MB."
        ),
    )


class ClipAudioForm(forms.Form):
    audio = audio_files_field("Each file goes to the clip it names; folders inside a zip are ignored.")


class DataFileImportForm(forms.Form):
    dataset = forms.CharField(
        max_length=Dataset._meta.get_field("name").max_length,
        label="Dataset name",
        help_text="An existing dataset's name, or a new name (letters, digits, - and _) to create it.",
        widget=forms.TextInput(attrs={"list": "dataset-names", "autocomplete": "off"}),
    )
    file = forms.FileField(
        help_text=f"At most {MAX_DATA_FILE_BYTES // MEGABYTE} MB. A worker imports it; the next page follows it."
    )

    def __init__(self, *args, file_label: str, accept: str, options=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["file"].label = file_label
        self.fields["file"].widget.attrs["accept"] = accept
        self.options = options
        for option in options:  # the kind's choices (FileImportOption); left out, an option keeps its default
            self.fields[option.name] = forms.ChoiceField(
                label=option.label,
                choices=option.choices,
                initial=option.default,
                required=False,
                help_text=option.help_text,
            )

    def chosen_options(self) -> dict[str, str]:
        return {option.name: self.cleaned_data[option.name] or option.default for option in self.options}

    def clean_dataset(self):
        return self.cleaned_data["dataset"].strip()
