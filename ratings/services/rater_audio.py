"""Where a rater's browser gets an item's audio from, without learning anything about the clip.

Local storage: the file is streamed by the item's own URL (views.item_audio), without a file name.
S3: the browser is redirected to a pre-signed URL that expires after RATER_AUDIO_URL_SECONDS and
forces `Content-Disposition: inline` (no stored name). Only random object keys (what
annotation.models.clip_audio_path gives every upload now) are handed out like that; an older key
made from the clip's file name is streamed through the app instead, so it never reaches the rater.
"""

import re

from django.conf import settings

from annotation.models import Clip

RANDOM_AUDIO_KEY = re.compile(r"^audio/[0-9a-f]{32}(\.[a-z0-9]{1,7})?$")


def rater_audio_redirect_url(clip: Clip) -> str | None:
    """A short-lived pre-signed URL for the clip's audio, or None when the app must stream it itself."""
    if not settings.USES_S3_STORAGE or not RANDOM_AUDIO_KEY.match(clip.audio.name):
        return None
    return clip.audio.storage.url(
        clip.audio.name,
        parameters={"ResponseContentDisposition": "inline", "ResponseCacheControl": "private, no-store"},
        expire=settings.RATER_AUDIO_URL_SECONDS,
    )
