"""Attack: grep the audio a rater receives for what its uploader's tools wrote into the file.

Against the old main audio went to raters byte for byte as uploaded, so a WAV's LIST/INFO title (say, the
source file name) reached the rater inside the file. Here an admin uploads WAV, MP3, FLAC, OGG and M4A files
carrying a marker string in every metadata slot each format has (WAV: LIST/INFO, bext, iXML, cue and its
adtl label, an ID3 chunk; MP3: ID3v2 frames, ID3v1 and an embedded picture; FLAC: Vorbis comments and a
picture block; OGG: Vorbis comments; M4A: MP4 tags), and in the file name. A rater then fetches every byte they
can: each item's page, the API, the item audio whole, by ranges and by HEAD, the workbook zip and its signed
links. The marker must be in the stored originals (admins still get those: the attack has its target) and
in nothing the rater gets.
"""

import io
import re
import struct
import subprocess
import zipfile
import zlib
from pathlib import Path

import pytest
from django.test import Client
from django.urls import reverse

from corpus.models import Caption, CaptioningSystem, Clip, Dataset
from corpus.services.ffmpeg import ffmpeg_executable
from ratings.services.campaigns import campaign_setup
from tests.ratings.campaign_data import headphone_pass_give

pytestmark = pytest.mark.django_db

MARKER = "Zq7MetaLeakMarker"
TAG_KEYS = (
    "title",
    "artist",
    "album",
    "album_artist",
    "comment",
    "genre",
    "composer",
    "copyright",
    "description",
    "lyrics",
    "encoded_by",
    "publisher",
    "date",
    "track",
)


def _encodings(text: str) -> list[bytes]:
    """The marker as a tag may store it: UTF-8/Latin-1, UTF-16 either way round, and upper case."""
    return [text.encode(), text.encode("utf-16-le"), text.encode("utf-16-be"), text.upper().encode()]


def _leaks(content: bytes) -> bool:
    return any(form in content for form in _encodings(MARKER))


def _chunk(kind: bytes, body: bytes) -> bytes:
    return kind + struct.pack("<I", len(body)) + body + (b"\x00" if len(body) % 2 else b"")


def _png_with_marker() -> bytes:
    def block(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)
    pixels = zlib.compress(b"\x00\xff\x00\x00")
    text = b"Comment\x00" + MARKER.encode()
    return (
        b"\x89PNG\r\n\x1a\n"
        + block(b"IHDR", header)
        + block(b"tEXt", text)
        + block(b"IDAT", pixels)
        + block(b"IEND", b"")
    )


def _tagged_wav(pcm: bytes) -> bytes:
    """A WAV with the marker in LIST/INFO, bext, iXML, cue + adtl label and an ID3 chunk around its data."""
    marker = MARKER.encode()
    fmt = struct.pack("<HHIIHH", 1, 1, 16000, 32000, 2, 16)
    info = b"INFO" + b"".join(
        _chunk(key, marker + b"\x00") for key in (b"INAM", b"IART", b"ICMT", b"ISFT", b"ICOP", b"IPRD")
    )
    bext = marker.ljust(256, b"\x00") + marker.ljust(32, b"\x00") + marker.ljust(32, b"\x00") + b"2024-01-0112:00:00"
    bext += b"\x00" * (602 - len(bext)) + marker
    ixml = b"<?xml version='1.0'?><BWFXML><PROJECT>" + marker + b"</PROJECT><NOTE>" + marker + b"</NOTE></BWFXML>"
    cue = struct.pack("<I", 1) + struct.pack("<II4sIII", 1, 0, b"data", 0, 0, 800)
    adtl = (
        b"adtl"
        + _chunk(b"labl", struct.pack("<I", 1) + marker + b"\x00")
        + _chunk(b"note", struct.pack("<I", 1) + marker + b"\x00")
    )
    frame = b"\x03" + marker  # ID3v2.3 TIT2, UTF-8 encoded text
    id3_body = b"TIT2" + struct.pack(">I", len(frame)) + b"\x00\x00" + frame
    id3 = b"ID3\x03\x00\x00" + bytes([0, 0, 0, len(id3_body)]) + id3_body
    chunks = [
        _chunk(b"fmt ", fmt),
        _chunk(b"bext", bext),
        _chunk(b"LIST", info),
        _chunk(b"iXML", ixml),
        _chunk(b"data", pcm),
        _chunk(b"cue ", cue),
        _chunk(b"LIST", adtl),
        _chunk(b"id3 ", id3),
    ]
    body = b"WAVE" + b"".join(chunks)
    return b"RIFF" + struct.pack("<I", len(body)) + body


def _ffmpeg(arguments: list[str]) -> None:
    command = [ffmpeg_executable(), "-hide_banner", "-loglevel", "error", "-y", *arguments]
    subprocess.run(command, check=True, timeout=120)


def _tagged_files(folder: Path) -> dict[str, Path]:
    tone = folder / "tone.wav"
    _ffmpeg(["-f", "lavfi", "-i", "sine=frequency=440:duration=1:sample_rate=16000", "-ac", "1", str(tone)])
    pcm = tone.read_bytes()
    data_at = pcm.index(b"data") + 8
    files = {}
    wav = folder / f"{MARKER}-source.wav"
    wav.write_bytes(_tagged_wav(pcm[data_at:]))
    files["wav"] = wav
    cover = folder / "cover.png"
    cover.write_bytes(_png_with_marker())
    tags = []
    for key in TAG_KEYS:
        tags += ["-metadata", f"{key}={MARKER}" if key not in ("date", "track") else f"{key}=1"]
    with_picture = [  # (after the audio input) the picture as a second input, kept as an attached picture
        "-i", str(cover), "-map", "0:a", "-map", "1:v", "-c:v", "copy", "-disposition:v", "attached_pic",
        "-metadata:s:v", f"title={MARKER}", "-metadata:s:v", f"comment={MARKER}",
    ]  # fmt: skip
    outputs = {
        "mp3": [*with_picture, "-c:a", "libmp3lame", "-id3v2_version", "3", "-write_id3v1", "1"],
        "flac": [*with_picture, "-c:a", "flac"],
        "ogg": ["-c:a", "libvorbis"],
        "m4a": ["-c:a", "aac", "-movflags", "+use_metadata_tags"],
    }
    for extension, arguments in outputs.items():
        path = folder / f"{MARKER}-source.{extension}"
        _ffmpeg(["-i", str(tone), *arguments, *tags, str(path)])
        files[extension] = path
    for extension, path in files.items():
        assert _leaks(path.read_bytes()), f"the {extension} file carries the marker (so the test can fail)"
    return files


@pytest.fixture
def tagged_study(make_user, tmp_path):
    admin = make_user("uploader", staff=True)
    rater = make_user("grepper", "rater")
    headphone_pass_give(rater)
    dataset = Dataset.objects.create(name="tagged")
    system = CaptioningSystem.objects.create(name="tagged-system")
    uploader = Client()
    uploader.force_login(admin)
    clips = []
    for extension, path in _tagged_files(tmp_path).items():
        clip = Clip.objects.create(dataset=dataset, external_id=f"clip-{extension}")
        Caption.objects.create(
            clip=clip, text=f"a tone ({extension})", role="reference", author_kind="human", position=0
        )
        Caption.objects.create(
            clip=clip, text=f"a beep ({extension})", role="candidate", author_kind="machine", system=system
        )
        with open(path, "rb") as handle:
            response = uploader.post(f"/api/clips/{clip.pk}/audio/", {"file": handle})
        assert response.status_code == 200, (extension, response.content[:300])
        clips.append(clip)
    campaign = campaign_setup(
        name="tagged-thumbs",
        dataset=dataset,
        task_type="thumbs",
        systems=[system],
        human_captions_per_clip=1,
        judgements_per_item=1,
        raters=[rater],
    )
    return admin, rater, campaign, clips


def _body(response) -> bytes:
    return b"".join(response.streaming_content) if response.streaming else response.content


def test_no_byte_a_rater_can_fetch_carries_the_uploaded_files_metadata(tagged_study):
    admin, rater, campaign, clips = tagged_study
    admin_client = Client()
    admin_client.force_login(admin)
    for clip in clips:  # the originals keep their metadata for admins: the marker is there to be found
        assert _leaks(_body(admin_client.get(reverse("annotation:clip-audio", args=[clip.pk]))))

    client = Client()
    client.force_login(rater)
    fetched: dict[str, bytes] = {}
    items = client.get("/api/assignment-items/").json()["results"]
    assert len(items) == len(clips) == 5
    fetched["items list"] = json_bytes = client.get("/api/assignment-items/").content
    for row in items:
        token = row["token"]
        fetched[f"item {token} page"] = client.get(reverse("ratings:item", args=[token])).content
        fetched[f"item {token} api"] = client.get(row["url"]).content
        audio_url = reverse("ratings:item_audio", args=[token])
        whole = client.get(audio_url)
        assert whole.status_code == 200 and whole["Content-Type"] == "audio/wav"
        fetched[f"item {token} audio"] = audio = _body(whole)
        assert audio[:4] == b"RIFF" and audio[8:12] == b"WAVE"
        chunk_kinds = [kind for kind in re.findall(rb"(fmt |data|LIST|bext|iXML|cue |id3 |ID3)", audio[:64])]
        assert chunk_kinds == [b"fmt ", b"data"], "the rater copy holds the samples and nothing else"
        for header in ("bytes=0-99", "bytes=100-", "bytes=-64"):
            ranged = client.get(audio_url, HTTP_RANGE=header)
            assert ranged.status_code == 206
            fetched[f"item {token} audio {header}"] = _body(ranged) + str(dict(ranged.items())).encode()
        head = client.head(audio_url)
        fetched[f"item {token} audio HEAD"] = str(dict(head.items())).encode() + _body(head)
        fetched[f"item {token} headers"] = str(dict(whole.items())).encode()
    assert json_bytes
    download = admin_client.get(reverse("ratings:campaign_workbook_download", args=[campaign.pk, rater.pk]))
    archive_bytes = _body(download)
    anonymous = Client()
    with zipfile.ZipFile(io.BytesIO(archive_bytes)) as archive:
        entries = archive.namelist()
        assert sum(name.startswith("audio/") for name in entries) == 5
        for name in entries:
            fetched[f"zip entry {name}"] = name.encode() + archive.read(name)
        for name in entries:
            if name.endswith("_url.xlsx"):
                links = re.findall(
                    rb"http://testserver(/ratings/workbook-audio/[^\"<]+)", zlib_free(archive.read(name))
                )
                assert len(links) == 5
                for link in links:
                    fetched[f"signed link {link[:40]!r}"] = _body(anonymous.get(link.decode()))
    leaking = [where for where, content in fetched.items() if _leaks(content)]
    assert leaking == [], leaking
    assert len(fetched) > 40


def zlib_free(xlsx: bytes) -> bytes:
    """An xlsx's parts unzipped and joined (hyperlink targets live in the sheet's relationships part)."""
    with zipfile.ZipFile(io.BytesIO(xlsx)) as package:
        return b"".join(package.read(part) for part in package.namelist())


def test_the_rater_copy_is_the_same_sound(tagged_study):
    """Stripping metadata must not change what is heard: same rate, channels and samples (WAV: bit for bit)."""
    _, rater, _, clips = tagged_study
    import tempfile
    import wave

    from tests.annotation.audio_helpers import ffmpeg_audio_facts, ffmpeg_pcm16

    for clip in Clip.objects.filter(pk__in=[clip.pk for clip in clips]):
        # The original as ffmpeg decodes it, the copy as the wave module reads it (neither is the product's reader).
        suffix = Path(clip.audio.name).suffix
        with clip.audio.open("rb") as original, tempfile.NamedTemporaryFile(suffix=suffix) as file:
            file.write(original.read())
            file.flush()
            source, source_pcm = ffmpeg_audio_facts(Path(file.name)), ffmpeg_pcm16(Path(file.name))
        with clip.rater_audio.open("rb") as copy, wave.open(io.BytesIO(copy.read())) as derived:
            facts = (derived.getframerate(), derived.getnchannels(), derived.getsampwidth())
            seconds = derived.getnframes() / derived.getframerate()
            derived_pcm = derived.readframes(derived.getnframes())
        assert facts == (source["sample_rate"], source["channels"], 2)
        assert abs(seconds - source["duration"]) <= 0.001
        if clip.audio.name.endswith(".wav"):
            assert derived_pcm == source_pcm
