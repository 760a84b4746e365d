"""A thin HTTP client for the load generators: the requests a `requests.Session` sends, at a fraction of its CPU.

The crowd benches run hundreds of simulated participants as threads of one process on the machine that serves
them, so every millisecond of client CPU competes with the server for its cores and with the other threads for the
GIL, and shows up in the latencies the bench records. A `requests.Session` spends most of its CPU per request on
things this bench has no use for: the environment's proxy and netrc look-ups (trust_env walks os.environ and stats
~/.netrc on every request), http.cookiejar's policy checks, hooks and adapters. This client sends the same bytes:
requests' default headers (User-Agent, Accept-Encoding, Accept, Connection), the session's headers merged with the
request's (case-insensitively, None dropping a header), the cookies the server set, a form or JSON body with the
same Content-Length and Content-Type, on urllib3's connection pool with requests' retry and timeout settings, and it
never follows redirects (the benches read each Location themselves).

Its cookie jar is exactly what this server needs and no more: cookies of one host on the root path (sessionid,
csrftoken, messages), kept from every response (redirects included), deleted by `Max-Age=0` or an `Expires` in the
past, not sent once expired, Secure ones not sent over plain HTTP, values sent back as they came (Django quotes
some). A Domain attribute or another path raises: such a cookie would need rules this jar leaves out.
"""

import json as jsonlib
import time
from http.cookiejar import http2time
from urllib.parse import urlencode, urlsplit

import requests.utils
import urllib3
from urllib3.util import Retry, Timeout

# requests' own defaults, read once: the User-Agent and Accept-Encoding it would send from this environment.
DEFAULT_HEADERS = dict(requests.utils.default_headers())
NO_BODY_METHODS = ("GET", "HEAD")
RETRIES = Retry(0, read=False)  # requests' default: no retries, a failure is an error of the run


class CookieJar:
    """The cookies one host set for the root path, in the order they were first set (http.cookiejar's order)."""

    def __init__(self):
        self._values: dict[str, str] = {}
        self._expires: dict[str, float] = {}  # name -> time.time() it expires at; absent: kept for the session
        self._secure: set[str] = set()

    def get(self, name: str, default=None):
        if name in self._values and not self._expired(name, time.time()):
            return self._values[name]
        return default

    def __contains__(self, name: str) -> bool:
        return self.get(name) is not None

    def set(self, name: str, value: str, **_attributes) -> None:
        """A session cookie made by the caller (requests' `cookies.set`; a domain given is this host's)."""
        self._values[name] = value
        self._expires.pop(name, None)
        self._secure.discard(name)

    def header(self, *, secure: bool) -> str:
        """The Cookie header's value for a request to this host ('' when nothing is to be sent)."""
        now = time.time()
        return "; ".join(
            f"{name}={value}"
            for name, value in self._values.items()
            if not self._expired(name, now) and (secure or name not in self._secure)
        )

    def receive(self, set_cookie: str) -> None:
        """One Set-Cookie header's cookie: stored, replaced or deleted."""
        pair, *attributes = set_cookie.split(";")
        name, equals, value = pair.partition("=")
        name, value = name.strip(), value.strip()
        if not equals or not name:
            raise ValueError(f"a cookie without a name or value: {set_cookie!r}")
        max_age = expires = None
        secure = False
        for attribute in attributes:
            key, _, argument = attribute.partition("=")
            key, argument = key.strip().lower(), argument.strip()
            if key == "max-age":
                try:
                    max_age = int(argument)
                except ValueError:
                    pass  # an unreadable Max-Age is ignored, as http.cookiejar does
            elif key == "expires":
                expires = http2time(argument)
            elif key == "secure":
                secure = True
            elif key == "domain" or (key == "path" and argument != "/"):
                raise ValueError(f"a cookie this jar cannot scope: {set_cookie!r}")
        now = time.time()
        # Max-Age wins over Expires (RFC 6265, and http.cookiejar); a moment not after now deletes the cookie.
        until = now + max_age if max_age is not None else expires
        if until is not None and until <= now:
            self._values.pop(name, None)
            self._expires.pop(name, None)
            self._secure.discard(name)
            return
        self._values[name] = value
        if until is None:
            self._expires.pop(name, None)
        else:
            self._expires[name] = until
        if secure:
            self._secure.add(name)
        else:
            self._secure.discard(name)

    def _expired(self, name: str, now: float) -> bool:
        until = self._expires.get(name)
        return until is not None and until <= now


class Response:
    """What the benches read of a response: status_code, headers (case-insensitive), content, text, json()."""

    __slots__ = ("status_code", "headers", "content")

    def __init__(self, raw: urllib3.BaseHTTPResponse):
        self.status_code = raw.status
        self.headers = raw.headers
        self.content = raw.data

    @property
    def text(self) -> str:
        # The server names its charset on pages; the rest (JSON, error bodies) is UTF-8 too.
        _, _, charset = self.headers.get("Content-Type", "").partition("charset=")
        return self.content.decode(charset.split(";")[0].strip() or "utf-8", "replace")

    def json(self):
        return jsonlib.loads(self.content)


class Session:
    """requests.Session's surface the benches use: `.headers`, `.cookies`, `.request(...)` without redirects."""

    def __init__(self):
        self.headers: dict[str, str] = dict(DEFAULT_HEADERS)
        self.cookies = CookieJar()
        self._pools: dict[tuple[str, int], urllib3.HTTPConnectionPool] = {}

    def request(
        self,
        method: str,
        url: str,
        *,
        data: dict | None = None,
        json=None,
        headers: dict | None = None,
        timeout: float | None = None,
        allow_redirects: bool = True,
    ) -> Response:
        if allow_redirects:
            raise ValueError("this client does not follow redirects: pass allow_redirects=False")
        url = requests.utils.requote_uri(url)  # what requests does to a URL before sending it
        parts = urlsplit(url)
        if parts.scheme != "http":
            raise ValueError(f"plain HTTP only: {url}")
        sent = self._headers(headers)
        cookie = self.cookies.header(secure=False)
        if cookie:
            sent["Cookie"] = cookie
        body, content_type = None, None
        if data:
            body, content_type = urlencode(data, doseq=True), "application/x-www-form-urlencoded"
        elif json is not None:
            body, content_type = jsonlib.dumps(json, allow_nan=False).encode("utf-8"), "application/json"
        if body is not None:
            sent["Content-Length"] = str(len(body))
        elif method not in NO_BODY_METHODS:
            sent["Content-Length"] = "0"
        if content_type and not any(name.lower() == "content-type" for name in sent):
            sent["Content-Type"] = content_type
        raw = self._pool(parts.hostname, parts.port or 80).urlopen(
            method,
            f"{parts.path or '/'}?{parts.query}" if parts.query else parts.path or "/",
            body=body,
            headers=sent,
            retries=RETRIES,
            redirect=False,
            assert_same_host=False,
            timeout=Timeout(connect=timeout, read=timeout),
            preload_content=True,
            decode_content=True,
        )
        for set_cookie in raw.headers.getlist("Set-Cookie"):
            self.cookies.receive(set_cookie)
        return Response(raw)

    def _headers(self, headers: dict | None) -> dict[str, str]:
        """The session's headers with the request's over them (names compared case-insensitively, a None value
        removes the header), as requests merges them."""
        merged = {name: value for name, value in self.headers.items() if value is not None}
        for name, value in (headers or {}).items():
            lowered = name.lower()
            for existing in [key for key in merged if key.lower() == lowered]:
                del merged[existing]
            if value is not None:
                merged[name] = value
        return merged

    def _pool(self, host: str, port: int) -> urllib3.HTTPConnectionPool:
        pool = self._pools.get((host, port))
        if pool is None:
            # requests' adapter: up to 10 connections per host, none waited for.
            pool = self._pools[(host, port)] = urllib3.HTTPConnectionPool(host, port, maxsize=10, block=False)
        return pool
