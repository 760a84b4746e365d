"""The navigation bar: one list of entries per role, in one place, rendered by templates/base.html.

Every page shows the same bar for the same account: the entries of each role it holds, in role
order, without duplicates. To add a page, append a NavEntry to its role's list (or to several roles'
lists); `url_name` is reversed, and the entry is marked current on its own URL and on paths starting with
one of its `active_prefixes`. Pages do not override the bar.
"""

from dataclasses import dataclass

from django.urls import NoReverseMatch, reverse

from accounts.roles import ADMIN, ANNOTATOR, PARTICIPANT, RATER, REVIEWER, user_roles


@dataclass(frozen=True)
class NavEntry:
    label: str
    url_name: str
    active_prefixes: tuple[str, ...] = ()


#: every page under /metrics/ but "Evaluate a model", which has its own entry
METRICS_PREFIXES = tuple(
    f"/metrics/{section}/"
    for section in (
        "runs",
        "datasets",
        "campaigns",
        "captions",
        "systems",
        "dashboards",
        "plots",
        "annotation-agreement",
    )
)

NAVIGATION: dict[str, list[NavEntry]] = {
    RATER: [
        NavEntry("My ratings", "ratings:home", ("/ratings/items/", "/ratings/campaigns/", "/ratings/headphones/")),
    ],
    ANNOTATOR: [
        NavEntry("Annotate", "annotation:annotator_home", ("/annotate/campaigns/", "/annotate/tasks/")),
        NavEntry("API docs", "api-docs"),
    ],
    REVIEWER: [
        NavEntry("Review", "annotation:review_home", ("/review/", "/metrics/annotation-agreement/")),
        NavEntry("API docs", "api-docs"),
    ],
    ADMIN: [
        NavEntry("Review", "annotation:review_home", ("/review/", "/metrics/annotation-agreement/")),
        NavEntry("Annotation campaigns", "annotation:staff_campaigns", ("/annotate/staff/",)),
        NavEntry("Campaigns", "ratings:campaign_list", ("/ratings/staff/campaigns/",)),
        NavEntry("Crowd studies", "ratings:study_list", ("/ratings/staff/studies/",)),
        NavEntry("Raters", "ratings:rater_list", ("/ratings/staff/raters/",)),
        NavEntry("People", "accounts:people", ("/accounts/people/",)),
        NavEntry("Workbooks", "ratings:workbook_upload", ("/ratings/staff/workbooks/",)),
        NavEntry("Metrics", "metrics_bridge:home", METRICS_PREFIXES),
        NavEntry("Evaluate a model", "metrics_bridge:evaluate", ("/metrics/evaluate/",)),
        NavEntry("API docs", "api-docs"),
        NavEntry("Admin", "admin:index", ("/admin/",)),
    ],
}
ROLE_ORDER = (RATER, ANNOTATOR, REVIEWER, ADMIN)


def navigation_for(user, path: str = "", *, roles: set[str] | None = None) -> list[dict]:
    """The entries the user's roles give, in role order, each once: {"label", "url", "is_active"}.

    `roles`: the user's roles when the caller has them already (else they are read).
    """
    roles = user_roles(user) if roles is None else roles
    if PARTICIPANT in roles:
        return []  # a crowd participant sees only their study's pages, which lead the way themselves
    entries, seen = [], set()
    for role in ROLE_ORDER:
        if role not in roles:
            continue
        for entry in NAVIGATION.get(role, []):
            if entry.url_name in seen:
                continue
            try:
                url = reverse(entry.url_name)
            except NoReverseMatch:  # an app that is not installed
                continue
            seen.add(entry.url_name)
            is_active = path == url or any(path.startswith(prefix) for prefix in entry.active_prefixes)
            entries.append({"label": entry.label, "url": url, "is_active": is_active})
    return entries
