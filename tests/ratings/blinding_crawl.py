"""A crawler for the blinding test: everything a rater can reach, and what it must never contain.

`RaterCrawl` starts from the rater's entry points with the rater's session and follows every link,
script, stylesheet, form (POSTed empty), data-*-url, JSON URL and redirect it finds on this site,
reading every response: status, headers and body (HTML, JSON, JS, CSS, audio bytes). Static files
are read from the finders (tests do not collect them). `files_inspect` reads what a rater receives
outside the site: the workbook zip (entry names, every cell and hyperlink of every sheet, document
properties) and the signed audio links inside it. Every place a secret shows up becomes a finding.
"""

import io
import json
import re
import zipfile
from collections import Counter
from dataclasses import dataclass, field
from html.parser import HTMLParser
from urllib.parse import urljoin, urlsplit

import openpyxl
from django.conf import settings
from django.contrib.staticfiles import finders

MAX_REQUESTS = 600
# The least a GET answered 200 must hold to count as shown (a page has its layout; JSON at least "{}").
MIN_BODY_BYTES = {"text/html": 500, "application/json": 2}
SKIPPED_PATHS = ("/accounts/logout/",)
# Words that name who wrote a caption, the pair split or gold items. Checked in text, never in audio bytes.
FORBIDDEN_WORDS = re.compile(
    r"(?<!-)\b(human|machine|reference|candidate|gold|split|source_label|author_kind|systems?|is_gold)\b(?!-)", re.I
)  # (?<!-), (?!-): CSS fonts "system-ui", "-apple-system" are not captioning systems
SPLIT_CODES = re.compile(r"\b(HC|HI|HM|MM)\b")
# JSON keys a rater response must not have (ids, orientation, authorship).
FORBIDDEN_KEYS = {
    "id",
    "caption_id",
    "pair",
    "pair_id",
    "clip",
    "clip_id",
    "choice",
    "left_side",
    "a_on_left",
    "caption_order",
    "gold_choice",
    "split",
    "author_kind",
    "system",
    "source_label",
    "role",
    "source_key",
    "dataset",
    "external_id",
    "is_gold",
}


@dataclass
class Secrets:
    """What must not reach the rater: names (substrings, case-insensitive) and database ids (whole numbers)."""

    names: set[str]
    ids: set[int]

    def find(self, text: str, *, words: bool = True) -> list[str]:
        found = []
        lowered = text.lower()
        for name in self.names:
            if name.lower() in lowered:
                found.append(f"name {name!r}")
        for number in re.findall(r"(?<![\w.])(\d{5,9})(?![\w.])", text):
            if int(number) in self.ids:
                found.append(f"database id {number}")
        if words:
            found += [f"word {match.group(0)!r}" for match in FORBIDDEN_WORDS.finditer(text)]
            found += [f"split code {match.group(0)!r}" for match in SPLIT_CODES.finditer(text)]
        return found


class _Links(HTMLParser):
    def __init__(self):
        super().__init__()
        self.urls: list[tuple[str, str]] = []  # (method, url)
        self.form_stack: list[tuple[str, str]] = []

    def handle_starttag(self, tag, attrs):
        attributes = dict(attrs)
        for name, value in attributes.items():
            if not value:
                continue
            if name in ("href", "src") or (name.startswith("data-") and (name.endswith("url") or name == "data-src")):
                self.urls.append(("GET", value))
                if name.startswith("data-") and name.endswith("-url"):
                    self.urls.append(("POST", value))  # report endpoints: what do they answer to junk?
        if tag == "form":
            method = (attributes.get("method") or "get").upper()
            self.urls.append((method, attributes.get("action") or ""))


def walk_json(value, path="$"):
    """Yield (path, key, value) for every dict entry, recursively."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield path, key, item
            yield from walk_json(item, f"{path}.{key}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from walk_json(item, f"{path}[{index}]")


def _body(response) -> bytes:
    return b"".join(response.streaming_content) if response.streaming else response.content


@dataclass
class RaterCrawl:
    client: object
    secrets: Secrets
    findings: list[str] = field(default_factory=list)
    seen: set[tuple[str, str]] = field(default_factory=set)
    kinds: Counter = field(default_factory=Counter)
    statuses: Counter = field(default_factory=Counter)
    requests: int = 0

    def _finding(self, where: str, what: list[str]) -> None:
        self.findings += [f"{where}: {item}" for item in what]

    def run(self, *seeds: str) -> "RaterCrawl":
        queue = [("GET", seed, "seed") for seed in seeds]
        while queue:
            method, url, origin = queue.pop(0)
            if (method, url) in self.seen or any(url.startswith(path) for path in SKIPPED_PATHS):
                continue
            self.seen.add((method, url))
            if url.startswith(settings.STATIC_URL):
                self._static(url)
                continue
            if self.requests >= MAX_REQUESTS:
                raise AssertionError(f"the crawl went past {MAX_REQUESTS} requests: a loop?")
            self.requests += 1
            queue += [(m, u, url) for m, u in self._visit(method, url)]
        return self

    def _internal(self, base: str, target: str) -> str | None:
        if not target or target.startswith(("#", "mailto:", "javascript:", "data:")):
            return None
        absolute = urljoin(f"http://testserver{base}", target)
        parts = urlsplit(absolute)
        if parts.netloc != "testserver":
            self.findings.append(f"{base}: link off the site {target!r}")
            return None
        return parts.path + (f"?{parts.query}" if parts.query else "")

    def _visit(self, method: str, url: str) -> list[tuple[str, str]]:
        if method == "POST":
            response = (
                self.client.post(url, {})
                if "draft" not in url and "listened" not in url
                else (self.client.post(url, "{}", content_type="application/json"))
            )
        else:
            response = self.client.get(url)
        self.statuses[response.status_code] += 1
        where = f"{method} {url} ({response.status_code})"
        if response.status_code >= 500:
            self.findings.append(f"{where}: server error")
        headers = "\n".join(f"{name}: {value}" for name, value in response.items())
        self._finding(f"{where} headers", self.secrets.find(headers, words=False))
        next_urls: list[tuple[str, str]] = []
        if response.status_code in (301, 302, 303, 307, 308):
            target = self._internal(url, response["Location"])
            return [("GET", target)] if target else []
        content_type = response.get("Content-Type", "")
        body = _body(response)
        # Leaks are looked for in what was really shown: a link a rater follows must give its page (a 404 or an
        # empty body would pass every check below). Only a POST-only URL (405) and a sound served once per
        # attempt (410, the headphone screens) may refuse a GET.
        if method == "GET" and response.status_code not in (200, 206, 405, 410):
            self.findings.append(f"{where}: a link the rater can follow answered {response.status_code}")
        elif (
            method == "GET"
            and response.status_code == 200
            and len(body) < MIN_BODY_BYTES.get(content_type.split(";")[0], 1)
        ):
            self.findings.append(f"{where}: {len(body)} bytes of {content_type or 'no type'}: nothing was shown")
        if content_type.startswith("audio/"):
            self.kinds["audio"] += 1
            self._finding(where, self.secrets.find(body.decode("latin-1"), words=False))
            return []
        text = body.decode("utf-8", errors="replace")
        self._finding(where, self.secrets.find(text))
        if "html" in content_type:
            self.kinds["page"] += 1
            parser = _Links()
            parser.feed(text)
            for link_method, target in parser.urls:
                internal = self._internal(url, target) if target else url
                if internal:
                    next_urls.append((link_method, internal))
        elif "json" in content_type:
            self.kinds["json"] += 1
            try:
                data = json.loads(text)
            except ValueError:
                return []
            for path, key, value in walk_json(data):
                if key.lower() in FORBIDDEN_KEYS:
                    self.findings.append(f"{where}: JSON key {path}.{key}")
                if isinstance(value, str) and (value.startswith("/") or value.startswith("http://testserver/")):
                    internal = self._internal(url, value)
                    if internal:
                        next_urls.append(("GET", internal))
        else:
            self.kinds["other"] += 1
        return next_urls

    def _static(self, url: str) -> None:
        path = finders.find(url.removeprefix(settings.STATIC_URL).split("?")[0])
        if path is None:
            self.findings.append(f"{url}: static file not found")
            return
        self.kinds["static"] += 1
        with open(path, "rb") as handle:
            content = handle.read()
        if path.endswith((".js", ".css", ".html", ".json", ".txt", ".svg")):
            self._finding(url, self.secrets.find(content.decode("utf-8")))
        else:
            self._finding(url, self.secrets.find(content.decode("latin-1"), words=False))

    # --- files a rater receives outside the site -------------------------------------------------------

    def files_inspect(self, zip_bytes: bytes, *, name: str, anonymous_client) -> None:
        """The workbook zip an admin hands to the rater, and the signed links in its workbooks."""
        self.kinds["zip"] += 1
        self._finding(f"{name} (zip name)", self.secrets.find(name))
        with zipfile.ZipFile(io.BytesIO(zip_bytes)) as archive:
            for entry in archive.namelist():
                self._finding(f"{name}: entry {entry}", self.secrets.find(entry))
                if entry.endswith(".xlsx"):
                    self._workbook(archive.read(entry), where=f"{name}/{entry}", anonymous_client=anonymous_client)
                else:
                    self.kinds["audio file"] += 1
                    self._finding(
                        f"{name}/{entry}", self.secrets.find(archive.read(entry).decode("latin-1"), words=False)
                    )

    def _workbook(self, content: bytes, *, where: str, anonymous_client) -> None:
        self.kinds["workbook"] += 1
        with zipfile.ZipFile(io.BytesIO(content)) as package:
            for part in ("docProps/core.xml", "docProps/app.xml"):
                if part in package.namelist():
                    self._finding(f"{where}: {part}", self.secrets.find(package.read(part).decode(), words=False))
        book = openpyxl.load_workbook(io.BytesIO(content))
        for sheet in book.worksheets:
            self._finding(f"{where}: sheet name", self.secrets.find(sheet.title))
            for row in sheet.iter_rows():
                for cell in row:
                    if cell.value is not None:
                        self._finding(f"{where}!{sheet.title}!{cell.coordinate}", self.secrets.find(str(cell.value)))
                    if cell.hyperlink is not None:
                        target = cell.hyperlink.target or ""
                        self._finding(f"{where}: link {cell.coordinate}", self.secrets.find(target, words=False))
                        if target.startswith("http://testserver/"):
                            response = anonymous_client.get(target.removeprefix("http://testserver"))
                            self.kinds["signed audio link"] += 1
                            headers = "\n".join(f"{k}: {v}" for k, v in response.items())
                            self._finding(f"{where}: {target} headers", self.secrets.find(headers, words=False))
                            if response.status_code != 200:
                                self.findings.append(f"{where}: {target} answered {response.status_code}")
