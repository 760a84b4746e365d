"""Where a workbook's record IDs link to: a mapping file (record ID -> URL) or signed, expiring app URLs.

A signed link names one assignment item (by its random token) and an expiry time, signed with the
project's SECRET_KEY, so a rater can play the clip from the workbook without signing in, only that
clip, only until it expires, and without the link saying which clip it is.
"""

import csv
import io
import json
import time
from pathlib import Path
from urllib.parse import urlparse

from django.core import signing

AUDIO_LINK_SALT = "ratings.workbook-audio"
DEFAULT_LINK_DAYS = 60


class LinkMapError(ValueError):
    """The mapping file cannot be used; the message names the file and the offending line or key."""


def audio_token_make(*, item_token: str, days: int = DEFAULT_LINK_DAYS) -> str:
    """A signed link to one assignment item's audio (the item's random token, never a clip id)."""
    expires = int(time.time()) + days * 86400
    return signing.dumps({"item": item_token, "expires": expires}, salt=AUDIO_LINK_SALT, compress=True)


def audio_token_read(token: str) -> str | None:
    """The item token a link grants, or None when it is forged, damaged or expired."""
    try:
        payload = signing.loads(token, salt=AUDIO_LINK_SALT)
    except signing.BadSignature:
        return None
    if not isinstance(payload, dict) or payload.get("expires", 0) < time.time():
        return None
    item_token = payload.get("item")
    return item_token if isinstance(item_token, str) else None


def _url_checked(url, *, where: str) -> str:
    if not isinstance(url, str) or urlparse(url.strip()).scheme not in {"http", "https"}:
        raise LinkMapError(f"{where}: {url!r} is not an http(s) URL")
    return url.strip()


def link_map_load(path: Path) -> dict[str, str]:
    """Read a record ID -> URL mapping from JSON (an object, or a list of {record_id, url}) or CSV
    (columns `record_id,url`, with or without that header)."""
    text = path.read_text(encoding="utf-8-sig")
    mapping: dict[str, str] = {}
    if path.suffix.lower() == ".json":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as error:
            raise LinkMapError(f"{path}: not valid JSON ({error})") from None
        if isinstance(data, dict):
            pairs = [(str(key), value, f"{path} key {key!r}") for key, value in data.items()]
        elif isinstance(data, list) and all(isinstance(entry, dict) for entry in data):
            pairs = [
                (str(entry.get("record_id", "")), entry.get("url"), f"{path} item {index}")
                for index, entry in enumerate(data)
            ]
        else:
            raise LinkMapError(f"{path}: expected an object {{record_id: url}} or a list of {{record_id, url}}")
    else:
        rows = list(csv.reader(io.StringIO(text)))
        if rows and [cell.strip().lower() for cell in rows[0][:2]] == ["record_id", "url"]:
            rows = [None, *rows[1:]]
        pairs = []
        for number, row in enumerate(rows, start=1):
            if row is None or not any(cell.strip() for cell in row):
                continue
            if len(row) < 2:
                raise LinkMapError(f"{path} line {number}: expected record_id,url")
            pairs.append((row[0], row[1], f"{path} line {number}"))
    for record_id, url, where in pairs:
        if not record_id.strip():
            raise LinkMapError(f"{where}: empty record_id")
        mapping[record_id.strip()] = _url_checked(url, where=where)
    return mapping
