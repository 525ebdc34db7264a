"""A 1,000-message thread in the browser: the page holds a window of it; a permalink deep inside loads the window
around its message, feedback there saves in place, and j and k move across the edges of what is loaded."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.contrib.auth.models import User

from chats.models import Conversation, Feedback, Message, Source, ToolCall
from chats.selectors.threads import FIRST_WINDOW
from tests import factories
from tests.browser.conftest import Problems, sign_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SIZE = 1000

# The focused element's id and accessible name, and the positions of the messages on the page.
FOCUSED = """() => {
  const el = document.activeElement;
  return el ? { id: el.id, name: el.getAttribute("aria-label") || "" } : null;
}"""
LOADED = """() => Array.from(document.querySelectorAll("ol.messages > li.message-item"))
  .map((li) => Number(li.dataset.position))"""


@pytest.fixture
def long_thread(source: Source) -> Conversation:
    factories.make_labels("helpful")
    return factories.make_conversation(source, n_messages=SIZE)


def on_path(conversation: Conversation, position: int) -> Message:
    return Message.objects.get(conversation=conversation, depth=position, on_active_path=True)


def wait_for_focus(page: Any, message: Message) -> dict[str, str]:
    page.locator(f"#m-{message.pk}:focus").wait_for()
    found = page.evaluate(FOCUSED)
    assert found["id"] == f"m-{message.pk}"
    return dict(found)


def test_a_permalink_deep_in_a_long_thread_feedback_there_and_j_k_across_windows(
    page: Any, live_server: Any, reviewer: User, long_thread: Conversation, problems: Problems
) -> None:
    deep = on_path(long_thread, 811)  # the 812th message
    sign_in(page, live_server.url, "rita")

    # The page comes with its first window only; the permalink loads the window around the message and focuses it.
    page.goto(f"{live_server.url}{long_thread.get_absolute_url()}#m-{deep.pk}")
    assert wait_for_focus(page, deep)["name"].endswith(f"message 812 of {SIZE}")
    loaded = page.evaluate(LOADED)
    assert loaded[:FIRST_WINDOW] == list(range(FIRST_WINDOW)) and 811 in loaded and len(loaded) < SIZE

    # Feedback on it, in place: the form comes by htmx into the loaded chunk, and saves without a reload.
    article = page.locator(f"#m-{deep.pk}")
    article.get_by_role("link", name="Give feedback").click()
    article.locator("form").wait_for()
    article.get_by_text("Thumbs up").click()
    article.get_by_label("helpful").check()
    article.get_by_label("Comment").fill("Right at message 812.")
    article.get_by_role("button", name="Save feedback").click()
    page.locator("#announcer").filter(has_text="Feedback saved.").wait_for()
    assert page.url.endswith(f"#m-{deep.pk}")  # no reload
    feedback = Feedback.objects.get(author=reviewer, message=deep)
    assert (feedback.score, feedback.comment) == (1, "Right at message 812.")
    assert list(feedback.labels.values_list("name", flat=True)) == ["helpful"]

    # k from the first message of the window around it, then on across its upper edge.
    start = min(position for position in page.evaluate(LOADED) if position > FIRST_WINDOW)
    first = on_path(long_thread, start)
    page.locator(f"#m-{first.pk}").focus()
    page.keyboard.press("k")
    before = on_path(long_thread, start - 1)
    assert wait_for_focus(page, before)["name"].endswith(f"message {start} of {SIZE}")

    # j from the last message loaded, across the lower edge: the next chunk comes, and focus goes to its first.
    last = max(page.evaluate(LOADED))
    assert last < SIZE - 1
    page.locator(f"#m-{on_path(long_thread, last).pk}").focus()
    page.keyboard.press("j")
    after = on_path(long_thread, last + 1)
    assert wait_for_focus(page, after)["name"].endswith(f"message {last + 2} of {SIZE}")
    page.keyboard.press("k")
    wait_for_focus(page, on_path(long_thread, last))


def test_j_from_the_end_of_the_first_window_loads_the_next(
    page: Any, live_server: Any, reviewer: User, long_thread: Conversation, problems: Problems
) -> None:
    sign_in(page, live_server.url, "rita", long_thread.get_absolute_url())
    page.wait_for_url(re.compile(re.escape(long_thread.get_absolute_url()) + "$"))
    assert page.evaluate(LOADED) == list(range(FIRST_WINDOW))

    page.locator(f"#m-{on_path(long_thread, FIRST_WINDOW - 1).pk}").focus()
    page.keyboard.press("j")

    found = wait_for_focus(page, on_path(long_thread, FIRST_WINDOW))
    assert found["name"].endswith(f"message {FIRST_WINDOW + 1} of {SIZE}")
    assert page.evaluate(LOADED)[: FIRST_WINDOW + 1] == list(range(FIRST_WINDOW + 1))


def test_the_next_unanswered_call_is_found_beyond_what_is_loaded(
    page: Any, live_server: Any, reviewer: User, source: Source, problems: Problems
) -> None:
    messages = factories.make_messages(600)
    index = next(i for i, m in enumerate(messages) if m["role"] == "tool" and i > 400)
    messages[index] = {"role": "user", "content": "Never mind the search."}
    document = {"chat_id": "airalogy.id.chat.unanswered", "model": "qwen3.5-flash", "main_messages": messages}
    conversation = factories.ingest(source, document, format="chat_document")
    call = ToolCall.objects.get(conversation=conversation, result_message__isnull=True)
    sign_in(page, live_server.url, "rita", conversation.get_absolute_url())
    page.wait_for_url(re.compile(re.escape(conversation.get_absolute_url()) + "$"))
    assert call.message.depth not in page.evaluate(LOADED)

    page.get_by_role("link", name="Next unanswered tool call").click()
    page.locator(f"#call-{call.pk}:focus").wait_for()
    assert call.message.depth in page.evaluate(LOADED)

    # From there, none is left: the live region says so, and focus stays on the call.
    page.get_by_role("link", name="Next unanswered tool call").click()
    page.locator("#announcer").filter(has_text="No unanswered tool call after this point.").wait_for()
