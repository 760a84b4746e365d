"""Closing a tab whose device is offline, as a real browser would.

Chromium's offline emulation (``context.set_offline``) belongs to the page. The editors send a last keepalive
save on ``pagehide``, and that request can outlive the closing page and reach the server after all (a CI run saw
it land). On a device that is really offline the last attempt fails, which is the case these tests are about, so
it is made to fail here before the tab closes. The last attempt itself is tested online, in
test_annotation_draft_merge.py."""


def close_while_offline(page) -> None:
    page.evaluate("() => { window.fetch = () => Promise.reject(new TypeError('Failed to fetch')); }")
    page.close()
