"""The audit section: /audit/ (the event list and its filters), /audit/<id>/ (one event and its diff) and
/audit/export/ (the log as NDJSON or CSV), for auditors without the staff flag."""

from __future__ import annotations

import csv
import io
import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from chats.audit_actions import AuditAction
from chats.models import AuditEvent, Conversation, Source
from chats.selectors.audit import AUDIT_PAGE_SIZE, csv_cell
from chats.services.audit import CommandActor, SourceActor, audit_event, audit_record
from chats.services.audit_chain import audit_insert
from chats.services.feedback import feedback_submit, feedback_update
from tests.factories import last_assistant, make_conversation, make_labels

pytestmark = pytest.mark.django_db


def signed_in(client: Client, user: User) -> Client:
    client.force_login(user)
    return client


def event_ids(response: Any) -> list[int]:
    return [row.event.pk for row in response.context["page"].rows]


def many_events(count: int, *, action: AuditAction = AuditAction.LABEL_CREATED, actor: Any = None) -> list[AuditEvent]:
    events = [
        audit_event(actor=actor, action=action, target_type="label", target_id=n, after={"name": f"label {n}"})
        for n in range(count)
    ]
    audit_insert(events)
    return events


@pytest.fixture
def conversation(source: Source) -> Conversation:
    return make_conversation(source, n_messages=4, with_tools=False, title="Primer design")


@pytest.fixture
def changed_feedback(conversation: Conversation, reviewer: User) -> AuditEvent:
    """A reviewer's feedback on the last answer, then changed: the "feedback.updated" event."""
    helpful, wrong = make_labels("helpful", "wrong")
    message = last_assistant(conversation)
    feedback, _ = feedback_submit(
        author=reviewer, conversation=conversation, message=message, score=1, labels=[helpful], comment="Good."
    )
    feedback_update(
        actor=reviewer,
        feedback=feedback,
        score=-1,
        labels=[wrong],
        comment="Wrong <script>alert(1)</script> primer.\nThe Tm is 72 °C, not 55 °C.",
        correction="",
    )
    return AuditEvent.objects.get(action="feedback.updated")


# --------------------------------------------------------------------------------------------------------------
# Who may use it


@pytest.mark.parametrize("path", ["/audit/", "/audit/export/?format=csv"])
def test_an_auditor_who_is_not_staff_uses_the_audit_pages(client: Client, auditor: User, path: str) -> None:
    assert not auditor.is_staff
    response = signed_in(client, auditor).get(path)
    assert response.status_code == 200


def test_an_auditor_opens_an_event(client: Client, auditor: User, changed_feedback: AuditEvent) -> None:
    assert signed_in(client, auditor).get(f"/audit/{changed_feedback.pk}/").status_code == 200


@pytest.mark.parametrize("path", ["/audit/", "/audit/1/", "/audit/export/?format=ndjson"])
def test_a_reviewer_is_refused(client: Client, reviewer: User, path: str) -> None:
    many_events(1)
    assert signed_in(client, reviewer).get(path).status_code == 403


@pytest.mark.parametrize("path", ["/audit/", "/audit/1/", "/audit/export/?format=ndjson"])
def test_someone_not_signed_in_is_sent_to_the_sign_in_page(client: Client, path: str) -> None:
    many_events(1)
    response = client.get(path)
    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/") or "login" in response["Location"]


@pytest.mark.parametrize("path", ["/audit/", "/audit/1/", "/audit/export/?format=ndjson"])
def test_a_source_key_has_no_access(client: Client, ingest_key: str, path: str) -> None:
    many_events(1)
    response = client.get(path, HTTP_AUTHORIZATION=f"Api-Key {ingest_key}")
    assert response.status_code == 302
    assert "login" in response["Location"]
    assert AuditEvent.objects.filter(action="audit.exported").count() == 0


def test_the_navigation_links_the_audit_log_for_auditors_only(client: Client, auditor: User, reviewer: User) -> None:
    assert b'href="/audit/"' in signed_in(client, auditor).get("/").content
    assert b'href="/audit/"' not in signed_in(Client(), reviewer).get("/").content


# --------------------------------------------------------------------------------------------------------------
# Filters


def test_filters_by_a_persons_username(
    client: Client, auditor: User, reviewer: User, other_reviewer: User, conversation: Conversation
) -> None:
    feedback_submit(author=reviewer, conversation=conversation, score=1)
    feedback_submit(author=other_reviewer, conversation=conversation, score=-1)
    response = signed_in(client, auditor).get("/audit/?actor=oscar")
    rows = response.context["page"].rows
    assert [(row.event.actor_username, row.event.action) for row in rows] == [("oscar", "feedback.created")]


def test_filters_by_a_source_key_and_by_a_command_without_its_account(
    client: Client, auditor: User, source: Source, conversation: Conversation
) -> None:
    audit_record(
        actor=CommandActor("prune_receipt_payloads"),
        action=AuditAction.RECEIPT_PAYLOADS_PRUNED,
        target_type="receipts",
        target_id="all",
    )
    signed_in(client, auditor)
    by_key = client.get("/audit/?actor=source:masterbrain")
    assert [row.event.action for row in by_key.context["page"].rows] == ["conversation.created"]
    by_command = client.get("/audit/?actor=command:prune_receipt_payloads")
    assert [row.event.action for row in by_command.context["page"].rows] == ["receipt.payloads_pruned"]
    assert event_ids(client.get("/audit/?actor=command:prune")) == []  # a command's whole name, not any prefix


def test_filters_by_action_target_type_and_conversation(
    client: Client, auditor: User, source: Source, conversation: Conversation, changed_feedback: AuditEvent
) -> None:
    other = make_conversation(source, n_messages=4, with_tools=False)
    signed_in(client, auditor)
    assert event_ids(client.get("/audit/?action=feedback.updated")) == [changed_feedback.pk]
    feedback_events = AuditEvent.objects.filter(target_type="feedback").order_by("-id")
    assert event_ids(client.get("/audit/?target_type=feedback")) == [e.pk for e in feedback_events]
    timeline = event_ids(client.get(f"/audit/?conversation={conversation.uuid}"))
    assert timeline == list(
        AuditEvent.objects.filter(conversation_uuid=conversation.uuid).order_by("-id").values_list("id", flat=True)
    )
    assert len(timeline) == 3  # created, feedback created, feedback updated
    assert event_ids(client.get(f"/audit/?conversation={other.uuid}")) == [
        AuditEvent.objects.get(conversation_uuid=other.uuid).pk
    ]


def test_filters_by_source_give_the_events_of_its_conversations(
    client: Client, auditor: User, reviewer: User, source: Source, other_source: Source
) -> None:
    mine = make_conversation(source, n_messages=4, with_tools=False)
    theirs = make_conversation(other_source, n_messages=2, with_tools=False)
    feedback_submit(author=reviewer, conversation=mine, score=1)
    feedback_submit(author=reviewer, conversation=theirs, score=1)
    response = signed_in(client, auditor).get(f"/audit/?source={source.name}")
    assert {row.event.conversation_uuid for row in response.context["page"].rows} == {mine.uuid}
    assert [row.event.action for row in response.context["page"].rows] == ["feedback.created", "conversation.created"]


def test_filters_by_time_range_in_whole_utc_days(client: Client, auditor: User) -> None:
    def at(day: datetime) -> AuditEvent:
        event = audit_event(actor=None, action=AuditAction.LABEL_CREATED, target_type="label", target_id=day.day)
        event.created_at = day
        audit_insert([event])
        return event

    early, inside, late = (at(datetime(2026, 3, d, 23, 59, tzinfo=UTC)) for d in (1, 2, 3))
    response = signed_in(client, auditor).get("/audit/?date_from=2026-03-02&date_to=2026-03-02")
    assert event_ids(response) == [inside.pk]
    assert event_ids(client.get("/audit/?date_from=2026-03-02")) == [late.pk, inside.pk]
    assert event_ids(client.get("/audit/?date_to=2026-03-02")) == [inside.pk, early.pk]


def test_a_malformed_filter_is_shown_as_an_error_not_a_crash(client: Client, auditor: User) -> None:
    response = signed_in(client, auditor).get("/audit/?conversation=not-a-uuid&date_from=soon")
    assert response.status_code == 200
    assert b"has-error" in response.content


# --------------------------------------------------------------------------------------------------------------
# Paging and queries


def test_pages_follow_the_chain_newest_first_without_gaps_or_repeats(client: Client, auditor: User) -> None:
    many_events(2 * AUDIT_PAGE_SIZE + 7)
    everything = list(AuditEvent.objects.order_by("-id").values_list("id", flat=True))
    signed_in(client, auditor)
    seen: list[int] = []
    url = "/audit/?action=label.created"
    pages = []
    while url:
        response = client.get(url)
        pages.append(response)
        seen += event_ids(response)
        cursor = response.context["page"].next_cursor
        url = f"/audit/?action=label.created&after={cursor}" if cursor else ""
    assert seen == everything
    assert [len(event_ids(p)) for p in pages] == [AUDIT_PAGE_SIZE, AUDIT_PAGE_SIZE, 7]
    # Back from the last page: the newer events again, in the same order; the filter stays in the links.
    last = pages[-1].context["page"]
    back = client.get(f"/audit/?action=label.created&before={last.previous_cursor}")
    assert event_ids(back) == everything[AUDIT_PAGE_SIZE : 2 * AUDIT_PAGE_SIZE]
    assert b"action=label.created&amp;after=" in pages[0].content


def _list_queries(client: Client, django_assert_num_queries: Any, count: int) -> None:
    # session, user, groups, the page of events, the feedback's messages (anchors: one query for the page, when
    # it holds feedback events), the chain's last verification
    with django_assert_num_queries(6):
        response = client.get("/audit/")
    assert response.status_code == 200
    assert len(response.context["page"].rows) == count


def test_the_list_takes_the_same_queries_for_few_and_many_events(
    client: Client, auditor: User, reviewer: User, source: Source, django_assert_num_queries: Any
) -> None:
    signed_in(client, auditor)
    conversation = make_conversation(source, n_messages=4, with_tools=False)
    feedback_submit(author=reviewer, conversation=conversation, message=last_assistant(conversation), score=1)
    _list_queries(client, django_assert_num_queries, 2)
    many_events(60)
    for _ in range(6):
        other = make_conversation(source, n_messages=4, with_tools=False)
        feedback_submit(author=reviewer, conversation=other, message=last_assistant(other), comment="x")
    _list_queries(client, django_assert_num_queries, AUDIT_PAGE_SIZE)


def test_staff_see_the_same_queries_at_any_size_too(
    client: Client, admin_user: User, source: Source, django_assert_num_queries: Any
) -> None:
    signed_in(client, admin_user)
    make_conversation(source, n_messages=4, with_tools=False)
    # session, user, groups, the page of events, the sources named by keys (admin links), the last verification
    with django_assert_num_queries(6):
        client.get("/audit/")
    many_events(60)
    for _ in range(5):
        make_conversation(source, n_messages=4, with_tools=False)
    with django_assert_num_queries(6):
        response = client.get("/audit/")
    assert len(response.context["page"].rows) == AUDIT_PAGE_SIZE


def test_the_event_page_takes_a_constant_number_of_queries(
    client: Client, auditor: User, changed_feedback: AuditEvent, django_assert_num_queries: Any
) -> None:
    signed_in(client, auditor)
    # session, user, groups, the event, the feedback's message (its anchor)
    with django_assert_num_queries(5):
        assert client.get(f"/audit/{changed_feedback.pk}/").status_code == 200


def test_an_unknown_event_is_404(client: Client, auditor: User) -> None:
    assert signed_in(client, auditor).get("/audit/999999/").status_code == 404


# --------------------------------------------------------------------------------------------------------------
# The event: its diff and its links


def test_a_feedback_change_shows_the_changed_fields_field_by_field(
    client: Client, auditor: User, changed_feedback: AuditEvent
) -> None:
    response = signed_in(client, auditor).get(f"/audit/{changed_feedback.pk}/")
    changes = {change.path: change for change in response.context["row"].changes}
    assert set(changes) == {"score", "labels", "comment"}
    assert (changes["score"].old, changes["score"].new) == (1, -1)
    assert (changes["labels"].old, changes["labels"].new) == (["helpful"], ["wrong"])
    assert changes["comment"].text_diff is not None  # a long text: diffed by line
    html = response.content.decode()
    assert "± changed" in html
    assert "<script>alert(1)</script>" not in html
    assert "Wrong &lt;script&gt;alert(1)&lt;/script&gt; primer." in html
    assert '<span class="visually-hidden">added: </span>' in html  # not by colour alone
    assert '<span class="visually-hidden">removed: </span>' in html


def test_added_and_removed_fields_are_said_in_words(client: Client, auditor: User, conversation: Conversation) -> None:
    event = audit_record(
        actor=None,
        action=AuditAction.LABEL_UPDATED,
        target_type="label",
        target_id=1,
        before={"name": "old", "colour": "red"},
        after={"name": "old", "description": "<b>new</b>"},
    )
    html = signed_in(client, auditor).get(f"/audit/{event.pk}/").content.decode()
    assert "+ added" in html and "\u2212 removed" in html
    assert "&lt;b&gt;new&lt;/b&gt;" in html and "<b>new</b>" not in html


def test_the_list_summarises_the_changed_fields(client: Client, auditor: User, changed_feedback: AuditEvent) -> None:
    response = signed_in(client, auditor).get("/audit/?action=feedback.updated")
    (row,) = response.context["page"].rows
    assert row.summary == "comment changed, labels changed, score changed"
    assert b"comment changed, labels changed, score changed" in response.content


def test_a_feedback_event_links_the_thread_at_its_message(
    client: Client, auditor: User, conversation: Conversation, changed_feedback: AuditEvent
) -> None:
    response = signed_in(client, auditor).get(f"/audit/{changed_feedback.pk}/")
    message = last_assistant(conversation)
    expected = f"/conversations/{conversation.uuid}/#m-{message.pk}"
    assert response.context["row"].target.url == expected
    assert f'href="{expected}"'.encode() in response.content
    # A person's name is only text for an auditor who is not staff: the admin is not theirs.
    assert response.context["row"].actor.url is None


def test_an_ingestion_event_links_its_conversation_its_source_and_its_receipt(
    client: Client, auditor: User, conversation: Conversation
) -> None:
    created = AuditEvent.objects.get(action="conversation.created")
    receipt = conversation.receipts.get()
    row = signed_in(client, auditor).get(f"/audit/{created.pk}/").context["row"]
    assert row.target.url == f"/conversations/{conversation.uuid}/"
    assert row.receipt.url == f"/api/v1/receipts/{receipt.uuid}/"
    assert row.actor.text == "source:masterbrain"
    assert row.actor.url == "/conversations/?source=masterbrain"


def test_staff_get_admin_links_for_people_sources_and_keys(
    client: Client, admin_user: User, reviewer: User, source: Source, conversation: Conversation
) -> None:
    from chats.services.sources import api_key_create

    key, _ = api_key_create(source=source, name="logger", actor=admin_user)
    signed_in(client, admin_user)
    key_event = AuditEvent.objects.get(action="api_key.created")
    row = client.get(f"/audit/{key_event.pk}/").context["row"]
    assert row.actor.url == f"/admin/auth/user/{admin_user.pk}/change/"
    assert row.target.url == f"/admin/chats/apikey/{key.pk}/change/"
    ingest_row = client.get(f"/audit/{AuditEvent.objects.get(action='conversation.created').pk}/").context["row"]
    assert ingest_row.actor.url == f"/admin/chats/source/{source.pk}/change/"
    assert SourceActor(source).get_username() == ingest_row.actor.text


def test_the_page_says_when_the_chain_was_last_verified(client: Client, auditor: User) -> None:
    from django.core.management import call_command

    signed_in(client, auditor)
    assert b"never been verified" in client.get("/audit/").content
    many_events(3)
    call_command("verify_audit", stdout=io.StringIO())
    html = client.get("/audit/").content.decode()
    assert "Chain intact" in html
    assert "3 events checked" in html


# --------------------------------------------------------------------------------------------------------------
# The export


def test_the_ndjson_export_streams_the_filtered_log_oldest_first(
    client: Client, auditor: User, conversation: Conversation, changed_feedback: AuditEvent
) -> None:
    response = signed_in(client, auditor).get(f"/audit/export/?format=ndjson&conversation={conversation.uuid}")
    assert response.streaming
    assert response["Content-Type"] == "application/x-ndjson"
    lines = [json.loads(line) for line in b"".join(response.streaming_content).splitlines()]  # type: ignore[attr-defined]
    assert [line["action"] for line in lines] == ["conversation.created", "feedback.created", "feedback.updated"]
    assert lines[-1]["before"]["score"] == 1 and lines[-1]["after"]["score"] == -1
    assert lines[-1]["event_hash"] == changed_feedback.event_hash


def test_the_export_is_itself_audited_with_its_filters(
    client: Client, auditor: User, conversation: Conversation
) -> None:
    response = signed_in(client, auditor).get(f"/audit/export/?format=csv&conversation={conversation.uuid}")
    rows = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))  # type: ignore[attr-defined]
    exported = AuditEvent.objects.get(action="audit.exported")
    assert exported.actor == auditor
    assert exported.after == {
        "format": "csv",
        "filters": {"conversation": str(conversation.uuid)},
        "up_to_id": exported.pk - 1,
    }
    assert [row["action"] for row in rows] == ["conversation.created"]  # the export does not list itself


def test_a_malformed_export_request_is_refused_and_not_recorded(client: Client, auditor: User) -> None:
    signed_in(client, auditor)
    assert client.get("/audit/export/?format=xlsx").status_code == 400
    assert client.get("/audit/export/?format=csv&conversation=nope").status_code == 400
    assert not AuditEvent.objects.filter(action="audit.exported").exists()


def test_csv_cells_that_a_spreadsheet_would_run_are_escaped(client: Client, auditor: User) -> None:
    for name in ("=cmd", "+1+1", "-2+3", "@SUM(A1)"):
        audit_record(
            actor=User.objects.create_user(username=name),
            action=AuditAction.LABEL_CREATED,
            target_type="label",
            target_id=name,
        )
    audit_record(actor=None, action=AuditAction.LABEL_CREATED, target_type="label", target_id="\tTAB")
    response = signed_in(client, auditor).get("/audit/export/?format=csv&action=label.created")
    rows = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))  # type: ignore[attr-defined]
    assert [row["actor_username"] for row in rows] == ["'=cmd", "'+1+1", "'-2+3", "'@SUM(A1)", ""]
    assert [row["target_id"] for row in rows] == ["'=cmd", "'+1+1", "'-2+3", "'@SUM(A1)", "'\tTAB"]


@pytest.mark.parametrize(
    ("value", "cell"),
    [
        ("=1+2", "'=1+2"),
        ("+1", "'+1"),
        ("-1", "'-1"),
        ("@x", "'@x"),
        ("\tx", "'\tx"),
        ("\rx", "'\rx"),
        ("plain", "plain"),
        ("a=b", "a=b"),
        (None, ""),
        ({"k": "=x"}, '{"k": "=x"}'),
        (-1, "'-1"),
    ],
)
def test_csv_cell(value: Any, cell: str) -> None:
    assert csv_cell(value) == cell


def test_the_export_takes_the_date_filters_too(client: Client, auditor: User) -> None:
    many_events(5)
    since = datetime.now(UTC) - timedelta(days=1)
    response = signed_in(client, auditor).get(f"/audit/export/?format=ndjson&date_from={since.date()}")
    assert len(b"".join(response.streaming_content).splitlines()) == 5  # type: ignore[attr-defined]


@pytest.mark.parametrize("query", ["after=99999999999999999999", "before=-1", "after=x", "after=5&before=9"])
def test_a_cursor_not_given_out_here_is_ignored_or_read_as_given(client: Client, auditor: User, query: str) -> None:
    many_events(3)
    response = signed_in(client, auditor).get(f"/audit/?{query}")
    assert response.status_code == 200
