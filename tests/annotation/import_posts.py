"""POST an import page and follow it as a browser does: the task the page queues on commit runs (eagerly, as
Celery does in tests) before the redirect to the upload's page is followed."""

from django.urls import reverse

from corpus.models import DatasetUpload


def post_and_follow(client, capture_on_commit, url: str, data: dict):
    """The final page: the form again with what it refused at once (400), or the upload's page after the import."""
    with capture_on_commit(execute=True):
        response = client.post(url, data)
    if response.status_code != 302:
        return response
    upload = DatasetUpload.objects.latest("created_at")
    assert response["Location"] == reverse("annotation:dataset_upload", args=[upload.pk])
    return client.get(response["Location"])
