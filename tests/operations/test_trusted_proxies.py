"""Client addresses behind a trusted proxy: X-Forwarded-For counts only when a listed proxy sent it.

Per-address limits (the sign-in lockout, crowd-study arrivals) must count each person behind the TLS proxy
separately, and a client talking to the app directly must not dodge them by writing the header itself.
"""

import subprocess
import sys
from pathlib import Path

import pytest
from django.test import Client

from common.client_address import client_address_from, trusted_networks_parse
from ratings.models_study import Participant
from tests.ratings.study_data import pairwise_study as make_pairwise_study
from tests.ratings.study_data import prolific_arrive

PROXY = "10.0.0.5"
PROXIES = trusted_networks_parse(["10.0.0.5", "192.168.10.0/24", "fd00::/8"])
ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    "remote, forwarded, expected",
    [
        # not a trusted proxy: the header is the client's own words, ignored
        ("203.0.113.9", "198.51.100.1", "203.0.113.9"),
        ("203.0.113.9", "", "203.0.113.9"),
        # the proxy, no header (its own health check): the proxy itself
        (PROXY, "", PROXY),
        # the proxy appended the client it saw
        (PROXY, "198.51.100.1", "198.51.100.1"),
        # the client wrote a header of its own; the proxy appended the real address at the right
        (PROXY, "1.2.3.4, 198.51.100.1", "198.51.100.1"),
        # two proxies in a row (both trusted): the right-most address that is not one of them
        (PROXY, "198.51.100.1, 192.168.10.7", "198.51.100.1"),
        (PROXY, "7.7.7.7, 198.51.100.1, 192.168.10.7", "198.51.100.1"),
        # every hop trusted: the farthest one
        (PROXY, "192.168.10.8, 192.168.10.7", "192.168.10.8"),
        # ports and IPv6 forms proxies write
        (PROXY, "198.51.100.1:51234", "198.51.100.1"),
        (PROXY, "[2001:db8::7]:443", "2001:db8::7"),
        (PROXY, "2001:db8::7", "2001:db8::7"),
        (PROXY, "::ffff:198.51.100.1", "198.51.100.1"),
        ("fd00::1", "2001:db8::9", "2001:db8::9"),
        # garbage where an address belongs: nothing left of it is believed
        (PROXY, "198.51.100.1, unknown", PROXY),
        (PROXY, "1.2.3.4, not-an-address, 192.168.10.7", "192.168.10.7"),
    ],
)
def test_the_client_is_the_right_most_address_no_trusted_proxy_wrote(remote, forwarded, expected):
    assert client_address_from(remote_address=remote, forwarded_for=forwarded, trusted=PROXIES) == expected


def test_without_trusted_proxies_the_header_is_never_read():
    assert client_address_from(remote_address=PROXY, forwarded_for="198.51.100.1", trusted=()) == PROXY


def test_a_bad_proxy_entry_is_refused_naming_it():
    with pytest.raises(ValueError, match=r"TRUSTED_PROXIES: '10\.0\.0\.300'"):
        trusted_networks_parse(["10.0.0.0/8", "10.0.0.300"])


def test_start_up_refuses_a_malformed_setting():
    result = subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=ROOT,
        env={"PATH": "/usr/bin:/bin", "TRUSTED_PROXIES": "10.0.0.1,proxy.example.org", "HOME": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode != 0
    assert "TRUSTED_PROXIES: 'proxy.example.org' is neither an IP address" in result.stderr


# --- Sign-in lockout (django-axes: username + address) ---------------------------------------------------------


def _fail_until_locked(client: Client, username: str, limit: int, **headers) -> None:
    wrong = {"username": username, "password": "wrong"}
    for _ in range(limit - 1):
        assert client.post("/accounts/login/", wrong, **headers).status_code == 200
    assert client.post("/accounts/login/", wrong, **headers).status_code == 429


@pytest.mark.django_db
def test_behind_a_trusted_proxy_two_clients_are_locked_out_separately(make_user, settings):
    settings.TRUSTED_PROXIES = trusted_networks_parse([PROXY])
    make_user("alice")
    proxy = Client(REMOTE_ADDR=PROXY)
    _fail_until_locked(proxy, "alice", settings.AXES_FAILURE_LIMIT, HTTP_X_FORWARDED_FOR="198.51.100.1")
    # the same person stays locked out
    locked = proxy.post(
        "/accounts/login/", {"username": "alice", "password": "pass-alice"}, HTTP_X_FORWARDED_FOR="198.51.100.1"
    )
    assert locked.status_code == 429
    # another person behind the same proxy signs in: the proxy's address is not one shared count
    other = proxy.post(
        "/accounts/login/", {"username": "alice", "password": "pass-alice"}, HTTP_X_FORWARDED_FOR="198.51.100.2"
    )
    assert other.status_code == 302
    from axes.models import AccessAttempt

    assert set(AccessAttempt.objects.values_list("ip_address", flat=True)) == {"198.51.100.1"}


@pytest.mark.django_db
def test_a_spoofed_header_from_an_untrusted_sender_does_not_evade_the_lockout(make_user, settings):
    settings.TRUSTED_PROXIES = trusted_networks_parse([PROXY])
    make_user("bob")
    direct = Client(REMOTE_ADDR="203.0.113.9")
    for attempt in range(settings.AXES_FAILURE_LIMIT):  # a new made-up address on every try
        direct.post(
            "/accounts/login/", {"username": "bob", "password": "wrong"}, HTTP_X_FORWARDED_FOR=f"198.51.100.{attempt}"
        )
    refused = direct.post(
        "/accounts/login/", {"username": "bob", "password": "pass-bob"}, HTTP_X_FORWARDED_FOR="198.51.100.200"
    )
    assert refused.status_code == 429
    from axes.models import AccessAttempt

    assert set(AccessAttempt.objects.values_list("ip_address", flat=True)) == {"203.0.113.9"}


@pytest.mark.django_db
def test_the_token_endpoint_counts_the_forwarded_client_too(make_user, settings):
    settings.TRUSTED_PROXIES = trusted_networks_parse([PROXY])
    make_user("dave")
    proxy = Client(REMOTE_ADDR=PROXY)
    for _ in range(settings.AXES_FAILURE_LIMIT):
        proxy.post("/api/token/", {"username": "dave", "password": "wrong"}, HTTP_X_FORWARDED_FOR="198.51.100.1")
    assert (
        proxy.post(
            "/api/token/", {"username": "dave", "password": "pass-dave"}, HTTP_X_FORWARDED_FOR="198.51.100.1"
        ).status_code
        == 429
    )
    given = proxy.post(
        "/api/token/", {"username": "dave", "password": "pass-dave"}, HTTP_X_FORWARDED_FOR="198.51.100.2"
    )
    assert given.status_code == 200 and given.json()["token"]


# --- Crowd-study arrivals (STUDY_ARRIVALS_PER_ADDRESS) ---------------------------------------------------------


@pytest.fixture
def study(db, study_media):
    return make_pairwise_study()


@pytest.fixture
def study_media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"


def _arrive(study, *, remote: str, forwarded: str):
    client = Client(REMOTE_ADDR=remote, HTTP_X_FORWARDED_FOR=forwarded)
    return prolific_arrive(study, client=client)[1].status_code


def test_arrivals_behind_a_trusted_proxy_count_per_forwarded_client(study, settings):
    settings.TRUSTED_PROXIES = trusted_networks_parse([PROXY])
    settings.STUDY_ARRIVALS_PER_ADDRESS = 2
    assert [_arrive(study, remote=PROXY, forwarded="198.51.100.1") for _ in range(3)] == [302, 302, 429]
    # others behind the same proxy still arrive
    assert _arrive(study, remote=PROXY, forwarded="198.51.100.2") == 302
    assert _arrive(study, remote=PROXY, forwarded="198.51.100.3") == 302
    assert Participant.objects.count() == 4


def test_arrivals_from_an_untrusted_sender_ignore_its_header(study, settings):
    settings.TRUSTED_PROXIES = trusted_networks_parse([PROXY])
    settings.STUDY_ARRIVALS_PER_ADDRESS = 2
    statuses = [_arrive(study, remote="203.0.113.9", forwarded=f"198.51.100.{n}") for n in range(4)]
    assert statuses == [302, 302, 429, 429]
    assert Participant.objects.count() == 2


def test_without_the_setting_everyone_behind_the_proxy_is_one_address(study, settings):
    settings.TRUSTED_PROXIES = ()
    settings.STUDY_ARRIVALS_PER_ADDRESS = 2
    statuses = [_arrive(study, remote=PROXY, forwarded=f"198.51.100.{n}") for n in range(3)]
    assert statuses == [302, 302, 429]


def test_no_other_code_reads_client_addresses_or_throttles_by_itself():
    """A limit that read REMOTE_ADDR (the proxy) or X-Forwarded-For (anyone's words) itself, or a DRF throttle
    (whose default identity is the whole X-Forwarded-For header), would bypass TRUSTED_PROXIES."""
    needles = ("REMOTE_ADDR", "X_FORWARDED_FOR", "X-Forwarded-For", "get_client_ip", "throttle_classes", "THROTTLE")
    offenders = []
    for package in ("accounts", "annotation", "ratings", "metrics_bridge", "config", "common"):
        for path in sorted((ROOT / package).rglob("*.py")):
            if path == ROOT / "common" / "client_address.py" or "migrations" in path.parts:
                continue
            for number, line in enumerate(path.read_text().splitlines(), start=1):
                code = line.split("#", 1)[0]
                if any(needle in code for needle in needles):
                    offenders.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert offenders == []
