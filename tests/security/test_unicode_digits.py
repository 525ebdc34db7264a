"""Digits from other scripts (``²``, ``①``, ``፩``: `str.isdigit()` is true for each, and `int()` refuses them) and
integers no column holds, in every kind of integer a client types: a page's query string, a form field, a review
answer, an audit row's key. Each is refused or ignored, never a 500 (`chats.integers` is the one parser)."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from django.contrib.auth.models import User
from django.test import Client

from chats.admin.audit import target_url
from chats.api.fields import IntegerSerializerField
from chats.form_fields import IntegerFormField
from chats.models import AuditEvent, Conversation, Feedback, Queue, QueueItem, Review, Source
from chats.selectors.audit import audit_rows
from tests import factories
from tests.factories.review import make_lead, make_queue

pytestmark = pytest.mark.django_db

OTHER_DIGITS = ["²", "①", "፩", "١٢", "\uff11\uff12", "1_000", "12.0", " 12", "9" * 30]


@pytest.fixture
def conversation(source: Source) -> Conversation:
    return factories.make_conversation(source, n_messages=3)


@pytest.mark.parametrize("digits", OTHER_DIGITS)
def test_the_feedback_form_of_a_message_numbered_in_other_digits_is_a_404(
    client: Client, reviewer: User, conversation: Conversation, digits: str
) -> None:
    client.force_login(reviewer)
    response = client.get(f"/conversations/{conversation.uuid}/feedback/form/", {"message": digits})
    assert response.status_code == 404


@pytest.mark.parametrize("digits", OTHER_DIGITS)
def test_feedback_posted_on_a_message_numbered_in_other_digits_is_refused_and_nothing_is_stored(
    client: Client, reviewer: User, conversation: Conversation, digits: str
) -> None:
    client.force_login(reviewer)
    events = AuditEvent.objects.count()
    response = client.post(
        f"/conversations/{conversation.uuid}/feedback/", {"message": digits, "score": "1"}, HTTP_HX_REQUEST="true"
    )
    assert response.status_code == 200  # the block again, with the form's error
    assert "whole number" in response.content.decode()
    assert not Feedback.objects.exists() and AuditEvent.objects.count() == events


@pytest.mark.parametrize("digits", ["²", "①", "፩"])
def test_a_review_draft_with_an_ordinal_in_other_digits_is_refused_with_its_pointer(
    client: Client, reviewer: User, other_reviewer: User, source: Source, digits: str
) -> None:
    lead = make_lead()
    queue: Queue = make_queue(lead, [reviewer, other_reviewer])
    factories.make_conversation(source, n_messages=3, with_tools=False)
    from chats.services.review import queue_add_conversations

    queue_add_conversations(actor=lead, queue=queue, conversations=Conversation.objects.all())
    item = QueueItem.objects.get(queue=queue)
    assistant = factories.last_assistant(item.conversation)
    client.force_login(reviewer)
    for step in ("draft", "submit"):
        response = client.post(
            f"/queues/{queue.pk}/items/{item.pk}/{step}/",
            {f"q.quality.{assistant.key}": digits},
            HTTP_HX_REQUEST="true",
        )
        assert response.status_code < 500, step
    assert not Review.objects.filter(answers__has_key="quality").exists()


@pytest.mark.parametrize("key", ["²", "①", "፩", "9" * 30, "-1", "0"])
@pytest.mark.parametrize("kind", ["label", "user", "source", "api_key"])
def test_an_audit_row_whose_target_key_is_not_a_row_id_links_nowhere(kind: str, key: str) -> None:
    event = AuditEvent(action=f"{kind}.updated", target_type=kind, target_id=key, after={}, before={})
    assert target_url(event) is None
    assert audit_rows([event], staff=True)[0].target.url is None


@pytest.mark.parametrize("digits", OTHER_DIGITS)
def test_the_integer_fields_take_ascii_digits_only(digits: str) -> None:
    form_field = IntegerFormField(required=False)
    with pytest.raises(Exception, match="whole number"):
        form_field.clean(digits)
    serializer_field = IntegerSerializerField()
    with pytest.raises(Exception, match="valid integer"):
        serializer_field.run_validation(digits)
    assert form_field.clean("12") == 12 and serializer_field.run_validation("-3") == -3


def _int_routes() -> list[str]:
    """Every URL pattern with an `<int:...>` segment, outside the admin (whose ids are its own)."""
    from django.urls import URLPattern, URLResolver, get_resolver

    found = []

    def walk(patterns: Sequence[URLPattern | URLResolver], prefix: str) -> None:
        for pattern in patterns:
            route = prefix + str(pattern.pattern)
            if isinstance(pattern, URLResolver):
                walk(pattern.url_patterns, route)
            elif isinstance(pattern, URLPattern) and "<int:" in route and not route.startswith("admin/"):
                found.append(route)

    walk(get_resolver().url_patterns, "")
    return found


@pytest.mark.parametrize("number", ["9" * 30, str(2**63), "0"])
def test_a_path_integer_no_row_can_have_is_never_a_server_error_on_any_route(
    admin_user: User, client: Client, number: str
) -> None:
    import re

    client.force_login(admin_user)
    routes = _int_routes()
    assert routes
    for route in routes:
        path = "/" + re.sub(r"<int:[^>]+>", number, route)
        for method in ("get", "post"):
            response = getattr(client, method)(path)
            assert response.status_code < 500, (method, path)
