"""`python manage.py demo`: a simulated study that shows what the platform is for, built in about a minute.

What it builds is demo/build.py's; this command parses the options, prints the accounts and where to sign in.
"""

import contextlib
import os
import socket
import time

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from demo.build import DEMO_METRICS, DemoBuildError, DemoStudyBuilder
from demo.dataset import demo_accounts_ensure
from metrics_bridge.scoring import registry

#: the address ./scripts/run serves on, written by it at each start (relative to the project folder)
SERVED_URL_FILE = "logs/served-url"


class Command(BaseCommand):
    help = (
        "Build a simulated study on the `demo` dataset (synthesized clips, seven simulated captioning systems, "
        "twelve simulated raters, three simulated annotators and gold annotations), the accounts "
        "admin/annotator/reviewer/rater, a finished metric run and the dashboards. Safe to run again."
    )

    def add_arguments(self, parser):
        parser.add_argument("--reset-passwords", action="store_true", help="Give existing demo accounts new passwords")
        parser.add_argument("--no-metrics", action="store_true", help="Skip the metric run and the dashboards")
        parser.add_argument(
            "--metrics",
            default=",".join(DEMO_METRICS),
            help="Comma-separated metrics of the demo's run (default: %(default)s); FENSE is the slowest",
        )
        parser.add_argument(
            "--url",
            default=app_url(),
            help="Address of the app, printed for signing in (default: from HOST and PORT, as ./scripts/run "
            "serves: %(default)s)",
        )
        parser.add_argument(
            "--no-sign-in",
            action="store_true",
            help="Do not print where to sign in (./scripts/run says it once the server answers)",
        )

    def handle(
        self, *args, reset_passwords: bool, no_metrics: bool, metrics: str, url: str, no_sign_in: bool, **options
    ):
        self.metric_names = [name.strip() for name in metrics.split(",") if name.strip()]
        unknown = sorted(set(self.metric_names) - set(registry.all_metric_names()))
        if unknown:
            raise CommandError(f"unknown metric(s): {', '.join(unknown)}")
        started = time.monotonic()
        accounts = demo_accounts_ensure(reset_passwords=reset_passwords)
        try:
            self._build(no_metrics=no_metrics, started=started)
        except BaseException:
            # The passwords were just set: a failed build must not take them with it (the next start would
            # only say "unchanged").
            self.stdout.write("The demo study could not be built (the error follows); its accounts exist:")
            self.stdout.write(accounts_table(accounts))
            raise
        self.stdout.write("")
        self.stdout.write(accounts_table(accounts))
        if any(not account.password for account in accounts):
            self.stdout.write("Unchanged passwords are not shown; --reset-passwords gives those accounts new ones.")
        if not no_sign_in:
            self.stdout.write(f"Sign in at {url}")

    def _build(self, *, no_metrics: bool, started: float) -> None:
        builder = DemoStudyBuilder(metric_names=self.metric_names, say=self.stdout.write)
        try:
            builder.build(no_metrics=no_metrics)
        except DemoBuildError as error:
            raise CommandError(str(error)) from None
        self.stdout.write(f"built in {time.monotonic() - started:.0f} s")


def app_url() -> str:
    """Where ./scripts/run serves the app: http://HOST:PORT/ from the environment when either is set, else the
    address it last served on (SERVED_URL_FILE, written at each start), else 127.0.0.1:8000. A server on every
    address is reached by the machine's name."""
    if not (os.environ.get("HOST") or os.environ.get("PORT")):
        with contextlib.suppress(OSError):
            served = (settings.BASE_DIR / SERVED_URL_FILE).read_text().strip()
            if served.startswith("http"):
                return served
    host, port = os.environ.get("HOST") or "127.0.0.1", os.environ.get("PORT") or "8000"
    if host in ("0.0.0.0", "::"):
        host = socket.gethostname()
    return f"http://[{host}]:{port}/" if ":" in host else f"http://{host}:{port}/"


def accounts_table(accounts) -> str:
    """The demo accounts as a plain-text table with headings (what ./scripts/run prints)."""
    rows = [("Account", "Roles", "Password")] + [
        (account.username, ", ".join(account.roles), account.password or "(unchanged)") for account in accounts
    ]
    widths = [max(len(row[column]) for row in rows) for column in range(3)]

    def line(row) -> str:
        return "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()

    rule = "  ".join("-" * width for width in widths)
    return "\n".join([line(rows[0]), rule, *(line(row) for row in rows[1:])])
