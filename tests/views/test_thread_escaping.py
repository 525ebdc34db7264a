"""The thread's partials (Jinja2, templates/jinja2/) escape untrusted text, with autoescaping always on."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from chats.models import Source
from tests import factories

pytestmark = pytest.mark.django_db


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
