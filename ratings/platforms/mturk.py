"""Amazon Mechanical Turk through boto3's `mturk` client, credentials from the environment.

AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY are read by boto3 itself; MTURK_ENDPOINT_URL chooses the sandbox
(https://mturk-requester-sandbox.us-east-1.amazonaws.com) or production (the default). Every call turns
botocore's ClientError (MTurk's refusal) or a connection failure into a PlatformError with MTurk's message.
"""

import os
from dataclasses import dataclass
from xml.sax.saxutils import escape

from ratings.platforms import PlatformError

REGION = "us-east-1"  # MTurk's only region
# MTurk's system qualification types.
APPROVAL_RATE_QUALIFICATION = "000000000000000000L0"  # PercentAssignmentsApproved
LOCALE_QUALIFICATION = "00000000000000000071"
EXTERNAL_QUESTION_SCHEMA = (
    "http://mechanicalturk.amazonaws.com/AWSMechanicalTurkDataSchemas/2006-07-14/ExternalQuestion.xsd"
)
FRAME_HEIGHT = 0  # 0: MTurk sizes the frame to the window


def mturk_client():
    """boto3's mturk client for the configured endpoint (the tests stub it with botocore's Stubber)."""
    import boto3  # imported here: only MTurk actions need it

    endpoint = os.environ.get("MTURK_ENDPOINT_URL") or None
    return boto3.client("mturk", region_name=REGION, endpoint_url=endpoint)


def external_question(url: str) -> str:
    """The ExternalQuestion XML that shows `url` (the study's arrival link) in MTurk's frame."""
    return (
        f'<ExternalQuestion xmlns="{EXTERNAL_QUESTION_SCHEMA}">'
        f"<ExternalURL>{escape(url)}</ExternalURL><FrameHeight>{FRAME_HEIGHT}</FrameHeight></ExternalQuestion>"
    )


def qualification_requirements(
    *, approval_rate_min: int | None, locales: list[str], excluded_qualification_id: str = ""
) -> list[dict]:
    """Approval rate at least `approval_rate_min` %, a locale among `locales` (country codes) and, for "not in
    earlier studies", not holding `excluded_qualification_id` (the qualification given to earlier workers)."""
    requirements = []
    if approval_rate_min is not None:
        requirements.append(
            {
                "QualificationTypeId": APPROVAL_RATE_QUALIFICATION,
                "Comparator": "GreaterThanOrEqualTo",
                "IntegerValues": [approval_rate_min],
                "ActionsGuarded": "DiscoverPreviewAndAccept",
            }
        )
    if locales:
        requirements.append(
            {
                "QualificationTypeId": LOCALE_QUALIFICATION,
                "Comparator": "In" if len(locales) > 1 else "EqualTo",
                "LocaleValues": [{"Country": country} for country in locales],
                "ActionsGuarded": "DiscoverPreviewAndAccept",
            }
        )
    if excluded_qualification_id:
        requirements.append(
            {
                "QualificationTypeId": excluded_qualification_id,
                "Comparator": "DoesNotExist",
                "ActionsGuarded": "DiscoverPreviewAndAccept",
            }
        )
    return requirements


@dataclass(frozen=True)
class Response:
    status: int
    data: dict


def call(client, operation: str, **params) -> Response:
    """Call one MTurk operation; PlatformError with MTurk's own message when it refuses."""
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        answer = getattr(client, operation)(**params)
    except ClientError as error:
        info = error.response.get("Error", {})
        status = error.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 400)
        message = info.get("Message") or info.get("Code") or "no detail"
        raise PlatformError(f"MTurk refused {operation}: {message}", status=status, data=info) from error
    except BotoCoreError as error:
        raise PlatformError(f"MTurk could not be reached: {error}") from error
    status = answer.get("ResponseMetadata", {}).get("HTTPStatusCode", 200)
    return Response(status, {key: value for key, value in answer.items() if key != "ResponseMetadata"})
