"""The AudioCaps-F import page in a browser, desktop and phone widths: an admin chooses "import as submitted" for
clips with duplicate events, uploads a file naming one event twice ("Dog" / "dog"), and the worker imports that
clip as submitted (screenshots in test-artifacts/)."""

import json

import pytest
from django.urls import reverse

from annotation.models import ExpertAnnotation

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.mark.parametrize("width,height", [(1200, 900), (390, 844)])
def test_admin_chooses_import_as_submitted_on_the_page(
    page_for, live_server, make_user, media_root, artifacts, tmp_path, width, height
):
    admin = make_user("boss", "admin", staff=True)
    path = tmp_path / "named_twice.json"
    path.write_text(json.dumps({"60.wav": {"Dog": {"source": ["dog"], "attr": []}, "dog": {"source": [], "attr": []}}}))
    page = page_for(admin)
    page.set_viewport_size({"width": width, "height": height})
    page.goto(live_server.url + reverse("annotation:import_audiocaps_f"))

    page.get_by_label("Dataset name").fill("acf-page")
    page.get_by_label("Annotations (.json)").set_input_files(str(path))
    page.get_by_label("Clips with duplicate events").select_option(label="import as submitted")
    assert page.get_by_label("Clips with conflicting attributes").input_value() == "gold"
    page.screenshot(path=str(artifacts / f"import_audiocaps_f_choices_{width}.png"), full_page=True)
    page.get_by_role("button", name="Upload and import").click()

    page.get_by_text("Imported", exact=False).first.wait_for()
    page.screenshot(path=str(artifacts / f"import_audiocaps_f_choices_done_{width}.png"), full_page=True)
    annotation = ExpertAnnotation.objects.get(clip__dataset__name="acf-page")
    assert annotation.status == "submitted"
    # no control wider than the phone's screen
    overflow = page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")
    assert overflow <= 0
