"""Failed sign-ins lock a user name from one address, never an account everywhere nor everyone behind a proxy.

django-axes counts failures per user name and client address together (names case-insensitive and trimmed); the
client address is the peer's, or the right-most X-Forwarded-For hop that is not a trusted proxy when the peer is
one. A locked sign-in answers 429 on the site's page and the admin's; staff unlock from the admin, audited. Over
the real HTTP stack, with the attempts in PostgreSQL.
"""

from __future__ import annotations

import functools
from http.cookies import SimpleCookie
from typing import Any

import pytest
from axes.models import AccessAttempt
from django.contrib.auth.models import Group, User
from django.test import Client, RequestFactory

from chats.models import AuditEvent
from chats.services.signin import signin_unlock
from chats.throttling import client_address

pytestmark = pytest.mark.django_db

PASSWORD = "correct horse battery staple"
LOCKED = "Too many failed sign-in attempts"
SITE = "/accounts/login/"
ADMIN = "/admin/login/?next=/admin/"
PROXY = "10.0.0.5"  # the TLS proxy in front of the site, when one is trusted


@pytest.fixture(autouse=True)
def _three_failures(settings: Any) -> None:
    settings.AXES_FAILURE_LIMIT = 3
    settings.MASTERBRAIN_TRUSTED_PROXIES = []


@pytest.fixture
def behind_a_proxy(settings: Any) -> None:
    settings.MASTERBRAIN_TRUSTED_PROXIES = [f"{PROXY}/32"]


def sign_in(
    username: str,
    password: str,
    *,
    peer: str = "192.0.2.1",
    forwarded: str | None = None,
    url: str = SITE,
    client: Client | None = None,
) -> Any:
    """A sign-in from the connecting address `peer`, with an X-Forwarded-For header when `forwarded` is given."""
    headers = {"X-Forwarded-For": forwarded} if forwarded is not None else None
    if client is None:
        client = _browser()
        client.cookies = SimpleCookie()  # a new visitor each time, with no session
    return client.post(url, {"username": username, "password": password}, headers=headers, REMOTE_ADDR=peer)


@functools.cache
def _browser() -> Client:
    # One client reused: a client loads the middleware once (WhiteNoise scans every static file then).
    return Client()


def signed_in(response: Any) -> bool:
    return response.status_code == 302 and "_auth_user_id" in response.wsgi_request.session


def failures_by_address(username: str) -> dict[str | None, int]:
    counts: dict[str | None, int] = {}
    for address, failures in AccessAttempt.objects.filter(username=username).values_list(
        "ip_address", "failures_since_start"
    ):
        counts[address] = counts.get(address, 0) + failures
    return counts


@pytest.fixture
def alice(db: None) -> User:
    return User.objects.create_user(username="alice", password=PASSWORD)


# ---- A lock holds one user name at one address


def test_failures_lock_a_user_name_from_that_address_with_429_and_a_clear_message(alice: User):
    statuses = [sign_in("alice", "wrong").status_code for _ in range(3)]
    client = Client()
    refused = sign_in("alice", PASSWORD, client=client)

    # The failure that reaches the limit already answers 429; then even the right password is not checked.
    assert statuses == [200, 200, 429]
    assert refused.status_code == 429
    assert LOCKED in refused.content.decode()
    assert int(refused["Retry-After"]) == 15 * 60
    assert "_auth_user_id" not in client.session
    # The page is the sign-in page, its form saying why.
    assert 'name="password"' in refused.content.decode()


def test_the_admin_sign_in_answers_429_too_and_shares_the_count(admin_user: User):
    sign_in("admin", "wrong")
    sign_in("admin", "wrong", url=ADMIN)
    third = sign_in("admin", "wrong", url=ADMIN)
    client = Client()
    refused = sign_in("admin", PASSWORD, url=ADMIN, client=client)

    assert third.status_code == 429
    assert refused.status_code == 429
    assert LOCKED in refused.content.decode()
    assert 'id="login-form"' in refused.content.decode()  # the admin's own sign-in page
    assert "_auth_user_id" not in client.session
    assert sign_in("admin", PASSWORD).status_code == 429  # and the site's page, from the same address


def test_a_locked_user_name_still_signs_in_from_another_address_and_spellings_count_as_one(alice: User, reviewer: User):
    for spelling in ("alice", "ALICE ", "  Alice"):
        sign_in(spelling, "wrong", peer="192.0.2.1")

    assert failures_by_address("alice") == {"192.0.2.1": 3}
    assert sign_in("alice", PASSWORD, peer="192.0.2.1").status_code == 429
    assert sign_in("aLiCe", PASSWORD, peer="192.0.2.1").status_code == 429
    assert signed_in(sign_in("alice", PASSWORD, peer="198.51.100.7"))
    assert sign_in("alice", PASSWORD, peer="192.0.2.1").status_code == 429  # still locked where it failed
    assert signed_in(sign_in(reviewer.username, PASSWORD, peer="192.0.2.1"))  # another name from there is not


def test_a_correct_password_before_the_limit_clears_the_count(alice: User):
    for _ in range(2):
        sign_in("alice", "wrong")
    assert signed_in(sign_in("alice", PASSWORD))

    for _ in range(2):
        sign_in("alice", "wrong")
    assert signed_in(sign_in("alice", PASSWORD))
    assert failures_by_address("alice") == {}


# ---- Behind a trusted proxy


@pytest.mark.usefixtures("behind_a_proxy")
def test_twenty_failures_from_behind_a_trusted_proxy_lock_no_other_client_nor_the_account(alice: User, reviewer: User):
    # Twenty clients behind the proxy each fail once as alice, and twenty other names are guessed.
    for n in range(20):
        assert sign_in("alice", "wrong", peer=PROXY, forwarded=f"198.51.100.{n + 1}").status_code == 200
        assert sign_in(f"guess-{n}", "wrong", peer=PROXY, forwarded=f"203.0.113.{n + 1}").status_code == 200

    # Each failure was counted for its own client, not for the proxy.
    assert failures_by_address("alice") == {f"198.51.100.{n + 1}": 1 for n in range(20)}
    assert not AccessAttempt.objects.filter(ip_address=PROXY).exists()
    # Alice, the reviewer and the admin sign in from their own addresses behind the same proxy.
    assert signed_in(sign_in("alice", PASSWORD, peer=PROXY, forwarded="192.0.2.50"))
    assert signed_in(sign_in("alice", PASSWORD, peer=PROXY, forwarded="198.51.100.1"))
    assert signed_in(sign_in(reviewer.username, PASSWORD, peer=PROXY, forwarded="198.51.100.20"))


@pytest.mark.usefixtures("behind_a_proxy")
def test_behind_a_trusted_proxy_a_client_is_locked_at_its_own_address_only(alice: User):
    # What a client writes into X-Forwarded-For itself stays on the left of what the proxy appends.
    for forged in ("203.0.113.1", "203.0.113.2", "203.0.113.3"):
        sign_in("alice", "wrong", peer=PROXY, forwarded=f"{forged}, 198.51.100.9")

    assert failures_by_address("alice") == {"198.51.100.9": 3}
    assert sign_in("alice", PASSWORD, peer=PROXY, forwarded="203.0.113.4, 198.51.100.9").status_code == 429
    assert signed_in(sign_in("alice", PASSWORD, peer=PROXY, forwarded="198.51.100.10"))


@pytest.mark.usefixtures("behind_a_proxy")
def test_an_untrusted_peer_cannot_escape_its_lockout_or_lock_others_with_x_forwarded_for(alice: User):
    attacker = "203.0.113.66"  # connects directly, not through the proxy
    forged = [
        "198.51.100.1",
        "198.51.100.2",
        f"198.51.100.3, {PROXY}",  # a chain that ends in the trusted proxy's address
        "198.51.100.77",  # alice's own address behind the proxy
        f"198.51.100.77, {PROXY}",
    ]
    statuses = [sign_in("alice", "wrong", peer=attacker, forwarded=header).status_code for header in forged]

    assert statuses == [200, 200, 429, 429, 429]
    assert failures_by_address("alice") == {attacker: 3}
    assert sign_in("alice", PASSWORD, peer=attacker, forwarded="192.0.2.200").status_code == 429
    # Alice, behind the proxy at the address the attacker named, is not locked.
    assert signed_in(sign_in("alice", PASSWORD, peer=PROXY, forwarded="198.51.100.77"))


def test_without_trusted_proxies_x_forwarded_for_is_never_read(alice: User):
    statuses = [sign_in("alice", "wrong", peer=PROXY, forwarded=f"198.51.100.{n}").status_code for n in range(1, 4)]

    assert statuses == [200, 200, 429]
    assert failures_by_address("alice") == {PROXY: 3}


def test_the_client_address_is_the_right_most_hop_that_is_not_a_trusted_proxy(settings: Any):
    settings.MASTERBRAIN_TRUSTED_PROXIES = ["10.0.0.0/24", "2001:db8::/32"]
    cases = [
        # (REMOTE_ADDR, X-Forwarded-For or None, the client)
        ("192.0.2.1", None, "192.0.2.1"),
        ("192.0.2.1", "198.51.100.1", "192.0.2.1"),  # an untrusted peer's header is ignored
        ("10.0.0.5", None, "10.0.0.5"),  # the proxy itself (a health check)
        ("10.0.0.5", "198.51.100.1", "198.51.100.1"),
        ("10.0.0.5", "203.0.113.9, 198.51.100.1", "198.51.100.1"),  # the client's own entry is ignored
        ("10.0.0.5", "198.51.100.1, 10.0.0.7", "198.51.100.1"),  # two trusted proxies
        ("10.0.0.5", "198.51.100.1:51234", "198.51.100.1"),  # with a port
        ("10.0.0.5", "[2001:db9::1]:443", "2001:db9::1"),
        ("10.0.0.5", "2001:db9::1, 2001:db8::2", "2001:db9::1"),
        ("10.0.0.5", "::ffff:198.51.100.1", "198.51.100.1"),
        ("10.0.0.5", "198.51.100.1, not-an-address", "10.0.0.5"),  # garbage stops at the last trusted hop
        ("10.0.0.5", "", "10.0.0.5"),
        ("2001:db8::5", "198.51.100.1", "198.51.100.1"),
        ("not-an-address", "198.51.100.1", None),
    ]
    found = []
    for peer, forwarded, _ in cases:
        headers = {"X-Forwarded-For": forwarded} if forwarded is not None else None
        found.append(client_address(RequestFactory().post("/", headers=headers, REMOTE_ADDR=peer)))

    assert found == [client for _, _, client in cases]


# ---- Unlocking, from the admin


def lock(username: str, peer: str) -> None:
    """Fail as `username` from `peer` until it is locked (whatever it had failed before)."""
    statuses = [sign_in(username, "wrong", peer=peer).status_code for _ in range(3)]
    assert 429 in statuses
    assert sign_in(username, PASSWORD, peer=peer).status_code == 429


def unlock(client: Client, rows: Any) -> Any:
    pks = [str(pk) for pk in rows.values_list("pk", flat=True)]
    return client.post("/admin/axes/accessattempt/", {"action": "unlock", "_selected_action": pks, "index": "0"})


def test_staff_unlock_a_user_name_from_one_address_in_the_admin_and_it_is_audited(alice: User, admin_user: User):
    sign_in("ALICE", "wrong", peer="192.0.2.1", client=Client(HTTP_USER_AGENT="another browser"))
    lock("alice", "192.0.2.1")  # locked from .1 after two more failures (the browsers count together)
    lock("alice", "192.0.2.2")
    staff = Client()
    staff.force_login(admin_user)

    listed = staff.get("/admin/axes/accessattempt/")
    # One of the two rows of alice at .1 (one per browser) is selected: the name is unlocked from that address.
    response = unlock(staff, AccessAttempt.objects.filter(ip_address="192.0.2.1", user_agent="another browser"))

    assert listed.status_code == 200 and "alice" in listed.content.decode()
    assert response.status_code == 302
    assert signed_in(sign_in("alice", PASSWORD, peer="192.0.2.1"))
    assert sign_in("alice", PASSWORD, peer="192.0.2.2").status_code == 429  # the other address stays locked
    event = AuditEvent.objects.get(action="signin.unlocked")
    assert (event.actor, event.target_type, event.target_id) == (admin_user, "signin", "alice")
    assert event.before == {"ip_address": "192.0.2.1", "failures": 3}
    assert event.after == {"ip_address": "192.0.2.1", "failures": 0}


def test_unlocking_needs_staff_with_the_permission(alice: User, admin_user: User):
    lock("alice", "192.0.2.1")
    staff = User.objects.create_user(username="stephen", password=PASSWORD, is_staff=True)
    auditor = User.objects.create_user(username="aude", password=PASSWORD, is_staff=True)
    auditor.groups.add(Group.objects.get(name="Auditors"))
    rows = AccessAttempt.objects.filter(username="alice")

    answers = {}
    for name, user in (("anonymous", None), ("reviewer", alice), ("staff", staff), ("auditor", auditor)):
        client = Client()
        if user is not None:
            client.force_login(user)
        answers[name] = (client.get("/admin/axes/accessattempt/").status_code, unlock(client, rows).status_code)

    # Not staff: sent to the admin's sign-in. Staff without the permission: refused.
    assert answers == {"anonymous": (302, 302), "reviewer": (302, 302), "staff": (403, 403), "auditor": (403, 403)}
    assert failures_by_address("alice") == {"192.0.2.1": 3}
    assert not AuditEvent.objects.filter(action="signin.unlocked").exists()
    assert sign_in("alice", PASSWORD, peer="192.0.2.1").status_code == 429


def test_the_unlock_service_takes_the_name_as_sign_in_counts_it_and_records_only_what_it_lifted(
    alice: User, admin_user: User
):
    lock("alice", "192.0.2.1")

    first = signin_unlock(username=" ALICE", ip_address="192.0.2.1", actor=admin_user)
    again = signin_unlock(username="alice", ip_address="192.0.2.1", actor=admin_user)

    assert (first, again) == (1, 0)
    assert AuditEvent.objects.filter(action="signin.unlocked", target_id="alice").count() == 1
    assert signed_in(sign_in("alice", PASSWORD, peer="192.0.2.1"))
