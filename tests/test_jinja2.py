"""The Jinja2 partials (templates/jinja2/, chats/jinja2.py): they format values exactly as the Django templates around
them do, and escape untrusted text, with autoescaping always on."""

from __future__ import annotations

import datetime as dt

import pytest
from django.contrib.auth.models import User
from django.template import defaultfilters
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from chats import jinja2
from chats.models import Source
from tests import factories

MOMENTS = [
    dt.datetime(2026, 11, 30, 9, 5, 7, 123456, tzinfo=dt.UTC),
    dt.datetime(2024, 2, 29, 23, 59, 0, tzinfo=dt.UTC),
]


@pytest.mark.parametrize("format_string", ["c", "Y-m-d H:i", "N j, Y, P"])
@pytest.mark.parametrize("zone", ["UTC", "Asia/Shanghai", "America/Los_Angeles"])
@pytest.mark.parametrize("moment", MOMENTS, ids=["with-microseconds", "leap-day-midnight-edge"])
def test_the_date_filter_matches_django_s(moment: dt.datetime, zone: str, format_string: str) -> None:
    with timezone.override(zone):
        # template_localtime exists in django.utils.timezone but django-stubs does not declare it.
        local = timezone.template_localtime(moment)  # type: ignore[attr-defined]
        expected = defaultfilters.date(local, format_string)

        assert jinja2.date(moment, format_string) == expected


def test_the_date_filter_leaves_a_missing_value_empty() -> None:
    assert jinja2.date(None, "c") == defaultfilters.date(None, "c") == ""


# --- escaping: the thread's partials show untrusted text as text


@pytest.mark.django_db
def test_hostile_text_reaches_the_thread_as_escaped_text(client: Client, reviewer: User, source: Source) -> None:
    conversation = factories.make_hostile_conversation(source)
    client.force_login(reviewer)
    body = client.get(conversation.get_absolute_url()).content.decode()
    messages = body[body.index('<ol class="messages"') : body.index("</ol>", body.index('<ol class="messages"'))]
    assert messages.count('<li class="message-item" data-position=') == 7
    for raw in ("<script", "<img src=x", "<svg", "<iframe", '<a href="javascript:'):
        assert raw not in messages
    assert 'class="name">· sys&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;' in messages  # a name: escaped
    assert "evil&lt;script&gt;alert(12)&lt;/script&gt;" in messages  # a tool name


@pytest.mark.django_db
def test_the_feedback_fragment_escapes_the_comment(client: Client, reviewer: User, source: Source) -> None:
    conversation = factories.make_conversation(source, n_messages=3)
    answer = factories.last_assistant(conversation)
    client.force_login(reviewer)
    response = client.post(
        reverse("chats:feedback_save", args=[conversation.uuid]),
        {"message": answer.pk, "score": "1", "comment": 'She said "it\'s <b>fine</b>"', "next": "/"},
        HTTP_HX_REQUEST="true",
    )
    body = response.content.decode()
    assert '<p class="fb-comment">She said &#34;it&#39;s &lt;b&gt;fine&lt;/b&gt;&#34;</p>' in body
    assert 'name="csrfmiddlewaretoken"' in body  # the delete form of one's own feedback
