"""Who sees and who deletes expert annotations: one selector (annotation/selectors_expert.py) and one service
(annotation/services/expert_annotations.py, expert_annotation_delete), which the API applies as they decide."""

import pytest
from rest_framework.test import APIClient

from annotation.models import ExpertAnnotation
from annotation.selectors_expert import expert_annotations_visible_to
from annotation.services.expert_annotations import (
    ExpertAnnotationError,
    ExpertAnnotationPermissionError,
    expert_annotation_delete,
)
from corpus.models import Clip, Dataset
from tests.annotation.workspace_data import workspace_build

pytestmark = pytest.mark.django_db

EVENTS = [{"label": "rain", "sources": ["sky"], "attributes": []}]


@pytest.fixture
def people(make_user, settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    dataset = Dataset.objects.create(name="expert")
    clips = [Clip.objects.create(dataset=dataset, external_id=f"c{index}") for index in range(3)]
    owner, other = make_user("owner", "annotator"), make_user("other", "annotator")
    reviewer, admin = make_user("judge", "reviewer"), make_user("boss", staff=True)
    rows = {
        status: ExpertAnnotation.objects.create(clip=clip, annotator=owner, status=status)
        for clip, status in zip(clips, ("draft", "submitted", "gold"), strict=True)
    }
    return owner, other, reviewer, admin, rows


def _api(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user=user)
    return client


def test_each_sees_what_the_rule_gives(people):
    owner, other, reviewer, admin, rows = people
    visible = {
        user.username: sorted(expert_annotations_visible_to(user=user).values_list("status", flat=True))
        for user in (owner, other, reviewer, admin)
    }
    assert visible == {
        "owner": ["draft", "gold", "submitted"],
        "other": [],
        "judge": ["gold", "submitted"],  # never a draft of someone else
        "boss": ["draft", "gold", "submitted"],
    }
    listed = _api(reviewer).get("/api/expert-annotations/").json()["results"]
    assert sorted(row["status"] for row in listed) == visible["judge"]


def test_someone_else_may_not_delete_it(people):
    owner, other, reviewer, _, rows = people
    with pytest.raises(ExpertAnnotationPermissionError, match="only the annotator or an admin"):
        expert_annotation_delete(annotation=rows["submitted"], user=reviewer)
    response = _api(reviewer).delete(f"/api/expert-annotations/{rows['submitted'].pk}/")
    # A reviewer sees the submission but holds no delete role: refused before the rule is asked.
    assert response.status_code == 403
    assert ExpertAnnotation.objects.filter(pk=rows["submitted"].pk).exists()


def test_gold_is_kept_from_its_annotator_but_not_from_an_admin(people):
    owner, _, _, admin, rows = people
    gold = rows["gold"]
    with pytest.raises(ExpertAnnotationError, match=f"annotation {gold.pk} is gold and cannot be deleted"):
        expert_annotation_delete(annotation=gold, user=owner)
    response = _api(owner).delete(f"/api/expert-annotations/{gold.pk}/")
    assert (response.status_code, response.json()) == (
        400,
        {"detail": f"annotation {gold.pk} is gold and cannot be deleted"},
    )
    assert _api(admin).delete(f"/api/expert-annotations/{gold.pk}/").status_code == 204
    assert not ExpertAnnotation.objects.filter(pk=gold.pk).exists()


def test_the_annotator_deletes_a_draft(people):
    owner, _, _, _, rows = people
    expert_annotation_delete(annotation=rows["draft"], user=owner)
    assert _api(owner).delete(f"/api/expert-annotations/{rows['submitted'].pk}/").status_code == 204
    assert list(ExpertAnnotation.objects.values_list("status", flat=True)) == ["gold"]


def test_campaign_work_is_deleted_only_through_its_task(make_user):
    workspace = workspace_build(make_user, clip_count=1, annotator_count=1, per_clip=1)
    annotator = workspace.annotators[0]
    annotation = ExpertAnnotation.objects.create(
        clip=workspace.clips[0], annotator=annotator, campaign=workspace.campaign
    )
    message = f"annotation {annotation.pk} belongs to an annotation campaign: edit it in the workspace"
    with pytest.raises(ExpertAnnotationError, match=message):
        expert_annotation_delete(annotation=annotation, user=annotator)
    response = _api(annotator).delete(f"/api/expert-annotations/{annotation.pk}/")
    assert response.status_code == 400 and response.json()["detail"].startswith(message)
    assert ExpertAnnotation.objects.filter(pk=annotation.pk).exists()
