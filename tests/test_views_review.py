"""The team review pages: queues, the review page with its rubric, adjudication, and "Add to queue" on the list.

Who may use each page, blind review as the page shows it, draft and submission, resolution, and the queries each
page takes (the same with one item or many).
"""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.utils import timezone
from rest_framework.test import APIClient

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
from chats.services import review as review_services
from chats.services.review import item_lease_next, queue_add_conversations, review_submit
from tests import factories
from tests.factories.review import QUESTIONS, make_lead, make_queue
from tests.review.page_forms import as_post, form_fields

pytestmark = pytest.mark.django_db


def fill_queue(queue: Queue, lead: User, source: Source, n: int) -> None:
    """`n` conversations with an assistant answer (a question about each assistant message asks of it)."""
    made = [factories.make_conversation(source, n_messages=3, with_tools=False) for _ in range(n)]
    conversations = Conversation.objects.filter(pk__in=[c.pk for c in made])
    queue_add_conversations(actor=lead, queue=queue, conversations=conversations)


def signed_in(client: Client, user: User) -> Client:
    client.force_login(user)
    return client


@pytest.fixture
def lead(db: None) -> User:
    return make_lead()


@pytest.fixture
def queue(lead: User, reviewer: User, other_reviewer: User, source: Source) -> Queue:
    queue = make_queue(lead, [reviewer, other_reviewer])
    fill_queue(queue, lead, source, 1)
    return queue


def item_of(queue: Queue) -> QueueItem:
    return QueueItem.objects.select_related("conversation", "queue").filter(queue=queue).order_by("pk")[0]


def answer_post(item: QueueItem, **overrides: Any) -> dict[str, Any]:
    """A complete form post of the rubric of tests.factories.review."""
    assistant = factories.last_assistant(item.conversation)
    data: dict[str, Any] = {
        "q.correct": "partly",
        "q.issues": ["hallucination"],
        "q.issues!": "1",
        f"q.quality.{assistant.key}": "2",
        "q.tools_ok": "yes",
        "q.note": "The second step is wrong.",
    }
    data.update(overrides)
    return data


def submit_as(user: User, item: QueueItem, **answers: Any) -> None:
    assistant = factories.last_assistant(item.conversation)
    values = {"correct": "partly", "issues": [], "quality": {assistant.key: 3}, "tools_ok": True, **answers}
    review_submit(reviewer=user, item=item, answers=values)


# --------------------------------------------------------------------------------------------------------------
# Queues


def test_anonymous_visitors_are_sent_to_sign_in_from_the_queues(client: Client, queue: Queue) -> None:
    for url in ("/queues/", f"/queues/{queue.pk}/", f"/queues/{queue.pk}/items/{item_of(queue).pk}/"):
        response = client.get(url)
        assert response.status_code == 302
        assert response["Location"].startswith("/accounts/login/")


def test_a_reviewer_sees_only_the_queues_they_work(
    client: Client, queue: Queue, lead: User, reviewer: User, auditor: User
) -> None:
    make_queue(lead, [], name="Elsewhere")

    reviewer_page = signed_in(client, reviewer).get("/queues/")
    auditor_page = signed_in(Client(), auditor).get("/queues/")

    assert [q.name for q in reviewer_page.context["queues"]] == ["Answers"]
    assert [q.name for q in auditor_page.context["queues"]] == ["Answers", "Elsewhere"]
    assert "New queue" not in reviewer_page.content.decode()
    assert signed_in(Client(), reviewer).get(f"/queues/{Queue.objects.get(name='Elsewhere').pk}/").status_code == 404


def test_a_lead_creates_a_queue_with_its_rubric(client: Client, lead: User, reviewer: User) -> None:
    signed_in(client, lead)
    assert "New queue" in client.get("/queues/").content.decode()

    response = client.post(
        "/queues/new/",
        {
            "name": "Safety",
            "instructions": "Look for <script>alert(1)</script> **unsafe** advice.",
            "reviews_per_item": "2",
            "members": ["rita"],
            "rubric-TOTAL_FORMS": "3",
            "rubric-INITIAL_FORMS": "0",
            "rubric-0-key": "safe",
            "rubric-0-prompt": "Is it safe?",
            "rubric-0-type": "boolean",
            "rubric-0-target": "conversation",
            "rubric-1-key": "grade",
            "rubric-1-prompt": "How good?",
            "rubric-1-type": "ordinal",
            "rubric-1-scale_min": "1",
            "rubric-1-scale_max": "5",
            "rubric-1-labels": "1: useless",
            "rubric-1-target": "role:assistant",
            "rubric-2-type": "categorical",
            "rubric-2-target": "conversation",
        },
    )

    queue = Queue.objects.get(name="Safety")
    assert response.status_code == 302 and response["Location"] == f"/queues/{queue.pk}/"
    assert queue.reviews_per_item == 2 and list(queue.members.values_list("username", flat=True)) == ["rita"]
    assert queue.rubric_versions.get().questions == [
        {"key": "safe", "prompt": "Is it safe?", "type": "boolean", "target": "conversation"},
        {
            "key": "grade",
            "prompt": "How good?",
            "type": "ordinal",
            "target": "role:assistant",
            "scale": {"min": 1, "max": 5, "labels": {"1": "useless"}},
        },
    ]
    page = client.get(f"/queues/{queue.pk}/").content.decode()
    assert "<strong>unsafe</strong>" in page and "<script>alert" not in page
    assert AuditEvent.objects.filter(action="queue.created").count() == 1


def test_a_queue_with_a_bad_rubric_is_refused_with_the_reason(client: Client, lead: User) -> None:
    response = signed_in(client, lead).post(
        "/queues/new/",
        {
            "name": "Broken",
            "reviews_per_item": "1",
            "rubric-TOTAL_FORMS": "1",
            "rubric-INITIAL_FORMS": "0",
            "rubric-0-key": "pick",
            "rubric-0-prompt": "Pick one",
            "rubric-0-type": "categorical",
            "rubric-0-target": "conversation",
        },
    )

    assert response.status_code == 400
    assert "/questions/0/options" in response.content.decode()
    assert not Queue.objects.filter(name="Broken").exists()


def test_only_leads_create_and_edit_queues(client: Client, queue: Queue, reviewer: User) -> None:
    signed_in(client, reviewer)
    assert client.post("/queues/new/", {"name": "Mine"}).status_code == 403
    assert client.post(f"/queues/{queue.pk}/edit/", {"name": "Mine"}).status_code == 403


def test_editing_a_rubric_with_reviews_makes_a_new_version(
    client: Client, queue: Queue, lead: User, reviewer: User
) -> None:
    item = item_of(queue)
    item_lease_next(queue=queue, reviewer=reviewer)
    submit_as(reviewer, item)
    signed_in(client, lead)
    post: dict[str, Any] = {
        "name": "Answers",
        "instructions": "",
        "reviews_per_item": "2",
        "members": ["rita", "oscar"],
        "rubric-TOTAL_FORMS": "1",
        "rubric-INITIAL_FORMS": "0",
        "rubric-0-key": "correct",
        "rubric-0-prompt": "Correct?",
        "rubric-0-type": "categorical",
        "rubric-0-options": "yes\nno",
        "rubric-0-target": "conversation",
    }

    assert client.post(f"/queues/{queue.pk}/edit/", post).status_code == 302

    assert list(queue.rubric_versions.values_list("version", flat=True)) == [1, 2]
    assert Review.objects.get().rubric_version.version == 1


# A rubric as the API stores it, or as it was stored before versions had a canonical form: no target, every point
# of the scale named, and an option that holds a comma.
LEGACY_QUESTIONS: list[dict[str, Any]] = [
    {"key": "ok", "prompt": "OK?", "type": "boolean"},
    {
        "key": "grade",
        "prompt": "How good?",
        "type": "ordinal",
        "scale": {"min": 1, "max": 5, "labels": {"1": "bad", "3": "ok", "5": "great"}},
    },
    {"key": "mostly", "prompt": "Right?", "type": "categorical", "options": ["yes, mostly", "no"]},
    {"key": "tags", "prompt": "Tags?", "type": "multi_label", "options": ["a, b", "c"], "target": "role:assistant"},
]


def legacy_queue(lead: User, reviewer: User) -> Queue:
    """A queue whose first version was stored as written, before the canonical form (rows inserted directly)."""
    queue = Queue.objects.create(name="Legacy", reviews_per_item=1, created_by=lead)
    queue.members.set([reviewer])
    RubricVersion.objects.create(queue=queue, version=1, questions=LEGACY_QUESTIONS)
    return queue


def save_as_rendered(client: Client, queue: Queue, **changes: str) -> Any:
    """GET the queue's page, read its edit form's fields as a browser sends them, change some, POST them back."""
    page = client.get(f"/queues/{queue.pk}/").content.decode()
    data = as_post(form_fields(page, f"/queues/{queue.pk}/edit/"))
    assert "rubric-TOTAL_FORMS" in data
    for name, value in changes.items():
        data[name] = [value]
    return client.post(f"/queues/{queue.pk}/edit/", data, follow=True)


@pytest.mark.parametrize("made_by", ["service", "legacy row"])
def test_saving_the_edit_form_unchanged_makes_no_version_and_keeps_every_label_and_option(
    client: Client, lead: User, reviewer: User, made_by: str
) -> None:
    if made_by == "service":
        queue = make_queue(lead, [reviewer], name="Legacy", questions=LEGACY_QUESTIONS)
    else:
        queue = legacy_queue(lead, reviewer)
    stored = queue.rubric_versions.get().questions

    response = save_as_rendered(signed_in(client, lead), queue)

    assert response.status_code == 200 and "Nothing changed." in response.content.decode()
    assert list(queue.rubric_versions.values_list("version", "questions")) == [(1, stored)]


def test_changing_only_the_name_keeps_the_questions_exactly(client: Client, lead: User, reviewer: User) -> None:
    queue = legacy_queue(lead, reviewer)

    response = save_as_rendered(signed_in(client, lead), queue, name="Renamed")

    assert response.status_code == 200 and "Queue saved." in response.content.decode()
    queue.refresh_from_db()
    assert queue.name == "Renamed"
    assert list(queue.rubric_versions.values_list("version", "questions")) == [(1, LEGACY_QUESTIONS)]


def test_a_changed_label_on_the_edit_form_makes_a_new_version_with_every_other_label_kept(
    client: Client, lead: User, reviewer: User
) -> None:
    queue = legacy_queue(lead, reviewer)

    save_as_rendered(signed_in(client, lead), queue, **{"rubric-1-labels": "1: bad\r\n3: fine\r\n5: great"})

    first, second = queue.rubric_versions.order_by("version")
    assert first.questions == LEGACY_QUESTIONS  # never changed in place
    assert second.version == 2
    assert second.questions[1]["scale"]["labels"] == {"1": "bad", "3": "fine", "5": "great"}
    assert second.questions[2]["options"] == ["yes, mostly", "no"]


def test_an_edit_form_that_would_lose_a_question_is_refused_with_the_reason(
    client: Client, lead: User, reviewer: User
) -> None:
    queue = legacy_queue(lead, reviewer)
    response = save_as_rendered(signed_in(client, lead), queue, **{"rubric-1-labels": "\u00b2: bad"})
    assert response.status_code == 400 and "labels" in response.content.decode()
    assert queue.rubric_versions.count() == 1


def test_the_queue_page_counts_items_done_in_progress_and_waiting(
    client: Client, queue: Queue, lead: User, reviewer: User, other_reviewer: User, source: Source
) -> None:
    fill_queue(queue, lead, source, 2)
    first = item_of(queue)
    item_lease_next(queue=queue, reviewer=reviewer)
    submit_as(reviewer, first)
    item_lease_next(queue=queue, reviewer=other_reviewer)
    submit_as(other_reviewer, first)
    item_lease_next(queue=queue, reviewer=reviewer)  # the second item, held

    progress = signed_in(client, reviewer).get(f"/queues/{queue.pk}/").context["progress"]

    assert (progress.done, progress.in_progress, progress.waiting) == (1, 1, 1)
    assert progress.reviews_by_person == [("oscar", 1), ("rita", 1)]


def test_leads_and_auditors_see_agreement_and_reviews_per_day_and_reviewers_do_not(
    client: Client, queue: Queue, lead: User, reviewer: User, other_reviewer: User, auditor: User, source: Source
) -> None:
    fill_queue(queue, lead, source, 1)
    first, second = QueueItem.objects.filter(queue=queue).order_by("pk")[:2]
    for item, (a, b) in ((first, ("correct", "correct")), (second, ("wrong", "correct"))):
        submit_as(reviewer, item, correct=a)
        submit_as(other_reviewer, item, correct=b)

    page = signed_in(client, lead).get(f"/queues/{queue.pk}/")
    html = page.content.decode()
    figures = {group.key: group.figure for group in page.context["agreement"]}
    assert list(figures) == ["correct", "issues", "quality", "tools_ok"]  # the text question has none
    assert (figures["correct"].n_items, figures["correct"].meaningful) == (2, False)
    (pair,) = figures["correct"].pairs
    assert (pair.reviewers, pair.percent_agreement) == (("oscar", "rita"), 0.5)
    assert 'id="agreement-title"' in html and "too few" in html and "oscar \u2013 rita" in html
    assert page.context["progress"].reviews_by_day == [(timezone.localdate().isoformat(), 4)]
    assert 'id="chart-per-day-title"' in html

    assert "agreement" in signed_in(Client(), auditor).get(f"/queues/{queue.pk}/").context
    as_reviewer = signed_in(Client(), reviewer).get(f"/queues/{queue.pk}/")
    assert "agreement" not in as_reviewer.context
    assert 'id="agreement-title"' not in as_reviewer.content.decode()


def test_next_item_leases_an_item_and_opens_its_review_page(client: Client, queue: Queue, reviewer: User) -> None:
    item = item_of(queue)

    response = signed_in(client, reviewer).post(f"/queues/{queue.pk}/next/")

    assert response.status_code == 302 and response["Location"] == f"/queues/{queue.pk}/items/{item.pk}/"
    assert Lease.objects.filter(item=item, reviewer=reviewer).exists()


def test_next_item_is_refused_to_someone_who_does_not_work_the_queue(
    client: Client, queue: Queue, lead: User, auditor: User
) -> None:
    assert signed_in(client, lead).post(f"/queues/{queue.pk}/next/").status_code == 403
    assert signed_in(Client(), auditor).post(f"/queues/{queue.pk}/next/").status_code == 403
    assert not Lease.objects.exists()


def test_next_item_with_nothing_left_goes_back_to_the_queue(client: Client, queue: Queue, reviewer: User) -> None:
    item = item_of(queue)
    item_lease_next(queue=queue, reviewer=reviewer)
    submit_as(reviewer, item)

    response = signed_in(client, reviewer).post(f"/queues/{queue.pk}/next/")

    assert response["Location"] == f"/queues/{queue.pk}/"


def test_a_lead_assigns_and_releases_an_item(client: Client, queue: Queue, lead: User, reviewer: User) -> None:
    item = item_of(queue)
    signed_in(client, lead)

    client.post(f"/queues/{queue.pk}/assign/", {"item": item.pk, "reviewer": "rita", "action": "assign"})
    assert Lease.objects.filter(item=item, reviewer=reviewer).exists()
    client.post(f"/queues/{queue.pk}/assign/", {"item": item.pk, "reviewer": "", "action": "release"})
    assert not Lease.objects.exists()
    assert (
        signed_in(Client(), reviewer)
        .post(f"/queues/{queue.pk}/assign/", {"item": item.pk, "reviewer": "rita", "action": "assign"})
        .status_code
        == 403
    )


def test_the_queue_pages_take_the_same_queries_with_many_items(
    client: Client, queue: Queue, lead: User, reviewer: User, source: Source, django_assert_num_queries: Any
) -> None:
    signed_in(client, lead)

    def count() -> tuple[int, int]:
        from django.db import connection
        from django.test.utils import CaptureQueriesContext

        with CaptureQueriesContext(connection) as listing:
            assert client.get("/queues/").status_code == 200
        with CaptureQueriesContext(connection) as detail:
            assert client.get(f"/queues/{queue.pk}/").status_code == 200
        return len(listing), len(detail)

    one = count()
    fill_queue(queue, lead, source, 12)
    for _ in range(3):
        item_lease_next(queue=queue, reviewer=reviewer)
    make_queue(lead, [reviewer], name="Second")

    assert count() == one
    # session, user, groups, queues, their members, their rubric versions, the people a new queue may have
    with django_assert_num_queries(7):
        client.get("/queues/")


# --------------------------------------------------------------------------------------------------------------
# The review page


def test_the_review_page_shows_the_thread_and_the_rubric(client: Client, queue: Queue, reviewer: User) -> None:
    item = item_of(queue)

    page = signed_in(client, reviewer).get(f"/queues/{queue.pk}/items/{item.pk}/").content.decode()

    assert 'id="review-form"' in page
    for question in QUESTIONS:
        assert question["prompt"] in page
    assert factories.last_assistant(item.conversation).text[:20] in page
    assert "<kbd>s</kbd>" in page


def test_a_draft_is_saved_without_a_reload(client: Client, queue: Queue, reviewer: User) -> None:
    item = item_of(queue)
    signed_in(client, reviewer)

    response = client.post(
        f"/queues/{queue.pk}/items/{item.pk}/draft/", {"q.correct": "wrong", "q.tools_ok": "no"}, HTTP_HX_REQUEST="true"
    )

    assert response.status_code == 200 and response.content.decode().startswith("Draft saved at")
    review = Review.objects.get(item=item, reviewer=reviewer)
    assert review.state == ReviewState.DRAFT and review.answers == {"correct": "wrong", "tools_ok": False}
    page = client.get(f"/queues/{queue.pk}/items/{item.pk}/").content.decode()
    assert 'value="wrong" id="q-correct-3" checked' in page


def test_a_draft_with_a_wrong_answer_says_why(client: Client, queue: Queue, reviewer: User) -> None:
    item = item_of(queue)

    response = signed_in(client, reviewer).post(
        f"/queues/{queue.pk}/items/{item.pk}/draft/", {"q.correct": "maybe"}, HTTP_HX_REQUEST="true"
    )

    assert "Draft not saved: /answers/correct" in response.content.decode()
    assert not Review.objects.exists()


def test_a_draft_with_unstorable_text_or_a_non_ascii_digit_says_why_and_saves_nothing(
    client: Client, queue: Queue, reviewer: User
) -> None:
    item = item_of(queue)
    url = f"/queues/{queue.pk}/items/{item.pk}"
    assistant = factories.last_assistant(item.conversation).key
    signed_in(client, reviewer)

    nul = client.post(f"{url}/draft/", {"q.note": "a\x00b"}, HTTP_HX_REQUEST="true")
    assert nul.status_code == 200 and "Draft not saved: /answers/note" in nul.content.decode()
    digit = client.post(f"{url}/draft/", {f"q.quality.{assistant}": "\u00b2"}, HTTP_HX_REQUEST="true")
    assert digit.status_code == 200 and f"Draft not saved: /answers/quality/{assistant}" in digit.content.decode()
    submitted = client.post(f"{url}/submit/", {**answer_post(item), "q.note": "\x00"})
    assert submitted.status_code == 302
    assert not Review.objects.exists()


def test_the_queue_page_and_agreement_survive_a_question_changing_type(
    client: Client, queue: Queue, lead: User, reviewer: User, other_reviewer: User, auditor: User
) -> None:
    item = item_of(queue)
    submit_as(reviewer, item, issues=["hallucination", "unsafe"])
    submit_as(other_reviewer, item, issues=["unsafe"])
    changed = [{**q, "type": "categorical"} if q["key"] == "issues" else q for q in QUESTIONS]
    review_services.queue_update(actor=lead, queue=queue, questions=changed)

    for person in (lead, auditor):
        page = signed_in(Client(), person).get(f"/queues/{queue.pk}/")
        assert page.status_code == 200
        groups = [(g.key, g.versions, g.current) for g in page.context["agreement"] if g.key == "issues"]
        assert groups == [("issues", [2], True), ("issues", [1], False)]
        html = page.content.decode()
        assert 'data-question="issues" data-versions="1"' in html and "(an earlier form)" in html
        # One item: every pair figure rests on too few items, and says so.
        assert 'data-meaningful="no"' in html
        assert signed_in(Client(), person).get(f"/queues/{queue.pk}/adjudicate/").status_code == 200
    body = signed_in(APIClient(), lead).get(f"/api/v1/queues/{queue.pk}/agreement/").json()
    assert [(q["key"], q["versions"], q["current"]) for q in body["questions"] if q["key"] == "issues"] == [
        ("issues", [2], True),
        ("issues", [1], False),
    ]


def test_a_review_is_submitted_once(client: Client, queue: Queue, reviewer: User) -> None:
    item = item_of(queue)
    signed_in(client, reviewer)
    client.post(f"/queues/{queue.pk}/next/")

    response = client.post(f"/queues/{queue.pk}/items/{item.pk}/submit/", answer_post(item))

    assert response.status_code == 302
    review = Review.objects.get(item=item, reviewer=reviewer)
    assert review.state == ReviewState.SUBMITTED
    assert review.answers["quality"] == {factories.last_assistant(item.conversation).key: 2}
    assert review.answers["issues"] == ["hallucination"] and review.answers["tools_ok"] is True
    again = client.post(f"/queues/{queue.pk}/items/{item.pk}/submit/", answer_post(item, **{"q.correct": "wrong"}))
    assert again.status_code == 302
    assert Review.objects.get(pk=review.pk).answers["correct"] == "partly"
    page = client.get(f"/queues/{queue.pk}/items/{item.pk}/").content.decode()
    assert "You submitted your review" in page and 'id="review-form"' not in page
    assert f'action="/queues/{queue.pk}/next/" id="next-item-form" data-next-form' in page


def test_an_incomplete_submission_is_kept_as_a_draft(client: Client, queue: Queue, reviewer: User) -> None:
    item = item_of(queue)

    signed_in(client, reviewer).post(f"/queues/{queue.pk}/items/{item.pk}/submit/", {"q.correct": "wrong"})

    review = Review.objects.get()
    assert review.state == ReviewState.DRAFT and review.answers == {"correct": "wrong"}
    assert "is required" in client.get(f"/queues/{queue.pk}/items/{item.pk}/").content.decode()


def test_blind_review_hides_the_other_answers_until_ones_own_is_submitted(
    client: Client, queue: Queue, reviewer: User, other_reviewer: User
) -> None:
    item = item_of(queue)
    item_lease_next(queue=queue, reviewer=other_reviewer)
    submit_as(other_reviewer, item, correct="wrong", note="Oscar's secret note")
    url = f"/queues/{queue.pk}/items/{item.pk}/"
    signed_in(client, reviewer)

    before = client.get(url).content.decode()
    assert "Oscar's secret note" not in before and "oscar" not in before.split('id="others-title"')[1]
    assert "1 other review is hidden until you submit yours" in before

    client.post(f"/queues/{queue.pk}/next/")
    client.post(f"{url}submit/", answer_post(item))
    after = client.get(url).content.decode()
    assert "Oscar&#39;s secret note" in after and 'data-reviewer="oscar"' in after


def test_a_lead_and_an_auditor_see_every_review_and_cannot_review(
    client: Client, queue: Queue, lead: User, auditor: User, other_reviewer: User
) -> None:
    item = item_of(queue)
    item_lease_next(queue=queue, reviewer=other_reviewer)
    submit_as(other_reviewer, item, note="Seen by leads")
    url = f"/queues/{queue.pk}/items/{item.pk}/"

    for person in (lead, auditor):
        page = signed_in(Client(), person).get(url).content.decode()
        assert "Seen by leads" in page and 'id="review-form"' not in page
        assert signed_in(Client(), person).post(f"{url}draft/", {"q.correct": "wrong"}).status_code == 403


def test_a_reviewer_outside_the_queue_cannot_open_its_items(client: Client, lead: User, source: Source) -> None:
    stranger = make_queue(lead, [], name="Private")
    fill_queue(stranger, lead, source, 1)
    outsider = User.objects.create_user("olga")
    outsider.groups.add(*User.objects.get(username="lena").groups.none())
    from django.contrib.auth.models import Group

    outsider.groups.add(Group.objects.get(name="Reviewers"))
    signed_in(client, outsider)

    assert client.get(f"/queues/{stranger.pk}/items/{item_of(stranger).pk}/").status_code == 404
    assert client.post(f"/queues/{stranger.pk}/items/{item_of(stranger).pk}/draft/", {}).status_code == 404


def test_the_review_page_takes_the_same_queries_with_more_reviews(
    client: Client, queue: Queue, lead: User, reviewer: User, other_reviewer: User
) -> None:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    item = item_of(queue)
    url = f"/queues/{queue.pk}/items/{item.pk}/"
    signed_in(client, lead)
    client.get(url)  # the first view is recorded; later ones within the window are not
    with CaptureQueriesContext(connection) as none_yet:
        client.get(url)
    for person in (reviewer, other_reviewer):
        item_lease_next(queue=queue, reviewer=person)
        submit_as(person, item)
    with CaptureQueriesContext(connection) as two:
        client.get(url)

    assert len(two) == len(none_yet)


# --------------------------------------------------------------------------------------------------------------
# Adjudication


def test_adjudication_lists_disagreements_first_and_a_lead_resolves(
    client: Client, queue: Queue, lead: User, reviewer: User, other_reviewer: User, source: Source
) -> None:
    fill_queue(queue, lead, source, 1)
    agreed, disputed = QueueItem.objects.filter(queue=queue).order_by("pk")
    for person in (reviewer, other_reviewer):
        for _ in range(2):
            item_lease_next(queue=queue, reviewer=person)
        submit_as(person, agreed)
    submit_as(reviewer, disputed, correct="correct")
    submit_as(other_reviewer, disputed, correct="wrong")
    signed_in(client, lead)

    rows = client.get(f"/queues/{queue.pk}/adjudicate/").context["rows"]

    assert [row["item"].pk for row in rows] == [disputed.pk, agreed.pk]
    assert rows[0]["disagree"] == ["correct"] and rows[1]["disagree"] == []
    disputed = item_of(queue).__class__.objects.select_related("conversation").get(pk=disputed.pk)
    response = client.post(
        f"/queues/{queue.pk}/items/{disputed.pk}/resolve/",
        {**answer_post(disputed, **{"q.correct": "wrong"}), "correction": "The right answer."},
    )
    assert response["Location"] == f"/queues/{queue.pk}/adjudicate/#item-{disputed.pk}"
    resolution = Resolution.objects.get(item=disputed)
    assert resolution.answers["correct"] == "wrong" and resolution.correction == "The right answer."
    assert resolution.lead == lead


def test_only_leads_resolve_and_reviewers_do_not_adjudicate(
    client: Client, queue: Queue, reviewer: User, auditor: User
) -> None:
    item = item_of(queue)
    signed_in(client, reviewer)
    assert client.get(f"/queues/{queue.pk}/adjudicate/").status_code == 403
    assert client.post(f"/queues/{queue.pk}/items/{item.pk}/resolve/", answer_post(item)).status_code == 403
    auditor_client = signed_in(Client(), auditor)
    assert auditor_client.get(f"/queues/{queue.pk}/adjudicate/").status_code == 200
    assert auditor_client.post(f"/queues/{queue.pk}/items/{item.pk}/resolve/", answer_post(item)).status_code == 403
    assert not Resolution.objects.exists()


def test_the_adjudication_page_takes_the_same_queries_with_more_items(
    client: Client, queue: Queue, lead: User, reviewer: User, other_reviewer: User, source: Source
) -> None:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    def reviewed(n: int) -> None:
        for _ in range(n):
            for person in (reviewer, other_reviewer):
                item = item_lease_next(queue=queue, reviewer=person)
                assert item is not None
                submit_as(person, item)

    reviewed(1)
    signed_in(client, lead)
    with CaptureQueriesContext(connection) as one:
        client.get(f"/queues/{queue.pk}/adjudicate/")
    fill_queue(queue, lead, source, 4)
    reviewed(4)
    with CaptureQueriesContext(connection) as five:
        response = client.get(f"/queues/{queue.pk}/adjudicate/")

    assert len(response.context["rows"]) == 5
    assert len(five) == len(one)


# --------------------------------------------------------------------------------------------------------------
# Add to queue


def test_a_lead_adds_the_filters_conversations_to_a_queue(
    client: Client, queue: Queue, lead: User, source: Source, other_source: Source
) -> None:
    factories.make_conversation(source, n_messages=2)
    factories.make_conversation(other_source, n_messages=2)
    signed_in(client, lead)
    assert 'id="add-to-queue"' in client.get(f"/conversations/?source={other_source.name}").content.decode()

    response = client.post(
        "/conversations/add-to-queue/", {"queue": queue.pk, "scope": "filters", "source": other_source.name}
    )

    assert response["Location"] == f"/conversations/?source={other_source.name}"
    in_queue = set(QueueItem.objects.filter(queue=queue).values_list("conversation__source__name", flat=True))
    assert in_queue == {source.name, other_source.name}
    assert QueueItem.objects.filter(queue=queue, conversation__source=other_source).count() == 1


def test_a_lead_adds_the_selected_rows_to_a_queue(client: Client, queue: Queue, lead: User, source: Source) -> None:
    chosen = [factories.make_conversation(source, n_messages=2) for _ in range(2)]
    factories.make_conversation(source, n_messages=2)

    signed_in(client, lead).post(
        "/conversations/add-to-queue/",
        {"queue": queue.pk, "scope": "selected", "selected": [str(c.uuid) for c in chosen]},
    )

    assert QueueItem.objects.filter(queue=queue).count() == 3  # the one it had, and the two chosen
    assert set(QueueItem.objects.filter(conversation__in=chosen).values_list("queue", flat=True)) == {queue.pk}


def test_reviewers_cannot_add_to_a_queue(client: Client, queue: Queue, reviewer: User, source: Source) -> None:
    factories.make_conversation(source, n_messages=2)
    signed_in(client, reviewer)

    assert 'id="add-to-queue"' not in client.get("/conversations/").content.decode()
    assert client.post("/conversations/add-to-queue/", {"queue": queue.pk, "scope": "filters"}).status_code == 403
    assert QueueItem.objects.filter(queue=queue).count() == 1


def test_the_list_page_takes_one_more_query_for_a_lead(
    client: Client, lead: User, source: Source, django_assert_num_queries: Any
) -> None:
    factories.make_conversation(source, n_messages=2)
    signed_in(client, lead)
    client.get("/conversations/")  # the filter form's choices cached
    # session, user, groups, the page of conversations, their count, the saved views, the queues
    with django_assert_num_queries(7):
        assert client.get("/conversations/").status_code == 200
    Conversation.objects.update()  # more rows change nothing
    for _ in range(5):
        factories.make_conversation(source, n_messages=2)
    with django_assert_num_queries(7):
        assert client.get("/conversations/").status_code == 200
