"""The system checks the metric commands run themselves (they set `requires_system_checks = []`).

Those commands start a temporary worker first and check afterwards, while it boots, and they check what
concerns computing scores: models, caches, files, signals, compatibility. Not the URL configuration,
templates, admin or static files (the web server's concern, checked when it starts), whose checks import
every view and take longer than the rest together.
"""

from django.core.checks import Tags
from django.core.management.base import BaseCommand

COMPUTE_CHECK_TAGS = [Tags.models, Tags.caches, Tags.files, Tags.signals, Tags.compatibility]


def check_for_computing(command: BaseCommand) -> None:
    """Raise SystemCheckError (the command stops) when a check of these tags finds an error."""
    command.check(tags=COMPUTE_CHECK_TAGS)
