"""Waiting for the requests the live server already took.

Closing a page does not stop a request the server took from it: the request runs on, into the database flush at
the end of a test (a 500 in the log) or into the next test's rows, or it lands after a test has decided that
nothing more will come."""

import threading
import time


def live_server_requests_finish(live_server, timeout: float = 30.0) -> None:
    """Return once every request thread of the live server has ended (or after `timeout` seconds)."""
    handler = live_server.thread.httpd.process_request_thread
    deadline = time.monotonic() + timeout
    # The server's request threads are daemons, which socketserver does not keep a list of: find them by target.
    for thread in threading.enumerate():
        if getattr(thread, "_target", None) == handler:
            thread.join(max(0.0, deadline - time.monotonic()))
