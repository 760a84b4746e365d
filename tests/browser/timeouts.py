"""How long browser tests wait for a page.

Generous: pages compute on a loaded 2-core machine (CI runs one pass with both cores busy), and a deadline only
bounds how long a real failure takes to report. Set on a context, it holds for every tab opened in it."""

PAGE_WAIT_MS = 90_000


def waits_generous(context) -> None:
    """Every page of `context` (a Playwright BrowserContext) waits up to PAGE_WAIT_MS for actions and navigation."""
    context.set_default_timeout(PAGE_WAIT_MS)
    context.set_default_navigation_timeout(PAGE_WAIT_MS)
