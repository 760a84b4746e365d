"""Serving clip audio over HTTP with byte ranges, which browsers need to seek in an <audio> element."""

import mimetypes
import re
from collections.abc import Iterator

from django.http import FileResponse, HttpResponse, StreamingHttpResponse

from annotation.models import Clip

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


def _file_part(handle, first: int, length: int) -> Iterator[bytes]:
    try:
        handle.seek(first)
        remaining = length
        while remaining > 0:
            chunk = handle.read(min(STREAM_CHUNK_BYTES, remaining))
            if not chunk:
                break
            remaining -= len(chunk)
            yield chunk
    finally:
        handle.close()


def clip_audio_response(clip: Clip, range_header: str | None, *, disclose_name: bool = True) -> HttpResponse:
    """200 with the whole file, 206 with the requested bytes, or 416 when the range is outside the file.

    `disclose_name=False` (audio served to raters) sends no Content-Disposition, which would carry the
    stored file's name (FileResponse adds one from the file object).
    """
    storage, name = clip.audio.storage, clip.audio.name
    size = storage.size(name)
    content_type = audio_content_type(name)
    try:
        byte_range = byte_range_parse(range_header, size)
    except RangeNotSatisfiableError:
        response = HttpResponse(status=416)
        response["Content-Range"] = f"bytes */{size}"
        response["Accept-Ranges"] = "bytes"
        return response
    handle = storage.open(name, "rb")
    if byte_range is None:
        response = FileResponse(handle, content_type=content_type)
        response["Content-Length"] = str(size)
    else:
        first, last = byte_range
        length = last - first + 1
        response = StreamingHttpResponse(_file_part(handle, first, length), status=206, content_type=content_type)
        response["Content-Range"] = f"bytes {first}-{last}/{size}"
        response["Content-Length"] = str(length)
    response["Accept-Ranges"] = "bytes"
    if not disclose_name and "Content-Disposition" in response:
        del response["Content-Disposition"]
    return response
