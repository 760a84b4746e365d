"""The home page by role, and every admin page of every model for a superuser."""

import pytest
from django.contrib import admin
from django.urls import reverse

from annotation.services.expert_annotations import expert_annotation_save
from demo.dataset import demo_corpus_ensure
from demo.judgements import demo_pairs_ensure


@pytest.fixture(autouse=True)
def fast_password_hashing(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def demo_corpus(db):
    dataset = demo_corpus_ensure()
    demo_pairs_ensure(dataset=dataset)
    return dataset


def signed_in(client, user):
    client.force_login(user)
    return client


def test_anonymous_home_goes_to_login(client, db):
    response = client.get("/")
    assert response.status_code == 302
    assert response["Location"] == "/accounts/login/?next=/"


def test_admin_sees_counts_and_admin_links(client, make_user, demo_corpus):
    page = signed_in(client, make_user("boss", staff=True)).get("/").content.decode()
    name_cell = f'<a href="/datasets/{demo_corpus.pk}/">demo</a>'  # the dataset's name leads to its page
    row = page[page.index(name_cell) : page.index("</tr>", page.index(name_cell))]
    cells = [cell.split("</td>")[0] for cell in row.split('<td class="num">')[1:]]
    from corpus.models import Caption, Clip
    from ratings.models import CaptionPair

    captions = Caption.objects.corpus().filter(clip__dataset=demo_corpus)  # HI pairs' copies are no corpus data
    expected = [
        Clip.objects.filter(dataset=demo_corpus).count(),
        0,
        captions.filter(role="reference").count(),
        captions.filter(role="candidate").count(),
        CaptionPair.objects.filter(clip__dataset=demo_corpus).count(),
        0,
    ]  # clips, with audio, references, candidates, pairs, annotations
    assert cells == [str(count) for count in expected] and expected[0] >= 40
    assert 'href="/metrics/"' in page  # the metrics card leads to the dashboards
    assert 'href="/datasets/new/"' in page  # a new dataset from audio
    assert 'href="/admin/"' in page
    assert 'href="/api/docs/"' in page


def test_annotator_sees_datasets_but_no_admin_links(client, make_user, demo_corpus):
    page = signed_in(client, make_user("ann", "annotator")).get("/").content.decode()
    assert f'<a href="/datasets/{demo_corpus.pk}/">demo</a>' in page
    assert "/admin/" not in page
    assert "/datasets/new/" not in page and "/import/" not in page  # creating and importing are for admins
    assert "Expert annotations" in page
    assert "/api/metric-runs/" not in page and 'href="/metrics/"' not in page  # no card to a page they cannot use


def test_rater_sees_entry_point_but_no_corpus(client, make_user, demo_corpus):
    page = signed_in(client, make_user("rat", "rater")).get("/").content.decode()
    assert ">demo</a>" not in page
    assert "Candidates" not in page
    assert "/api/metric-runs/" not in page
    assert f'href="{reverse("ratings:home")}"' in page
    assert "/admin/" not in page


def test_user_without_role_is_told_so(client, make_user, db):
    page = signed_in(client, make_user("someone")).get("/").content.decode()
    assert "Your account has no role yet" in page
    assert "api/docs" not in page.split("<main>")[1]


def test_every_admin_page_renders(client, make_user, demo_corpus):
    """Changelist (with a search, to prove search_fields resolve), add page and one change page per model."""
    annotator = make_user("ann", "annotator")
    clip = demo_corpus.clips.first()
    expert_annotation_save(
        clip=clip,
        annotator=annotator,
        events=[{"label": "beep", "attributes": ["loud"]}, {"label": "hum"}],
        relations=[{"first_event": "beep", "second_event": "hum", "kind": "before"}],
    )
    superuser = make_user("super", staff=True)
    superuser.is_superuser = True
    superuser.save()
    client.force_login(superuser)
    for model, model_admin in admin.site._registry.items():
        info = model._meta.app_label, model._meta.model_name
        changelist = reverse("admin:{}_{}_changelist".format(*info))
        response = client.get(changelist, {"q": "a"} if model_admin.search_fields else {})
        assert response.status_code == 200, changelist
        if model_admin.has_add_permission(response.wsgi_request):
            assert client.get(reverse("admin:{}_{}_add".format(*info))).status_code == 200, model
        instance = model.objects.first()
        if instance is not None:
            assert client.get(reverse("admin:{}_{}_change".format(*info), args=[instance.pk])).status_code == 200, model


def test_thumbs_rating_admin_shows_computed_overall(client, make_user, demo_corpus):
    from decimal import Decimal

    from ratings.models import ThumbsRating

    rater = make_user("rat", "rater")
    caption = demo_corpus.clips.first().captions.first()
    from ratings.models import Campaign

    campaign = Campaign.objects.create(name="adm", dataset=demo_corpus, task_type="thumbs")
    rating = ThumbsRating.objects.create(
        rater=rater, caption=caption, campaign=campaign, precision=5, recall=4, conciseness=Decimal("-0.5")
    )
    user = make_user("super", staff=True)
    user.is_superuser = True
    user.save()
    client.force_login(user)
    page = client.get(reverse("admin:ratings_thumbsrating_change", args=[rating.pk])).content.decode()
    assert '<div class="readonly">4.0</div>' in page  # (5 + 4) / 2 - 0.5
    assert 'name="overall"' not in page
