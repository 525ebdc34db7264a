"""Reviews pin what they judged: a lease, a review and a resolution record the reviewed path's last message and
the path's SHA-256 (chats.review.pinning), and a queue item says when its conversation grew or switched branch
since it was reviewed: in the API, on the queue's page and on the adjudication page."""

from __future__ import annotations

import hashlib
import json
import uuid
from dataclasses import dataclass
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.utils import timezone
from rest_framework.test import APIClient

from chats.models import Lease, Message, QueueItem, Resolution, Review, Source
from chats.review.pinning import path_sha256, path_to
from chats.selectors.pinning import items_grown_since_review, pinned_path_messages, with_review_pin
from chats.selectors.review import item_state_counts, queue_items_page, state_scope
from chats.services.branches import message_set_active_branch
from chats.services.review import item_lease_next, item_resolve, review_save_draft, review_submit
from tests.factories.growing import Chat, one_question_queue, review_and_resolve
from tests.factories.review import make_lead

pytestmark = pytest.mark.django_db


@dataclass
class Node:
    key: str
    content_key: uuid.UUID | None
    parent_key: str | None = None


def test_the_path_hash_is_sha256_over_keys_and_content_keys_root_first() -> None:
    a, b = uuid.uuid4(), uuid.uuid4()
    root, answer, other = Node("r", a), Node("x", b, "r"), Node("y", None, "r")
    expected = hashlib.sha256(json.dumps([["r", a.hex], ["x", b.hex]], separators=(",", ":")).encode()).hexdigest()
    assert path_sha256([root, answer]) == expected
    assert path_sha256([answer, root]) != expected
    assert path_sha256([root, other]) != expected
    assert path_to([root, answer, other], "x") == [root, answer]
    assert path_to([root, answer, other], "y") == [root, other]
    assert path_to([root, answer], "missing") == []


def active_keys(chat: Chat) -> list[str]:
    rows = Message.objects.filter(conversation=chat.conversation, on_active_path=True).order_by("depth")
    return list(rows.values_list("key", flat=True))


def test_a_lease_a_review_and_a_resolution_pin_the_path_handed_out(reviewer: User, source: Source) -> None:
    lead = make_lead()
    chat = Chat.start(source, n_messages=3)
    handed_out = active_keys(chat)
    queue = one_question_queue(lead, reviewer, [chat])
    item = item_lease_next(queue=queue, reviewer=reviewer)
    assert item is not None
    lease = Lease.objects.get(item=item, reviewer=reviewer)
    path = pinned_path_messages(chat.conversation.pk, lease.pinned_leaf_key)
    assert [m.key for m in path] == handed_out and lease.pinned_leaf_key == handed_out[-1]
    assert lease.pinned_path_sha256 == path_sha256(path)

    chat.grow(turns=2)  # while the reviewer reads, the source appends two turns
    assert len(active_keys(chat)) == 7
    review_save_draft(reviewer=reviewer, item=item, answers={"helpful": True})
    review = review_submit(reviewer=reviewer, item=item, answers={"helpful": True})
    assert (review.pinned_leaf_key, review.pinned_path_sha256) == (lease.pinned_leaf_key, lease.pinned_path_sha256)

    chat.grow(turns=1)
    resolution = item_resolve(actor=lead, item=item, answers={"helpful": False})
    assert (resolution.pinned_leaf_key, resolution.pinned_path_sha256) == (
        lease.pinned_leaf_key,
        lease.pinned_path_sha256,
    )
    stored = Resolution.objects.get(item=item)
    assert [m.key for m in pinned_path_messages(chat.conversation.pk, stored.pinned_leaf_key)] == handed_out


def test_a_review_without_a_lease_pins_the_active_path_when_its_draft_began(reviewer: User, source: Source) -> None:
    lead = make_lead()
    chat = Chat.start(source, n_messages=3)
    first = active_keys(chat)
    queue = one_question_queue(lead, reviewer, [chat])
    item = QueueItem.objects.get(queue=queue)
    review_save_draft(reviewer=reviewer, item=item, answers={})
    chat.grow()
    review_submit(reviewer=reviewer, item=item, answers={"helpful": True})
    assert Review.objects.get(item=item).pinned_leaf_key == first[-1]


def test_the_pinned_path_survives_a_switch_to_another_branch(reviewer: User, source: Source) -> None:
    lead = make_lead()
    chat = Chat.start(source, n_messages=3)
    reviewed = active_keys(chat)
    queue = one_question_queue(lead, reviewer, [chat])
    [item] = review_and_resolve(queue, lead, reviewer)
    chat.regenerate()
    assert active_keys(chat)[-1] != reviewed[-1]
    pin = Resolution.objects.get(item=item)
    path = pinned_path_messages(chat.conversation.pk, pin.pinned_leaf_key)
    assert [m.key for m in path] == reviewed and path_sha256(path) == pin.pinned_path_sha256


def grown(item: QueueItem) -> bool:
    return bool(with_review_pin(QueueItem.objects.filter(pk=item.pk)).get().grown_since_review)  # type: ignore[attr-defined]


def test_an_item_says_when_its_conversation_grew_or_switched_branch_since_review(
    reviewer: User, source: Source
) -> None:
    lead = make_lead()
    chats = [Chat.start(source), Chat.start(source), Chat.start(source)]
    queue = one_question_queue(lead, reviewer, chats)
    # Each chat's own item (the queue adds the conversations in no particular order).
    item_of = {item.conversation_id: item for item in QueueItem.objects.filter(queue=queue)}
    unreviewed_grows, grows, branches = (item_of[chat.conversation.pk] for chat in chats)
    assert [grown(i) for i in (unreviewed_grows, grows, branches)] == [False, False, False]

    reviewed_leaf = active_keys(chats[1])[-1]
    for item in (grows, branches):
        assert item_lease_next(queue=queue, reviewer=reviewer) is not None
        review_submit(reviewer=reviewer, item=item, answers={"helpful": True})
    assert [grown(i) for i in (unreviewed_grows, grows, branches)] == [False, False, False]

    chats[0].grow()  # not reviewed: nothing to have grown since
    chats[1].grow(turns=2)
    chats[2].regenerate()  # another branch becomes the active path
    assert [grown(i) for i in (unreviewed_grows, grows, branches)] == [False, True, True]
    flagged = items_grown_since_review(QueueItem.objects.filter(queue=queue)).order_by("id")
    assert set(flagged.values_list("pk", flat=True)) == {grows.pk, branches.pk}
    # The lists filter by it, and count it, as by any other state.
    scope = state_scope(queue)
    assert item_state_counts(scope)["grown_since_review"] == 2
    listed = queue_items_page(queue, state="grown_since_review")
    assert {item.pk for item in listed.items} == {grows.pk, branches.pk}

    # Switching back to the reviewed branch: the item is on the path judged again.
    old_leaf = Message.objects.filter(conversation=chats[2].conversation, on_active_path=False, role="assistant").get()
    message_set_active_branch(conversation=chats[2].conversation, message=old_leaf, actor=lead)
    assert grown(branches) is False

    api = APIClient()
    api.force_login(lead)
    body = api.get(f"/api/v1/queues/{queue.pk}/items/").json()
    rows = {row["id"]: row for row in body["results"]}
    assert (rows[grows.pk]["grown_since_review"], rows[grows.pk]["reviewed_leaf_key"]) == (True, reviewed_leaf)
    assert (rows[unreviewed_grows.pk]["grown_since_review"], rows[unreviewed_grows.pk]["reviewed_leaf_key"]) == (
        False,
        None,
    )
    reviews = api.get(f"/api/v1/queues/{queue.pk}/items/{grows.pk}/reviews/").json()["reviews"]
    assert reviews[0]["pinned_leaf_key"] == reviewed_leaf and len(reviews[0]["pinned_path_sha256"]) == 64

    page = Client()
    page.force_login(lead)
    detail = page.get(f"/queues/{queue.pk}/").content.decode()
    assert detail.count("data-grown") == 1
    adjudicate = page.get(f"/queues/{queue.pk}/adjudicate/").content.decode()
    assert adjudicate.count("data-grown") == 1


def test_a_lease_taken_again_pins_the_path_as_it_is_then(reviewer: User, source: Source) -> None:
    lead = make_lead()
    chat = Chat.start(source)
    queue = one_question_queue(lead, reviewer, [chat])
    item = item_lease_next(queue=queue, reviewer=reviewer)
    assert item is not None
    Lease.objects.filter(item=item).update(expires_at=timezone.now())  # walked away: the lease expired
    chat.grow()
    assert item_lease_next(queue=queue, reviewer=reviewer) == item
    assert Lease.objects.get(item=item).pinned_leaf_key == active_keys(chat)[-1]


def test_the_queue_items_api_keeps_its_query_count_with_pins(
    reviewer: User, source: Source, django_assert_num_queries: Any
) -> None:
    lead = make_lead()
    queue = one_question_queue(lead, reviewer, [Chat.start(source)])
    review_and_resolve(queue, lead, reviewer)
    api = APIClient()
    api.force_login(lead)
    url = f"/api/v1/queues/{queue.pk}/items/"
    with django_assert_num_queries(5):  # session, user, groups, the queue, the items with their pins
        assert len(api.get(url).json()["results"]) == 1
    more = [Chat.start(source) for _ in range(4)]
    second = one_question_queue(lead, reviewer, more, name="More")
    review_and_resolve(second, lead, reviewer)
    for chat in more:
        chat.grow()
    with django_assert_num_queries(5):
        rows = api.get(f"/api/v1/queues/{second.pk}/items/").json()["results"]
    assert [row["grown_since_review"] for row in rows] == [True] * 4
