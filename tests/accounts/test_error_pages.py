"""Error pages people can see: the site's layout, what to do next, and never debug output with DEBUG off."""

import pytest
from django.test import Client, override_settings
from django.urls import path, reverse

from config.urls import urlpatterns as site_urlpatterns

pytestmark = pytest.mark.django_db
DEBUG_MARKERS = (
    "Traceback",
    "URLconf",
    "urlpatterns",
    "Django tried these URL patterns",
    "DEBUG = True",
    "settings.py",
)


def _boom(request):
    raise RuntimeError("secret internals: SELECT * FROM ratings_captionpair WHERE split = 'HI'")


urlpatterns = [*site_urlpatterns, path("boom/", _boom)]
handler400 = "config.errors.bad_request"
handler403 = "config.errors.permission_denied"
handler404 = "config.errors.page_not_found"
handler500 = "config.errors.server_error"


def _assert_site_page(response, *, status: int, says: str) -> str:
    html = response.content.decode()
    assert response.status_code == status
    assert '<header class="topbar">' in html and "Caption&nbsp;Eval" in html, "in the site's layout"
    assert f"Error {status}" in html and says in html
    assert "What you can do" in html
    for marker in DEBUG_MARKERS:
        assert marker not in html, marker
    return html


@override_settings(DEBUG=False, ROOT_URLCONF=__name__)
def test_404_for_a_rater_and_for_an_anonymous_visitor(make_user):
    client = Client()
    html = _assert_site_page(client.get("/no/such/page/"), status=404, says="This page does not exist")
    assert 'href="/accounts/login/"' in html
    client.force_login(make_user("rita", "rater"))
    html = _assert_site_page(
        client.get(reverse("ratings:item", args=["nosuchtoken"])), status=404, says="No such item in your open studies"
    )
    assert "Go to your ratings" in html and 'href="/ratings/"' in html


@override_settings(DEBUG=False, ROOT_URLCONF=__name__)
def test_403_says_which_role_the_page_needs(make_user):
    client = Client()
    client.force_login(make_user("rita2", "rater"))
    html = _assert_site_page(client.get(reverse("ratings:campaign_list")), status=403, says="You cannot open this page")
    assert "This page is for: admin" in html and "ask an administrator" in html


@override_settings(DEBUG=False, ROOT_URLCONF=__name__)
def test_500_in_the_layout_without_the_exception(make_user):
    client = Client(raise_request_exception=False)
    client.force_login(make_user("annie", "annotator"))
    html = _assert_site_page(client.get("/boom/"), status=500, says="Something went wrong on our side")
    assert "secret internals" not in html and "ratings_captionpair" not in html and "RuntimeError" not in html


@override_settings(DEBUG=False, ROOT_URLCONF=__name__)
def test_500_still_answers_when_the_layout_itself_fails(make_user, monkeypatch):
    from config import errors

    def broken_render(*args, **kwargs):
        raise RuntimeError("database is down")

    monkeypatch.setattr(errors, "render", broken_render)
    client = Client(raise_request_exception=False)
    response = client.get("/boom/")
    assert response.status_code == 500
    html = response.content.decode()
    assert "Something went wrong on our side" in html and "database is down" not in html


@override_settings(DEBUG=False)
def test_an_expired_form_gets_the_403_page_with_what_to_do(make_user):
    client = Client(enforce_csrf_checks=True)
    client.force_login(make_user("late", "rater"))
    html = _assert_site_page(client.post(reverse("ratings:home")), status=403, says="This form has expired")
    assert "reload the page" in html and "nothing was saved" in html
