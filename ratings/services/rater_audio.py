"""What a rater's browser gets as an item's audio: the clip's rater copy, never the uploaded file.

The rater copy (corpus/services/rater_audio.py) holds the samples and nothing else, under a random
storage key. On the rating pages it is streamed by the app under the item's own URL, with byte ranges and
without a file name, also when storage is S3: every response tells the listening record what it sent
(ratings/services/listening.py), which is how "listened" is proven. Signed workbook links (raters working
offline, no listening rule) may instead send the browser to a short-lived pre-signed S3 URL of the copy.
"""

import re

from django.conf import settings
from django.http import HttpResponse

from corpus.audio import stored_file_response
from corpus.services.rater_audio import clip_rater_audio_ensure
from ratings.models import AssignmentItem
from ratings.services.listening import audio_served_record

RANDOM_AUDIO_KEY = re.compile(r"^rater-audio/[0-9a-f]{32}\.wav$")
RATER_AUDIO_TYPE = "audio/wav"


def item_audio_response(*, item: AssignmentItem, range_header: str | None, head: bool = False) -> HttpResponse:
    """The item's audio (200, 206 or 416), each byte sent recorded for the item; raises FileNotFoundError."""
    audio = clip_rater_audio_ensure(clip=item.clip)

    def recorded(*, first: int, count: int, size: int, started_at) -> None:
        audio_served_record(item=item, file_name=audio.name, size=size, first=first, count=count, started_at=started_at)

    response = stored_file_response(
        audio,
        range_header,
        disclose_name=False,
        on_served=None if head else recorded,
        content_type=RATER_AUDIO_TYPE,
    )
    response["Cache-Control"] = "private, max-age=3600"
    return response


def rater_audio_redirect_url(clip) -> str | None:
    """A short-lived pre-signed URL of the clip's rater copy on S3, or None when the app must stream it."""
    audio = clip_rater_audio_ensure(clip=clip)
    if not settings.USES_S3_STORAGE or not RANDOM_AUDIO_KEY.match(audio.name):
        return None
    return audio.storage.url(
        audio.name,
        parameters={"ResponseContentDisposition": "inline", "ResponseCacheControl": "private, no-store"},
        expire=settings.RATER_AUDIO_URL_SECONDS,
    )
