"""bench/thin_http.py: the load generators' client sends what requests.Session sends, cookies included.

A recording server on loopback answers a scripted walk with the Set-Cookie headers Django writes (a session and
CSRF cookie set on a redirect, the messages cookie set with a quoted value then deleted); requests.Session and the
thin client walk it alike, and what the server received from each (request line, headers in order, body) must be
the same. The cookie rules are also checked on their own: a deleted cookie is not sent again, one set on a redirect
is kept.
"""

import gzip
import http.server
import threading

import pytest
import requests
from django.http import HttpResponse

from bench import thin_http


def _set_cookie_headers(build) -> list[str]:
    """The Set-Cookie headers Django writes for what `build(response)` does to a response."""
    response = HttpResponse()
    build(response)
    return [morsel.OutputString() for morsel in response.cookies.values()]


SCRIPT = {
    # path -> (status, Set-Cookie headers)
    "/start/": (
        302,
        _set_cookie_headers(
            lambda r: (
                r.set_cookie("sessionid", "s1", max_age=1209600, httponly=True, samesite="Lax"),
                r.set_cookie("csrftoken", "c1", max_age=31449600, samesite="Lax"),
            )
        ),
    ),
    "/message/": (302, _set_cookie_headers(lambda r: r.set_cookie("messages", "a, value; with ;", samesite="Lax"))),
    "/page/": (200, []),
    "/read-message/": (200, _set_cookie_headers(lambda r: r.delete_cookie("messages", samesite="Lax"))),
    "/rotate/": (302, _set_cookie_headers(lambda r: r.set_cookie("sessionid", "s2", max_age=1209600, httponly=True))),
    "/secure/": (200, _set_cookie_headers(lambda r: r.set_cookie("secureonly", "x", secure=True))),
}


class Recording(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    received: list = []

    def _answer(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        self.received.append((self.command, self.path, list(self.headers.items()), body))
        status, cookies = SCRIPT.get(self.path.split("?")[0], (200, []))
        payload = b'{"ok": true, "path": "%s"}' % self.path.encode()
        encoding = "gzip" if self.path == "/gzip/" else ""
        if encoding:
            payload = gzip.compress(payload)
        self.send_response(status)
        if encoding:
            self.send_header("Content-Encoding", encoding)
        for cookie in cookies:
            self.send_header("Set-Cookie", cookie)
        if status == 302:
            self.send_header("Location", "/page/")
        self.send_header("Content-Type", "application/json")
        if self.path == "/chunked/":
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for part in (payload[:5], payload[5:], b""):
                self.wfile.write(b"%x\r\n%s\r\n" % (len(part), part))
            return
        if self.path == "/close/":  # no length: the body runs to the connection's end
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(payload)
            self.close_connection = True
            return
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def do_GET(self):  # noqa: N802 - http.server's name
        self._answer()

    def do_POST(self):  # noqa: N802 - http.server's name
        self._answer()

    def log_message(self, *args):
        pass


@pytest.fixture
def server():
    Recording.received = []
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Recording)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}", Recording.received
    httpd.shutdown()
    httpd.server_close()


def walk(http, base_url: str) -> list:
    """A participant's kinds of requests: redirects that set cookies, forms, JSON, an empty POST, a query; bodies
    chunked, gzipped and to the connection's end. Returns what it read of the responses."""
    http.headers["X-Forwarded-For"] = "10.0.0.7"
    read = []

    def send(method, path, **options):
        response = http.request(method, base_url + path, timeout=30, allow_redirects=False, **options)
        read.append((response.status_code, response.headers.get("location"), response.json()))

    send("GET", "/start/?PROLIFIC_PID=abc&STUDY_ID=x&turkSubmitTo=https://www.mturk.com")
    send("GET", "/message/")
    send("GET", "/page/")
    send("GET", "/read-message/")
    send("GET", "/page/")
    send(
        "POST",
        "/form/",
        data={"csrfmiddlewaretoken": "tok en/+&", "side": "left", "version": "3"},
        headers={"Referer": base_url + "/form/"},
    )
    send(
        "POST",
        "/json/",
        json={"version": 2, "fields": {"side": "é"}},
        headers={"X-CSRFToken": http.cookies.get("csrftoken"), "Referer": base_url + "/"},
    )
    send("POST", "/alive/", headers={"X-CSRFToken": None, "referer": base_url})
    send("POST", "/empty-json/", json={})
    send("GET", "/chunked/")
    send("GET", "/gzip/")
    send("GET", "/close/")
    send("GET", "/rotate/")
    send("GET", "/secure/")
    send("GET", "/page/")
    return read


def test_the_thin_client_sends_what_requests_sends(server):
    base_url, received = server
    read_by_requests = walk(requests.Session(), base_url)
    by_requests = list(received)
    received.clear()
    read = walk(thin_http.Session(), base_url)
    assert len(by_requests) == 15
    for expected, sent in zip(by_requests, received, strict=True):
        assert sent == expected
    assert read == read_by_requests
    assert read[1] == (302, "/page/", {"ok": True, "path": "/message/"})
    assert read[10] == (200, None, {"ok": True, "path": "/gzip/"})


def test_a_deleted_cookie_is_not_sent_again_and_one_set_on_a_redirect_is_kept(server):
    base_url, received = server
    http = thin_http.Session()
    walk(http, base_url)
    cookies = [dict(headers).get("Cookie", "") for _, _, headers, _ in received]
    assert cookies[0] == ""
    assert cookies[1] == "sessionid=s1; csrftoken=c1"  # set on the 302 that answered /start/
    assert cookies[2] == 'sessionid=s1; csrftoken=c1; messages="a\\054 value\\073 with \\073"'
    assert "messages" not in cookies[4]  # deleted by /read-message/ (Max-Age=0, Expires in 1970)
    assert cookies[-1] == "sessionid=s2; csrftoken=c1"  # replaced in place; the Secure cookie not sent over HTTP
    assert http.cookies.get("messages") is None
    assert http.cookies.get("csrftoken") == "c1"


def test_cookies_it_cannot_scope_and_redirects_are_refused():
    jar = thin_http.CookieJar()
    with pytest.raises(ValueError):
        jar.receive("a=1; Domain=example.org; Path=/")
    with pytest.raises(ValueError):
        jar.receive("a=1; Path=/ratings/")
    with pytest.raises(ValueError):
        thin_http.Session().request("GET", "http://127.0.0.1:9/")
