"""Team review services (chats/services/review.py): queues and their rubric versions, adding conversations, leasing
the next item, drafts and submissions, a lead's assignments, releases and resolutions; every write audited. (Rubrics
and answers checked without the database: tests/review/test_rubric.py.)"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import Group, User
from django.db import IntegrityError, transaction
from django.utils import timezone

from chats.errors import InvalidInput, NotAllowed
from chats.models import (
    AuditEvent,
    Conversation,
    Lease,
    Queue,
    QueueItem,
    Resolution,
    Review,
    ReviewState,
    RubricVersion,
    Source,
)
from chats.roles import person_roles
from chats.selectors.review import current_rubric
from chats.services.audit import SourceActor
from chats.services.review import (
    item_assign,
    item_lease_next,
    item_release,
    item_resolve,
    queue_add_conversations,
    queue_create,
    queue_set_lease_minutes,
    queue_update,
    review_save_draft,
    review_submit,
)
from tests.factories.review import ANSWERS, QUESTIONS, fill_queue, make_lead, make_queue

pytestmark = pytest.mark.django_db


def paths(error: InvalidInput) -> list[str]:
    return [e["path"] for e in error.errors]


# --- roles


def test_leads_lead_queues_and_reviewers_do_not(
    reviewer: User, admin_user: User, auditor: User, django_assert_num_queries: Any
) -> None:
    lead = make_lead()
    with django_assert_num_queries(1):  # the person's groups
        roles = person_roles(lead)
    assert roles.can_lead and roles.can_read and not roles.can_write and not roles.can_audit
    assert not person_roles(auditor).can_lead
    assert person_roles(admin_user).can_lead
    assert not person_roles(reviewer).can_lead


def test_the_leads_role_is_created_with_the_queues_permissions() -> None:
    leads = Group.objects.get(name="Leads")
    codenames = set(leads.permissions.values_list("codename", flat=True))
    assert {"add_queue", "change_queue", "view_review", "add_resolution", "view_conversation"} <= codenames
    auditors = set(Group.objects.get(name="Auditors").permissions.values_list("codename", flat=True))
    assert {"view_queue", "view_review", "view_resolution"} <= auditors and "add_queue" not in auditors


# --- queues and rubric versions


def test_creating_a_queue_makes_its_first_rubric_version_and_is_audited(reviewer: User) -> None:
    lead = make_lead()
    queue = make_queue(lead, [reviewer])
    rubric = current_rubric(queue)
    assert (rubric.version, rubric.questions) == (1, QUESTIONS)
    event = AuditEvent.objects.get(action="queue.created")
    assert event.actor_username == "lena"
    assert (event.after or {})["members"] == ["rita"] and (event.after or {})["reviews_per_item"] == 2


@pytest.mark.parametrize("wanted", [0, 11, "2"])
def test_a_queue_wants_one_to_ten_reviews_per_item(reviewer: User, wanted: Any) -> None:
    with pytest.raises(InvalidInput) as caught:
        make_queue(make_lead(), [reviewer], reviews_per_item=wanted)
    assert paths(caught.value) == ["/reviews_per_item"]
    assert not Queue.objects.exists()


def test_the_database_refuses_more_than_ten_reviews_per_item() -> None:
    with pytest.raises(IntegrityError), transaction.atomic():
        Queue.objects.create(name="q", reviews_per_item=11)


def test_an_invalid_rubric_is_refused_with_paths(reviewer: User) -> None:
    with pytest.raises(InvalidInput) as caught:
        make_queue(make_lead(), [reviewer], questions=[{"key": "a", "prompt": "p", "type": "nope"}])
    assert paths(caught.value) == ["/questions/0/type"]


def test_changing_a_rubric_without_reviews_still_makes_a_new_version(reviewer: User) -> None:
    lead = make_lead()
    queue = make_queue(lead, [reviewer])
    assert queue_update(actor=lead, queue=queue, questions=QUESTIONS[:2])
    assert (current_rubric(queue).version, current_rubric(queue).questions) == (2, QUESTIONS[:2])
    assert RubricVersion.objects.get(queue=queue, version=1).questions == QUESTIONS


def test_changing_a_rubric_with_reviews_makes_a_new_version_and_old_reviews_keep_theirs(
    reviewer: User, source: Source
) -> None:
    lead = make_lead()
    queue = make_queue(lead, [reviewer])
    fill_queue(queue, lead, source, 1)
    item = item_lease_next(queue=queue, reviewer=reviewer)
    assert item is not None
    review = review_submit(reviewer=reviewer, item=item, answers=ANSWERS)
    assert queue_update(actor=lead, queue=queue, questions=QUESTIONS[:1], name="Answers v2")
    assert current_rubric(queue).version == 2
    review.refresh_from_db()
    assert review.rubric_version.version == 1 and review.rubric_version.questions == QUESTIONS
    event = AuditEvent.objects.get(action="queue.updated")
    assert (event.before or {})["rubric_version"] == 1 and (event.after or {})["rubric_version"] == 2
    assert ((event.before or {})["name"], (event.after or {})["name"]) == ("Answers", "Answers v2")
    # Saving the same values again changes nothing and records nothing.
    assert not queue_update(actor=lead, queue=queue, questions=QUESTIONS[:1])
    assert AuditEvent.objects.filter(action="queue.updated").count() == 1


# --- adding conversations


def test_adding_conversations_twice_adds_them_once(reviewer: User, source: Source) -> None:
    lead = make_lead()
    queue = make_queue(lead, [reviewer])
    fill_queue(queue, lead, source, 3)
    make_conversation_count = Conversation.objects.count()
    assert queue_add_conversations(actor=lead, queue=queue, conversations=Conversation.objects.all()) == 0
    assert QueueItem.objects.filter(queue=queue).count() == make_conversation_count == 3
    assert list(AuditEvent.objects.filter(action="queue.items_added").values_list("after", flat=True)) == [{"added": 3}]
    # The same conversations may sit in another queue too.
    other = make_queue(lead, [reviewer], name="Other")
    assert queue_add_conversations(actor=lead, queue=other, conversations=Conversation.objects.all()) == 3


# --- leasing the next item


def test_next_gives_the_oldest_item_and_the_same_one_while_it_is_held(
    reviewer: User, other_reviewer: User, source: Source
) -> None:
    lead = make_lead()
    queue = make_queue(lead, [reviewer, other_reviewer], reviews_per_item=1)
    first, second, _third = fill_queue(queue, lead, source, 3)
    QueueItem.objects.filter(conversation=second).update(created_at=timezone.now() - timedelta(days=1))
    held = item_lease_next(queue=queue, reviewer=reviewer)
    assert held is not None and held.conversation_id == second.pk
    assert item_lease_next(queue=queue, reviewer=reviewer) == held  # still theirs, renewed
    # With one review per item, the other reviewer gets the next oldest.
    other = item_lease_next(queue=queue, reviewer=other_reviewer)
    assert other is not None and other.conversation_id == first.pk
    lease = Lease.objects.get(item=held, reviewer=reviewer)
    assert timedelta(minutes=29) < lease.expires_at - timezone.now() <= timedelta(minutes=30)
    assert AuditEvent.objects.filter(action="queue_item.leased").count() == 3


def test_an_expired_lease_frees_its_slot(reviewer: User, other_reviewer: User, source: Source) -> None:
    lead = make_lead()
    queue = make_queue(lead, [reviewer, other_reviewer], reviews_per_item=1)
    fill_queue(queue, lead, source, 1)
    held = item_lease_next(queue=queue, reviewer=reviewer)
    assert item_lease_next(queue=queue, reviewer=other_reviewer) is None
    Lease.objects.filter(reviewer=reviewer).update(expires_at=timezone.now() - timedelta(seconds=1))
    assert item_lease_next(queue=queue, reviewer=other_reviewer) == held


def test_a_reviewer_is_not_given_an_item_they_reviewed(reviewer: User, other_reviewer: User, source: Source) -> None:
    lead = make_lead()
    queue = make_queue(lead, [reviewer, other_reviewer], reviews_per_item=2)
    fill_queue(queue, lead, source, 1)
    item = item_lease_next(queue=queue, reviewer=reviewer)
    assert item is not None
    review_submit(reviewer=reviewer, item=item, answers=ANSWERS)
    assert item_lease_next(queue=queue, reviewer=reviewer) is None
    assert item_lease_next(queue=queue, reviewer=other_reviewer) == item
    review_submit(reviewer=other_reviewer, item=item, answers=ANSWERS)
    item.refresh_from_db()
    assert item.submitted_count == 2
    assert item_lease_next(queue=queue, reviewer=other_reviewer) is None


def test_only_members_work_a_queue(reviewer: User, other_reviewer: User, source: Source) -> None:
    lead = make_lead()
    queue = make_queue(lead, [reviewer])
    fill_queue(queue, lead, source, 1)
    with pytest.raises(NotAllowed):
        item_lease_next(queue=queue, reviewer=other_reviewer)
    item = QueueItem.objects.get()
    with pytest.raises(NotAllowed):
        review_submit(reviewer=other_reviewer, item=item, answers=ANSWERS)


# --- drafts and submissions


def test_a_draft_is_saved_partly_then_submitted_once(reviewer: User, source: Source) -> None:
    lead = make_lead()
    queue = make_queue(lead, [reviewer])
    fill_queue(queue, lead, source, 1)
    item = item_lease_next(queue=queue, reviewer=reviewer)
    assert item is not None
    draft = review_save_draft(reviewer=reviewer, item=item, answers={"correct": "wrong"})
    assert (draft.state, draft.submitted_at) == (ReviewState.DRAFT, None)
    with pytest.raises(InvalidInput) as caught:
        review_submit(reviewer=reviewer, item=item, answers={"correct": "wrong"})
    assert paths(caught.value) == ["/answers/issues", "/answers/quality", "/answers/tools_ok"]
    submitted = review_submit(reviewer=reviewer, item=item, answers=ANSWERS)
    assert submitted.pk == draft.pk and submitted.state == ReviewState.SUBMITTED
    assert not Lease.objects.filter(item=item).exists()
    with pytest.raises(InvalidInput):
        review_submit(reviewer=reviewer, item=item, answers=ANSWERS)
    with pytest.raises(InvalidInput):
        review_save_draft(reviewer=reviewer, item=item, answers={})
    actions = list(AuditEvent.objects.filter(target_type="review").values_list("action", flat=True).order_by("id"))
    assert actions == ["review.draft_saved", "review.submitted"]


def test_a_full_item_takes_no_more_submissions(reviewer: User, other_reviewer: User, source: Source) -> None:
    lead = make_lead()
    queue = make_queue(lead, [reviewer, other_reviewer], reviews_per_item=1)
    fill_queue(queue, lead, source, 1)
    item = item_lease_next(queue=queue, reviewer=reviewer)
    assert item is not None
    with pytest.raises(InvalidInput) as caught:  # held by the first reviewer
        review_submit(reviewer=other_reviewer, item=item, answers=ANSWERS)
    assert paths(caught.value) == ["/item"]
    review_submit(reviewer=reviewer, item=item, answers=ANSWERS)
    with pytest.raises(InvalidInput):
        review_submit(reviewer=other_reviewer, item=item, answers=ANSWERS)
    assert Review.objects.count() == 1


# --- a lead's assignments, releases and resolutions


def test_a_lead_assigns_and_releases_an_item(reviewer: User, other_reviewer: User, source: Source) -> None:
    lead = make_lead()
    queue = make_queue(lead, [reviewer, other_reviewer], reviews_per_item=1)
    fill_queue(queue, lead, source, 1)
    item = QueueItem.objects.get()
    item_assign(actor=lead, item=item, reviewer=other_reviewer)
    assert item_lease_next(queue=queue, reviewer=reviewer) is None
    assert item_lease_next(queue=queue, reviewer=other_reviewer) == item
    assert item_release(actor=lead, item=item) == 1
    assert item_release(actor=lead, item=item) == 0
    assert item_lease_next(queue=queue, reviewer=reviewer) == item
    released = AuditEvent.objects.get(action="queue_item.released")
    assert (released.actor_username, released.before) == ("lena", {"reviewers": ["oscar"]})
    assigned = AuditEvent.objects.get(action="queue_item.assigned")
    assert (assigned.after or {})["reviewer"] == "oscar"
    with pytest.raises(NotAllowed):
        item_assign(actor=lead, item=item, reviewer=lead)


@pytest.mark.parametrize("who", ["reviewer", "auditor", "source"])
def test_a_queue_s_lead_only_services_refuse_anyone_else_whoever_calls_them(
    who: str, reviewer: User, auditor: User, source: Source
) -> None:
    lead = make_lead()
    queue = make_queue(lead, [reviewer], reviews_per_item=1)
    fill_queue(queue, lead, source, 1)
    item = QueueItem.objects.get()
    actor: Any = {"reviewer": reviewer, "auditor": auditor, "source": SourceActor(source)}[who]
    calls = {
        "create": lambda: queue_create(actor=actor, name="Mine", questions=QUESTIONS),
        "update": lambda: queue_update(actor=actor, queue=queue, name="Renamed"),
        "lease minutes": lambda: queue_set_lease_minutes(actor=actor, queue=queue, lease_minutes=5),
        "add": lambda: queue_add_conversations(actor=actor, queue=queue, conversations=Conversation.objects.all()),
        "assign": lambda: item_assign(actor=actor, item=item, reviewer=reviewer),
        "release": lambda: item_release(actor=actor, item=item),
        "resolve": lambda: item_resolve(actor=actor, item=item, answers=ANSWERS),
    }
    before = AuditEvent.objects.count()
    for name, call in calls.items():
        with pytest.raises(NotAllowed, match=r"Only leads can do this\."):
            call()
        assert AuditEvent.objects.count() == before, name
    assert Queue.objects.get().name == "Answers" and not Lease.objects.exists() and not Resolution.objects.exists()


def test_a_lead_resolves_an_item_with_a_gold_answer(reviewer: User, source: Source) -> None:
    lead = make_lead()
    queue = make_queue(lead, [reviewer])
    fill_queue(queue, lead, source, 1)
    item = QueueItem.objects.get()
    with pytest.raises(InvalidInput) as caught:
        item_resolve(actor=lead, item=item, answers={"correct": "nope"})
    assert "/answers/correct" in paths(caught.value)
    first = item_resolve(actor=lead, item=item, answers=ANSWERS, correction="Use 58 °C.")
    second = item_resolve(actor=lead, item=item, answers={**ANSWERS, "correct": "wrong"})
    # A resolution is never changed in place: the later one is a new row, and the only one.
    assert first.pk != second.pk and second.answers["correct"] == "wrong" and second.correction == ""
    assert list(Resolution.objects.filter(item=item).values_list("pk", flat=True)) == [second.pk]
    events = list(AuditEvent.objects.filter(action="queue_item.resolved").order_by("id"))
    assert events[0].before is None and (events[0].after or {})["correction"] == "Use 58 °C."
    assert events[1].before == {"answers": ANSWERS, "correction": "Use 58 °C."}
