"""Judgements belong to a campaign; items get opaque tokens and versions; audit events; Huggins screening.

Existing rows are kept, none is deleted:
- every assignment item gets a random token (URLs and workbooks no longer carry database ids);
- a THumBS rating or a web/workbook vote whose campaign was lost (the old foreign key was SET NULL)
  goes back to the campaign in which the rater was assigned that caption or pair; when no such
  campaign exists it goes to a closed `legacy-...` campaign of the caption's dataset, so it stays
  visible and attributable instead of disappearing;
- imported votes (source "import", e.g. Clotho-Eval's judges) keep no campaign, with their own
  unique constraint (rater, pair) for campaign IS NULL (a partial index: SQLite and PostgreSQL).
"""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

import ratings.models

TOKEN_BATCH = 2000


def items_tokens_fill(apps, schema_editor):
    AssignmentItem = apps.get_model("ratings", "AssignmentItem")
    taken: set[str] = set()
    batch = []
    for item in AssignmentItem.objects.filter(token__isnull=True).only("pk").iterator():
        token = ratings.models.opaque_token()
        while token in taken:
            token = ratings.models.opaque_token()
        taken.add(token)
        item.token = token
        batch.append(item)
        if len(batch) >= TOKEN_BATCH:
            AssignmentItem.objects.bulk_update(batch, ["token"])
            batch = []
    AssignmentItem.objects.bulk_update(batch, ["token"])


def _legacy_campaign(apps, *, dataset_id: int, task_type: str, cache: dict):
    Campaign = apps.get_model("ratings", "Campaign")
    Dataset = apps.get_model("annotation", "Dataset")
    key = (dataset_id, task_type)
    if key not in cache:
        dataset = Dataset.objects.get(pk=dataset_id)
        base = f"legacy-{task_type}-{dataset.name}"[:90]
        name, counter = base, 2
        while Campaign.objects.filter(name=name).exists():
            name, counter = f"{base}-{counter}", counter + 1
        cache[key] = Campaign.objects.create(
            name=name,
            dataset_id=dataset_id,
            task_type=task_type,
            judgements_per_item=1,
            is_active=False,
            title="Earlier ratings",
        )
    return cache[key]


def judgements_campaigns_fill(apps, schema_editor):
    ThumbsRating = apps.get_model("ratings", "ThumbsRating")
    PairwiseVote = apps.get_model("ratings", "PairwiseVote")
    Assignment = apps.get_model("ratings", "Assignment")
    legacy: dict = {}
    for rating in ThumbsRating.objects.filter(campaign__isnull=True).select_related("caption__clip"):
        assignment = (
            Assignment.objects.filter(rater_id=rating.rater_id, campaign__captions=rating.caption_id)
            .order_by("-created_at")
            .first()
        )
        campaign = (
            assignment.campaign
            if assignment
            else _legacy_campaign(apps, dataset_id=rating.caption.clip.dataset_id, task_type="thumbs", cache=legacy)
        )
        if not assignment:
            campaign.captions.add(rating.caption_id)
        rating.campaign = campaign
        rating.save(update_fields=["campaign"])
    for vote in PairwiseVote.objects.filter(campaign__isnull=True).exclude(source="import").select_related("pair__clip"):
        assignment = (
            Assignment.objects.filter(rater_id=vote.rater_id, campaign__pairs=vote.pair_id).order_by("-created_at").first()
        )
        campaign = (
            assignment.campaign
            if assignment
            else _legacy_campaign(apps, dataset_id=vote.pair.clip.dataset_id, task_type="pairwise", cache=legacy)
        )
        if not assignment:
            campaign.pairs.add(vote.pair_id)
        vote.campaign = campaign
        vote.save(update_fields=["campaign"])


def outside_campaigns_mark(apps, schema_editor):
    """Campaigns a workbook import created (their dataset says so) are studies run outside the app."""
    Campaign = apps.get_model("ratings", "Campaign")
    Campaign.objects.filter(dataset__description="Created by a THumBS workbook import").update(origin="outside")


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0003_tag_category_constraint"),
        ("ratings", "0002_headphone_reset"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        # --- campaigns ----------------------------------------------------------------------------
        migrations.AddField(
            model_name="campaign",
            name="title",
            field=models.CharField(
                blank=True, help_text="Shown to raters. Leave out dataset, system and split names.", max_length=120
            ),
        ),
        migrations.AddField(
            model_name="campaign",
            name="origin",
            field=models.CharField(
                choices=[
                    ("app", "Created in the app"),
                    ("outside", "A study run outside the app (created by its workbooks)"),
                ],
                default="app",
                max_length=10,
            ),
        ),
        migrations.AddField(
            model_name="campaign", name="requires_huggins", field=models.BooleanField(default=False)
        ),
        migrations.RunPython(outside_campaigns_mark, migrations.RunPython.noop),
        # --- items: token, version, outside record id -----------------------------------------------
        migrations.AddField(
            model_name="assignmentitem", name="token", field=models.CharField(max_length=32, null=True, editable=False)
        ),
        migrations.RunPython(items_tokens_fill, migrations.RunPython.noop),
        migrations.AlterField(
            model_name="assignmentitem",
            name="token",
            field=models.CharField(
                default=ratings.models.opaque_token, editable=False, max_length=32, unique=True
            ),
        ),
        migrations.AddField(
            model_name="assignmentitem", name="version", field=models.PositiveIntegerField(default=0)
        ),
        migrations.AddField(
            model_name="assignmentitem",
            name="outside_record_id",
            field=models.CharField(blank=True, max_length=255),
        ),
        migrations.CreateModel(
            name="ItemEvent",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                (
                    "kind",
                    models.CharField(
                        choices=[
                            ("submitted", "Submitted"),
                            ("change_opened", "Rater opened a submitted answer to change it"),
                            ("changed", "Answer changed"),
                            ("stale_refused", "Stale submission refused"),
                            ("stale_replaced", "Newer answer replaced after a conflict"),
                            ("workbook", "Answer imported from a workbook"),
                        ],
                        max_length=20,
                    ),
                ),
                ("version", models.PositiveIntegerField()),
                ("previous_answer", models.JSONField(blank=True, default=dict)),
                ("answer", models.JSONField(blank=True, default=dict)),
                ("created_at", models.DateTimeField(auto_now_add=True)),
                (
                    "item",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE, related_name="events", to="ratings.assignmentitem"
                    ),
                ),
            ],
            options={"ordering": ["item", "created_at", "pk"]},
        ),
        migrations.AddField(
            model_name="workbookupload", name="create_campaign", field=models.BooleanField(default=False)
        ),
        migrations.AddField(model_name="workbookupload", name="replace_newer", field=models.BooleanField(default=False)),
        # --- headphone screens ----------------------------------------------------------------------
        migrations.AddField(
            model_name="headphonecheck",
            name="kind",
            field=models.CharField(
                choices=[
                    ("antiphase", "Antiphase (which tone is quietest)"),
                    ("huggins", "Huggins pitch (which noise hides a tone)"),
                ],
                default="antiphase",
                max_length=10,
            ),
        ),
        # --- judgements belong to a campaign ----------------------------------------------------------
        migrations.RemoveConstraint(model_name="thumbsrating", name="thumbs_one_rating_per_rater_caption"),
        migrations.RemoveConstraint(model_name="pairwisevote", name="vote_one_per_rater_pair"),
        migrations.RunPython(judgements_campaigns_fill, migrations.RunPython.noop),
        migrations.AlterField(
            model_name="thumbsrating",
            name="campaign",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.PROTECT, related_name="thumbs_ratings", to="ratings.campaign"
            ),
        ),
        migrations.AlterField(
            model_name="pairwisevote",
            name="campaign",
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.PROTECT,
                related_name="votes",
                to="ratings.campaign",
            ),
        ),
        migrations.AddConstraint(
            model_name="thumbsrating",
            constraint=models.UniqueConstraint(
                fields=("campaign", "rater", "caption"), name="thumbs_one_rating_per_campaign_rater_caption"
            ),
        ),
        migrations.AddConstraint(
            model_name="pairwisevote",
            constraint=models.UniqueConstraint(
                fields=("campaign", "rater", "pair"), name="vote_one_per_campaign_rater_pair"
            ),
        ),
        migrations.AddConstraint(
            model_name="pairwisevote",
            constraint=models.UniqueConstraint(
                condition=models.Q(("campaign__isnull", True)),
                fields=("rater", "pair"),
                name="vote_one_imported_per_rater_pair",
            ),
        ),
        migrations.AddConstraint(
            model_name="pairwisevote",
            constraint=models.CheckConstraint(
                condition=models.Q(("campaign__isnull", False), ("source", "import"), _connector="OR"),
                name="vote_campaign_unless_imported",
            ),
        ),
    ]
