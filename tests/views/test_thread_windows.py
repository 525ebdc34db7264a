"""A long thread in windows: which messages a window holds (chats.selectors.threads.path_window), the page's first
window and its links to the rest, and the chunks the page loads (chats.views.thread_messages)."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from chats.models import Conversation, Message, Source, ToolCall
from chats.selectors.threads import AROUND_BEFORE, FIRST_WINDOW, WINDOW_SIZE, path_window, thread_read
from chats.services.feedback import feedback_submit
from tests import factories

pytestmark = pytest.mark.django_db

LONG = 300


@pytest.fixture
def long_thread(source: Source) -> Conversation:
    return factories.make_conversation(source, n_messages=LONG)


def at_depth(conversation: Conversation, depth: int) -> Message:
    return Message.objects.get(conversation=conversation, depth=depth, on_active_path=True)


def chunk_url(conversation: Conversation) -> str:
    return f"/conversations/{conversation.uuid}/messages/"


def positions(body: str) -> list[int]:
    return [int(p) for p in re.findall(r'<li class="message-item" data-position="(\d+)">', body)]


# --------------------------------------------------------------------------------------------------------------
# The selector


def test_the_first_window_holds_the_first_messages_and_says_where_the_next_starts(long_thread: Conversation) -> None:
    window = path_window(long_thread, limit=WINDOW_SIZE)

    assert [m.depth for m in window.messages] == list(range(WINDOW_SIZE))
    assert (window.start, window.end, window.total) == (0, WINDOW_SIZE, LONG)
    assert window.next_after == WINDOW_SIZE - 1 and window.on_active_path


def test_a_window_after_a_position_starts_past_it_and_the_last_one_has_no_next(long_thread: Conversation) -> None:
    window = path_window(long_thread, after=99, limit=50)
    assert [m.depth for m in window.messages] == list(range(100, 150)) and window.next_after == 149

    last = path_window(long_thread, after=279, limit=50)
    assert [m.depth for m in last.messages] == list(range(280, LONG)) and last.next_after is None

    beyond = path_window(long_thread, after=10_000, limit=50)
    assert beyond.messages == [] and beyond.next_after is None


def test_a_window_around_a_deep_message_holds_it_with_a_little_before(long_thread: Conversation) -> None:
    deep = at_depth(long_thread, 250)

    window = path_window(long_thread, around=deep.pk, limit=40)

    assert window.around == deep.pk and window.start == 250 - AROUND_BEFORE
    assert deep in window.messages and window.end == 250 - AROUND_BEFORE + 40


def test_a_window_around_a_message_near_the_end_is_full(long_thread: Conversation) -> None:
    deep = at_depth(long_thread, 280)

    window = path_window(long_thread, around=deep.pk, limit=WINDOW_SIZE)

    assert deep in window.messages and (window.start, window.end) == (LONG - WINDOW_SIZE, LONG)


def test_a_window_around_a_message_of_another_branch_falls_back_to_the_start(source: Source) -> None:
    conversation = factories.make_conversation(source, n_messages=5, branches=1, with_tools=False)
    other = Message.objects.get(conversation=conversation, depth=4, on_active_path=False)

    window = path_window(conversation, around=other.pk, limit=2)

    assert window.around is None and window.start == 0 and len(window.messages) == 2


def test_windows_along_another_branch_follow_that_branch(source: Source) -> None:
    conversation = factories.make_conversation(source, n_messages=150, branches=2, with_tools=False)
    first, _, newest = Message.objects.filter(conversation=conversation, depth=149).order_by("id")

    around = thread_read(conversation, user=None, at=first.pk, around=first.pk, limit=20)
    assert not around.on_active_path and around.at == first.pk
    assert around.messages[-1].message == first and around.total == 150
    assert around.messages[-1].branch is not None and around.messages[-1].branch.index == 1

    start = thread_read(conversation, user=None, at=first.pk, limit=20)
    assert [item.position for item in start.messages] == list(range(20))
    active = thread_read(conversation, user=None, after=139, limit=20)
    assert active.messages[-1].message == newest and active.messages[-1].branch is not None


def test_a_byte_budget_cuts_a_window_but_keeps_the_message_asked_for(long_thread: Conversation) -> None:
    deep = at_depth(long_thread, 200)
    budget = sum(len(m.text) for m in Message.objects.filter(conversation=long_thread, depth__lt=10))

    first = path_window(long_thread, limit=WINDOW_SIZE, byte_budget=budget)
    assert 1 <= len(first.messages) <= 10 and first.end == len(first.messages)

    tiny = path_window(long_thread, around=deep.pk, limit=WINDOW_SIZE, byte_budget=1)
    assert tiny.messages[-1] == deep and tiny.end == 201


# The active path's length, the window's messages, their siblings, tool calls, artifacts, feedback (with authors),
# its labels, the label taxonomy; around a message, its position; along another branch, the tree's skeleton
# instead of the path's length and the siblings.
WINDOW_QUERIES = {"first": 8, "after": 8, "around": 9, "branch": 7}


@pytest.mark.parametrize("kind", WINDOW_QUERIES)
def test_a_window_takes_the_same_queries_whatever_the_thread_size(
    source: Source, reviewer: User, django_assert_num_queries: Any, kind: str
) -> None:
    for size in (8, LONG):
        conversation = factories.make_conversation(source, n_messages=size)
        deep = at_depth(conversation, size - 2)
        for message in (at_depth(conversation, 5), deep):  # feedback in every window below
            feedback_submit(author=reviewer, conversation=conversation, message=message, score=1)
        options = {"first": {}, "after": {"after": 3}, "around": {"around": deep.pk}, "branch": {"at": deep.pk}}
        with django_assert_num_queries(WINDOW_QUERIES[kind]):
            thread = thread_read(conversation, user=reviewer, limit=WINDOW_SIZE, **options[kind])
        assert thread.messages and thread.total == size


# --------------------------------------------------------------------------------------------------------------
# The page


def test_the_page_shows_the_first_window_and_a_gap_for_the_rest(
    client: Client, reviewer: User, long_thread: Conversation
) -> None:
    client.force_login(reviewer)
    body = client.get(long_thread.get_absolute_url()).content.decode()

    assert positions(body) == list(range(FIRST_WINDOW))
    assert f'data-total="{LONG}"' in body and f'data-chunk-url="{chunk_url(long_thread)}"' in body
    assert f'<li class="window-gap" data-after="{FIRST_WINDOW - 1}" data-before="{LONG}">' in body
    assert f'href="?after={FIRST_WINDOW - 1}">Messages {FIRST_WINDOW + 1}–{LONG} of {LONG}' in body  # noqa: RUF001


def test_the_page_around_a_deep_message_shows_it_and_links_both_ways(
    client: Client, reviewer: User, long_thread: Conversation
) -> None:
    deep = at_depth(long_thread, 212)
    client.force_login(reviewer)

    body = client.get(f"{long_thread.get_absolute_url()}?around={deep.pk}").content.decode()

    assert positions(body) == list(range(207, 207 + FIRST_WINDOW))  # from a little before it
    assert f'id="m-{deep.pk}"' in body and "message 213 of 300" in body
    assert '<li class="window-gap" data-after="-1" data-before="207">' in body
    assert f'href="?after={207 - 1 - FIRST_WINDOW}">Messages 1–207 of 300' in body  # noqa: RUF001
    # Its feedback link (no JavaScript) and form lead back to this window.
    assert f"?feedback={deep.pk}&amp;around={deep.pk}#fb-{deep.pk}" in body


def test_the_page_ignores_window_parameters_that_are_not_valid(
    client: Client, reviewer: User, long_thread: Conversation
) -> None:
    client.force_login(reviewer)
    for query in ("?after=-4", "?around=abc", "?after=x&around=0", f"?around={2**70}"):
        response = client.get(long_thread.get_absolute_url() + query)
        assert response.status_code == 200, query
        assert positions(response.content.decode()) == list(range(FIRST_WINDOW)), query


def test_links_to_a_message_outside_the_window_open_the_page_around_it(
    client: Client, reviewer: User, long_thread: Conversation
) -> None:
    result = Message.objects.filter(conversation=long_thread, role="tool", depth__gt=1).order_by("depth").first()
    assert result is not None
    call = result.answered_calls.get()
    assert call.message.depth == result.depth - 1
    client.force_login(reviewer)

    # A window of the call alone links to its result, and one of the result alone back to the call, around them.
    alone = client.get(chunk_url(long_thread), {"after": call.message.depth - 1, "limit": 1}).content.decode()
    assert f'class="to-result" href="?around={result.pk}#m-{result.pk}"' in alone
    alone = client.get(chunk_url(long_thread), {"after": result.depth - 1, "limit": 1}).content.decode()
    assert f'class="to-call" href="?around={call.message_id}#call-{call.pk}"' in alone
    # Within one window, the links stay on the page.
    both = client.get(chunk_url(long_thread), {"after": call.message.depth - 1, "limit": 2}).content.decode()
    assert f'class="to-result" href="#m-{result.pk}"' in both and f'class="to-call" href="#call-{call.pk}"' in both


# --------------------------------------------------------------------------------------------------------------
# The chunks


def test_a_chunk_after_a_position_holds_the_next_messages_numbered_along_the_path(
    client: Client, reviewer: User, long_thread: Conversation
) -> None:
    client.force_login(reviewer)

    response = client.get(chunk_url(long_thread), {"after": 99, "limit": 30})

    assert response.status_code == 200
    body = response.content.decode()
    assert positions(body) == list(range(100, 130))
    assert "message 101 of 300" in body and "<html" not in body
    assert 'hx-get="/conversations/' in body  # its feedback links, for htmx to wire up


def test_a_chunk_around_a_message_holds_it(client: Client, reviewer: User, long_thread: Conversation) -> None:
    deep = at_depth(long_thread, 280)
    client.force_login(reviewer)

    body = client.get(chunk_url(long_thread), {"around": deep.pk}).content.decode()

    assert f'id="m-{deep.pk}"' in body and positions(body) == list(range(LONG - WINDOW_SIZE, LONG))


def test_a_chunk_answers_bad_parameters_with_400_and_a_message_off_the_path_with_404(
    client: Client, reviewer: User, source: Source
) -> None:
    conversation = factories.make_conversation(source, n_messages=5, branches=1, with_tools=False)
    other = Message.objects.get(conversation=conversation, depth=4, on_active_path=False)
    client.force_login(reviewer)
    for query in ({"limit": 0}, {"limit": 501}, {"after": -1}, {"after": "x"}, {"around": 2**70}):
        assert client.get(chunk_url(conversation), query).status_code == 400, query
    assert client.get(chunk_url(conversation), {"around": other.pk}).status_code == 404
    # Along its own branch, the same message is there.
    body = client.get(chunk_url(conversation), {"around": other.pk, "at": other.pk}).content.decode()
    assert f'id="m-{other.pk}"' in body


def test_a_chunk_refuses_anonymous_visitors_and_users_without_a_role(
    client: Client, no_role_user: User, long_thread: Conversation
) -> None:
    response = client.get(chunk_url(long_thread), {"after": 5})
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")
    client.force_login(no_role_user)
    assert client.get(chunk_url(long_thread), {"after": 5}).status_code == 403


def test_a_chunk_takes_the_same_queries_for_a_short_and_a_long_thread(
    client: Client, reviewer: User, source: Source, long_thread: Conversation, django_assert_num_queries: Any
) -> None:
    short = factories.make_conversation(source, n_messages=8)
    client.force_login(reviewer)
    for conversation in (short, long_thread):
        client.get(conversation.get_absolute_url())  # the view recorded: the chunk below is read alone
        # session, user, groups, conversation; the path's length, the window's messages, their siblings; tool
        # calls, artifacts, feedback (with authors), label taxonomy
        with django_assert_num_queries(11):
            response = client.get(chunk_url(conversation), {"after": 2, "limit": WINDOW_SIZE})
        assert response.status_code == 200 and positions(response.content.decode())[0] == 3


# --------------------------------------------------------------------------------------------------------------
# The next unanswered tool call


@pytest.fixture
def unanswered_deep(source: Source) -> tuple[Conversation, Message]:
    """A long thread with one call, far past the first window, that no tool message answers."""
    messages = factories.make_messages(LONG)
    index = next(i for i, m in enumerate(messages) if m["role"] == "tool" and i > 2 * WINDOW_SIZE)
    messages[index] = {"role": "user", "content": "Never mind the search."}
    document = {"chat_id": "airalogy.id.chat.unanswered", "model": "qwen3.5-flash", "main_messages": messages}
    conversation = factories.ingest(source, document, format="chat_document")
    caller = ToolCall.objects.get(conversation=conversation, result_message__isnull=True).message
    assert caller.depth > 2 * WINDOW_SIZE - 2
    return conversation, caller


def test_the_next_unanswered_call_is_found_past_any_window(unanswered_deep: tuple[Conversation, Message]) -> None:
    conversation, caller = unanswered_deep

    window = path_window(conversation, unanswered_after=-1, limit=WINDOW_SIZE)
    assert window.around == caller.pk and caller in window.messages

    assert path_window(conversation, unanswered_after=caller.depth, limit=WINDOW_SIZE).around is None


def test_the_chunk_and_the_page_of_the_next_unanswered_call(
    client: Client, reviewer: User, unanswered_deep: tuple[Conversation, Message]
) -> None:
    conversation, caller = unanswered_deep
    client.force_login(reviewer)

    chunk = client.get(chunk_url(conversation), {"unanswered_after": 3})
    assert chunk.status_code == 200 and 'class="tool-call unanswered"' in chunk.content.decode()
    assert client.get(chunk_url(conversation), {"unanswered_after": caller.depth}).status_code == 404

    first = client.get(conversation.get_absolute_url()).content.decode()
    assert 'href="?unanswered_after=-1" data-next-unanswered>' in first and 'tool-call unanswered"' not in first
    # Without JavaScript, the link opens the window around it, and from there searches past it.
    page = client.get(conversation.get_absolute_url(), {"unanswered_after": -1}).content.decode()
    assert f'id="m-{caller.pk}"' in page and f'href="?unanswered_after={caller.depth}" data-next-unanswered>' in page


def test_on_another_branch_the_page_opens_at_its_message_and_links_back_to_its_start(
    client: Client, reviewer: User, source: Source
) -> None:
    conversation = factories.make_conversation(source, n_messages=150, branches=1, with_tools=False)
    other = Message.objects.get(conversation=conversation, depth=149, on_active_path=False)
    root = at_depth(conversation, 0)
    client.force_login(reviewer)

    body = client.get(conversation.get_absolute_url(), {"at": other.pk}).content.decode()
    assert positions(body) == list(range(150 - FIRST_WINDOW, 150)) and f'id="m-{other.pk}"' in body
    before = 150 - 2 * FIRST_WINDOW - 1
    assert f'href="?at={other.pk}&amp;after={before}">Messages 1–{150 - FIRST_WINDOW} of 150' in body  # noqa: RUF001
    # The window before it, and from there the branch's start.
    body = client.get(conversation.get_absolute_url(), {"at": other.pk, "after": before}).content.decode()
    assert positions(body) == list(range(before + 1, before + 1 + FIRST_WINDOW))
    assert f'href="?at={other.pk}&amp;around={root.pk}">Messages 1–{before + 1} of 150' in body  # noqa: RUF001

    start = client.get(conversation.get_absolute_url(), {"at": other.pk, "around": root.pk}).content.decode()
    assert positions(start) == list(range(FIRST_WINDOW)) and "another branch than the conversation" in start
