"""Balanced shares of a crowd study: slots, allocation, release, attention checks and coverage.

Modules: `slots` (the study's items and slots, the lock order), `allocation` (planning a share and claiming its
slots), `checks` (gold pairs and catch captions placed in a share), `release` (returns, time-outs, exclusion and
reinstatement: slots freed and taken back), `coverage` (judged, reserved and free slots).

Rules (so every item gets its judgements and no participant waits for work that is not there):
- Each item of the study (THumBS: a clip with the campaign's captions of it; pairwise: a caption pair that is
  not gold) has `judgements_per_item` slots, made when the study is published (`study_slots_create`).
- A participant who starts rating gets `items_per_participant` items (fewer when fewer items have a free
  slot; none: the study is full), the least-covered first (ties broken at random), each from a different
  item, in their own random order with sides and caption order shuffled. On top of these come
  `attention_checks` known-answer checks spread through the share: gold HI pairs (pairwise; the least-used
  first, none of a clip the share has another item of, fewer checks where no other is left), or, for THumBS,
  a caption of another clip in place of one of an item's captions (a catch caption that must get precision
  <= 2; in place of, so check items show as many captions as the others): a reference caption of the clip
  whose references share the fewest words with the item's, from a clip the participant never hears.
- The study's time limit counts from the participant's arrival (the countdown on every page shows it); the share
  is reserved until then, and no longer than STUDY_INACTIVE_MINUTES without a request from its holder once
  another participant needs slots (checked lazily, when a share is allocated or someone arrives). A participant
  who times out (either way), returns the study or is excluded gives their slots back: unanswered items are
  deleted (their slot is free again; a draft on one is kept in the event's detail), and an excluded participant's
  answered slots become free too, so the item still reaches its count of *included*
  judgements. Reinstating takes the slots back, and is refused when others have judged the items since (the
  items would be judged more often than the target; coverage and exports would disagree).
- Concurrency: a start locks only the participant's row (two tabs get one share) and claims each slot on its own
  row (SELECT ... FOR UPDATE SKIP LOCKED): starts at the same moment do not wait for each other, one whose slot
  is being taken moves on to the next item of its plan, and only a share that comes out short while others claim
  is planned again under the study's row lock. Release, exclusion and reinstatement lock the study row, then the
  participant row (SQLite serialises writers). Whatever the locks do, the slot constraints
  (ratings/models_study.py) and the conditional UPDATE make over-assignment and a second slot of one item
  impossible.
- Previews (admins trying the study) get a share chosen the same way but take no slot.
"""

from ratings.services.study_shares.allocation import Allocation, share_allocate
from ratings.services.study_shares.coverage import Coverage, study_coverage
from ratings.services.study_shares.release import (
    BEFORE_ITEMS,
    BUSY,
    FREE,
    FULL,
    abandoned_arrivals_time_out,
    expired_shares_release,
    expired_shares_release_now,
    inactive_since,
    share_release,
    slots_release_for_exclusion,
    slots_retake_for_reinstatement,
    study_availability,
)
from ratings.services.study_shares.slots import (
    StudySetupError,
    participant_deadline,
    participant_locked_with_study,
    spread_positions,
    study_gold_pairs,
    study_locked,
    study_regular_items,
    study_setup_check,
    study_slots_create,
)

__all__ = [
    "BEFORE_ITEMS",
    "BUSY",
    "FREE",
    "FULL",
    "Allocation",
    "Coverage",
    "StudySetupError",
    "abandoned_arrivals_time_out",
    "expired_shares_release",
    "expired_shares_release_now",
    "inactive_since",
    "participant_deadline",
    "participant_locked_with_study",
    "share_allocate",
    "share_release",
    "slots_release_for_exclusion",
    "slots_retake_for_reinstatement",
    "spread_positions",
    "study_availability",
    "study_coverage",
    "study_gold_pairs",
    "study_locked",
    "study_regular_items",
    "study_setup_check",
    "study_slots_create",
]
