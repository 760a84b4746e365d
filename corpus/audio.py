"""Serving clip audio over HTTP with byte ranges, which browsers need to seek in an <audio> element."""

import mimetypes
import re
from collections.abc import Callable

from django.http import FileResponse, HttpResponse, StreamingHttpResponse
from django.utils import timezone

from corpus.models import Clip

STREAM_CHUNK_BYTES = 64 * 1024
SINGLE_BYTE_RANGE = re.compile(r"^\s*bytes\s*=\s*(\d*)\s*-\s*(\d*)\s*$", re.IGNORECASE)
# Types browsers recognise; mimetypes does not know some of them on every system.
AUDIO_CONTENT_TYPES = {
    ".wav": "audio/wav",
    ".flac": "audio/flac",
    ".mp3": "audio/mpeg",
    ".ogg": "audio/ogg",
    ".oga": "audio/ogg",
}


class RangeNotSatisfiableError(Exception):
    pass


def byte_range_parse(header: str | None, size: int) -> tuple[int, int] | None:
    """The (first, last) byte of a single `Range: bytes=...` request, inclusive.

    None means: serve the whole file (no header, another unit, several ranges, or a malformed header,
    all of which RFC 9110 lets a server ignore). Raises RangeNotSatisfiableError when the range lies
    outside the file.
    """
    if not header:
        return None
    match = SINGLE_BYTE_RANGE.match(header)
    if match is None:
        return None
    first_text, last_text = match.groups()
    if not first_text and not last_text:
        return None
    if not first_text:  # suffix range: the last N bytes
        suffix_length = int(last_text)
        if suffix_length == 0 or size == 0:
            raise RangeNotSatisfiableError
        return max(size - suffix_length, 0), size - 1
    first = int(first_text)
    if last_text and int(last_text) < first:
        return None
    if first >= size:
        raise RangeNotSatisfiableError
    return first, min(int(last_text), size - 1) if last_text else size - 1


def audio_content_type(name: str) -> str:
    extension = "." + name.rsplit(".", 1)[-1].lower() if "." in name else ""
    return AUDIO_CONTENT_TYPES.get(extension) or mimetypes.guess_type(name)[0] or "application/octet-stream"


# on_served(first=..., count=..., size=..., started_at=...): what a response actually sent, once it is done.
ServedCallback = Callable[..., None]


def _file_part(handle, first: int, length: int, on_served: ServedCallback | None = None, size: int = 0):
    """The bytes [first, first + length) in chunks; `on_served` learns how many went out, even if the client
    stopped early (the server closes the iterator then), and when the first one did."""
    sent, started_at = 0, None
    try:
        handle.seek(first)
        remaining = length
        while remaining > 0:
            chunk = handle.read(min(STREAM_CHUNK_BYTES, remaining))
            if not chunk:
                break
            remaining -= len(chunk)
            started_at = started_at or timezone.now()
            yield chunk
            sent += len(chunk)  # counted once the server asked for the next chunk: this one was written
    finally:
        handle.close()
        if on_served is not None and sent:
            on_served(first=first, count=sent, size=size, started_at=started_at)


def stored_file_response(
    field_file,
    range_header: str | None,
    *,
    disclose_name: bool = True,
    on_served: ServedCallback | None = None,
    content_type: str | None = None,
) -> HttpResponse:
    """A stored file with byte ranges: 200 with the whole file, 206 with the requested bytes, or 416 when the
    range is outside the file.

    `disclose_name=False` (audio served to raters) sends no Content-Disposition, which would carry the
    stored file's name (FileResponse adds one from the file object). `on_served` is told which bytes
    were sent when the body is done (the rater's listening proof, ratings/services/listening.py).
    """
    storage, name = field_file.storage, field_file.name
    size = storage.size(name)
    content_type = content_type or audio_content_type(name)
    try:
        byte_range = byte_range_parse(range_header, size)
    except RangeNotSatisfiableError:
        response = HttpResponse(status=416)
        response["Content-Range"] = f"bytes */{size}"
        response["Accept-Ranges"] = "bytes"
        return response
    handle = storage.open(name, "rb")
    if byte_range is None and on_served is None:
        response = FileResponse(handle, content_type=content_type)
        response["Content-Length"] = str(size)
    elif byte_range is None:
        body = _file_part(handle, 0, size, on_served, size)
        response = StreamingHttpResponse(body, content_type=content_type)
        response["Content-Length"] = str(size)
    else:
        first, last = byte_range
        length = last - first + 1
        body = _file_part(handle, first, length, on_served, size)
        response = StreamingHttpResponse(body, status=206, content_type=content_type)
        response["Content-Range"] = f"bytes {first}-{last}/{size}"
        response["Content-Length"] = str(length)
    response["Accept-Ranges"] = "bytes"
    if not disclose_name and "Content-Disposition" in response:
        del response["Content-Disposition"]
    return response


def clip_audio_response(clip: Clip, range_header: str | None, *, disclose_name: bool = True) -> HttpResponse:
    """The clip's audio as uploaded (annotators, reviewers, admins), with byte ranges."""
    return stored_file_response(clip.audio, range_header, disclose_name=disclose_name)
