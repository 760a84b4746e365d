"""A thin HTTP client for the load generators: the requests a `requests.Session` sends, at a fraction of its CPU.

The crowd benches run hundreds of simulated participants as threads of one process on the machine that serves
them, so every millisecond of client CPU competes with the server for its cores and with the other threads for the
GIL, and shows up in the latencies the bench records. A `requests.Session` spends most of its CPU per request on
things this bench has no use for: the environment's proxy and netrc look-ups (trust_env walks os.environ and stats
~/.netrc on every request), http.cookiejar's policy checks, hooks and adapters; below it urllib3 and http.client
parse every response's headers with the email package. This client sends the same bytes: requests' default headers
(User-Agent, Accept-Encoding, Accept, Connection), the session's headers merged with the request's
(case-insensitively, None dropping a header), the cookies the server set, a form or JSON body with the same
Content-Length and Content-Type, in HTTP/1.1 on a socket of its own (kept while the server keeps it), with the
timeout for the connect and each read, no retry, and it never follows redirects (the benches read each Location
themselves). It reads Content-Length, chunked and to-the-end bodies and undoes gzip and deflate, as requests does.

Its cookie jar is exactly what this server needs and no more: cookies of one host on the root path (sessionid,
csrftoken, messages), kept from every response (redirects included), deleted by `Max-Age=0` or an `Expires` in the
past, not sent once expired, Secure ones not sent over plain HTTP, values sent back as they came (Django quotes
some). A Domain attribute or another path raises: such a cookie would need rules this jar leaves out.
"""

import json as jsonlib
import select
import socket
import time
import zlib
from http.cookiejar import http2time
from urllib.parse import urlencode, urlsplit

import requests.utils

# requests' own defaults, read once: the User-Agent and Accept-Encoding it would send from this environment.
DEFAULT_HEADERS = dict(requests.utils.default_headers())
NO_BODY_METHODS = ("GET", "HEAD")


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


class Headers(dict):
    """A response's headers by lower-cased name (repeated ones joined with ", ", as urllib3 does), looked up in
    any case; `getlist` gives a repeated header's values one by one (Set-Cookie)."""

    def __init__(self):
        super().__init__()
        self.repeated: dict[str, list[str]] = {}

    def add(self, name: str, value: str) -> None:
        key = name.lower()
        values = self.repeated.get(key)
        if values is None:
            self.repeated[key] = [value]
            dict.__setitem__(self, key, value)
        else:
            values.append(value)
            dict.__setitem__(self, key, ", ".join(values))

    def __getitem__(self, name: str) -> str:
        return super().__getitem__(name.lower())

    def __contains__(self, name) -> bool:
        return super().__contains__(name.lower())

    def get(self, name: str, default=None):
        return super().get(name.lower(), default)

    def getlist(self, name: str) -> list[str]:
        return self.repeated.get(name.lower(), [])


class Response:
    """What the benches read of a response: status_code, headers (case-insensitive), content, text, json()."""

    __slots__ = ("status_code", "headers", "content", "_text")

    def __init__(self, status_code: int, headers: Headers, content: bytes):
        self.status_code = status_code
        self.headers = headers
        self.content = content
        self._text = None

    @property
    def text(self) -> str:
        # Decoded once: a page's text is read by several regexes (its files, its form, its captions).
        if self._text is None:
            # The server names its charset on pages; the rest (JSON, error bodies) is UTF-8 too.
            _, _, charset = self.headers.get("Content-Type", "").partition("charset=")
            self._text = self.content.decode(charset.split(";")[0].strip() or "utf-8", "replace")
        return self._text

    def json(self):
        return jsonlib.loads(self.content)


class Connection:
    """HTTP/1.1 to one host on one socket, opened when needed and kept while the server keeps it (gunicorn's sync
    workers close it after every response). What http.client and urllib3 do per request in Python (an email
    parser for the headers, header validation, pool bookkeeping) was most of the CPU left after requests."""

    def __init__(self, host: str, port: int):
        self.address = (host, port)
        self.host_header = host if port == 80 else f"{host}:{port}"
        self.sock: socket.socket | None = None
        self.reader = None

    def exchange(self, method: str, target: str, headers: dict[str, str], body: bytes | None, timeout):
        """Send one request and read its response: (status, headers, decoded body)."""
        if self.sock is not None and _dropped(self.sock):
            self.close()  # the server closed a kept connection meanwhile, as urllib3 checks before reusing one
        if self.sock is None:
            self.sock = socket.create_connection(self.address, timeout=timeout)
            self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # as urllib3 sets it
            self.reader = self.sock.makefile("rb")
        else:
            self.sock.settimeout(timeout)
        lines = [f"{method} {target} HTTP/1.1", f"Host: {self.host_header}"]
        lines.extend(f"{name}: {value}" for name, value in headers.items())
        head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
        try:
            self.sock.sendall(head + body if body else head)
            status, response_headers, content, keep = self._read(method)
        except BaseException:
            self.close()
            raise
        if not keep:
            self.close()
        return status, response_headers, content

    def _read(self, method: str):
        reader = self.reader
        status_line = reader.readline(65537)
        if not status_line:
            raise ConnectionError("the server closed the connection without a response")
        version, status, _ = status_line.decode("latin-1").split(" ", 2)
        status = int(status)
        headers = Headers()
        while True:
            line = reader.readline(65537)
            if line in (b"\r\n", b"\n", b""):
                break
            name, _, value = line.decode("latin-1").partition(":")
            headers.add(name.strip(), value.strip())
        keep = version == "HTTP/1.1" and headers.get("Connection", "").lower() != "close"
        if method == "HEAD" or status in (204, 304) or 100 <= status < 200:
            content = b""
        elif headers.get("Transfer-Encoding", "").lower() == "chunked":
            content = _chunks(reader)
        elif "Content-Length" in headers:
            length = int(headers["Content-Length"])
            content = reader.read(length)
            if len(content) != length:
                raise ConnectionError(f"the response ended after {len(content)} of {length} bytes")
        else:
            content, keep = reader.read(), False  # the body runs to the connection's end
        encoding = headers.get("Content-Encoding", "").lower()
        if encoding in ("gzip", "x-gzip"):
            content = zlib.decompress(content, 16 + zlib.MAX_WBITS)
        elif encoding == "deflate":
            try:
                content = zlib.decompress(content)
            except zlib.error:
                content = zlib.decompress(content, -zlib.MAX_WBITS)  # raw deflate, as urllib3 accepts too
        return status, headers, content, keep

    def close(self) -> None:
        if self.sock is not None:
            self.reader.close()
            self.sock.close()
        self.sock = self.reader = None


def _chunks(reader) -> bytes:
    parts = []
    while True:
        size = int(reader.readline(65537).split(b";")[0].strip(), 16)
        if size == 0:
            while reader.readline(65537) not in (b"\r\n", b"\n", b""):
                pass  # trailers
            return b"".join(parts)
        parts.append(reader.read(size))
        reader.readline(65537)


def _dropped(sock: socket.socket) -> bool:
    """A kept connection the server closed (or wrote to unasked): readable before a request is sent."""
    return bool(select.select([sock], [], [], 0)[0])


class Session:
    """requests.Session's surface the benches use: `.headers`, `.cookies`, `.request(...)` without redirects."""

    def __init__(self):
        self.headers: dict[str, str] = dict(DEFAULT_HEADERS)
        self.cookies = CookieJar()
        self._connections: dict[tuple[str, int], Connection] = {}

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
            body, content_type = urlencode(data, doseq=True).encode("utf-8"), "application/x-www-form-urlencoded"
        elif json is not None:
            body, content_type = jsonlib.dumps(json, allow_nan=False).encode("utf-8"), "application/json"
        if body is not None:
            sent["Content-Length"] = str(len(body))
        elif method not in NO_BODY_METHODS:
            sent["Content-Length"] = "0"
        if content_type and not any(name.lower() == "content-type" for name in sent):
            sent["Content-Type"] = content_type
        target = f"{parts.path or '/'}?{parts.query}" if parts.query else parts.path or "/"
        status, response_headers, content = self._connection(parts.hostname, parts.port or 80).exchange(
            method, target, sent, body, timeout
        )
        for set_cookie in response_headers.getlist("Set-Cookie"):
            self.cookies.receive(set_cookie)
        return Response(status, response_headers, content)

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

    def _connection(self, host: str, port: int) -> Connection:
        connection = self._connections.get((host, port))
        if connection is None:
            connection = self._connections[(host, port)] = Connection(host, port)
        return connection
