"""Accessibility beyond axe: a reviewer's whole round with the keyboard alone, focus always visible and never lost
after an htmx update; what a screen reader is told (landmarks, one h1, messages with their role and position, tool
calls and injections, updates through a polite live region, the dashboard's charts as tables); no motion for
whoever asks for less; pages 320 CSS pixels wide without sideways scrolling."""

from __future__ import annotations

import re
from itertools import pairwise
from typing import Any

import pytest
from django.contrib.auth.models import User

from chats.models import Conversation, Feedback, Message, ReviewStatus, Source
from tests import factories
from tests.browser.conftest import PASSWORD, Problems, sign_in
from tests.test_palette import contrast

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# What has focus, said the way a test can compare: its tag, id, accessible name or text, and whether the focus
# ring shows (a :focus-visible outline of at least 2px whose colour meets 3:1 against the page).
FOCUSED = """() => {
  const el = document.activeElement;
  if (!el || el === document.body) return null;
  const style = getComputedStyle(el);
  const page = getComputedStyle(document.body).backgroundColor;
  return {
    tag: el.tagName.toLowerCase(), id: el.id, type: el.type || "",
    name: el.getAttribute("aria-label") || el.textContent.trim().replace(/\\s+/g, " ").slice(0, 80),
    visible: el.matches(":focus-visible"), outlineStyle: style.outlineStyle,
    outlineWidth: parseFloat(style.outlineWidth), outlineColor: style.outlineColor, page: page,
    connected: el.isConnected,
  };
}"""


def focused(page: Any) -> dict[str, Any]:
    """The focused element, asserted to be one (not the body, not a detached node) with a focus ring that shows."""
    found = page.evaluate(FOCUSED)
    assert found is not None, "focus was lost (document.activeElement is the body)"
    assert found["connected"]
    assert found["visible"] and found["outlineStyle"] != "none" and found["outlineWidth"] >= 2, found
    assert contrast(found["outlineColor"], found["page"]) >= 3, found
    return dict(found)


def tab_to(page: Any, test: str, *, backwards: bool = False, limit: int = 120) -> dict[str, Any]:
    """Press Tab (or Shift+Tab) until the focused element passes `test`, a JavaScript predicate on it."""
    for _ in range(limit):
        page.keyboard.press("Shift+Tab" if backwards else "Tab")
        if page.evaluate(f"(() => {{ const el = document.activeElement; return Boolean(el && ({test})); }})()"):
            return focused(page)
    raise AssertionError(f"no element passing {test} within {limit} presses of Tab")


@pytest.fixture
def primers(source: Source) -> list[Conversation]:
    factories.make_labels("helpful", "hallucination")
    return [
        factories.make_conversation(
            source, title=f"Primer search {n}", topic="nitrocellulose", n_messages=7, branches=1
        )
        for n in (1, 2)
    ]


def test_a_reviewer_s_round_with_the_keyboard_alone(
    page: Any, live_server: Any, reviewer: User, primers: list[Conversation], problems: Problems
) -> None:
    # Sign in.
    page.goto(f"{live_server.url}/accounts/login/")
    tab_to(page, "el.name === 'username'")
    page.keyboard.type("rita")
    page.keyboard.press("Tab")
    page.keyboard.type(PASSWORD)
    page.keyboard.press("Enter")
    page.get_by_role("heading", name="Dashboard").wait_for()

    # To the list, and filter it by a search.
    assert tab_to(page, "el.matches('.site-nav a') && el.textContent.trim() === 'Conversations'")["tag"] == "a"
    page.keyboard.press("Enter")
    page.get_by_role("heading", name="Conversations", exact=True).wait_for()
    tab_to(page, "el.name === 'q'")
    page.keyboard.type("nitrocellulose")
    page.keyboard.press("Enter")
    page.wait_for_url(re.compile(r"q=nitrocellulose"))
    assert page.locator("table.conversations tbody tr").count() == 2

    # j to the first row, Enter opens it.
    page.keyboard.press("j")
    row = focused(page)
    assert row["name"] == "Primer search 2"
    page.keyboard.press("Enter")
    page.get_by_role("heading", name="Primer search 2").wait_for()
    page.wait_for_load_state("load")  # the deferred scripts that bind j and k have run (the heading comes first)
    conversation = primers[1]

    # j and k move between messages, each announced with its role and position.
    total = len(page.locator("article.message").all())
    page.keyboard.press("j")
    assert focused(page)["name"] == f"system, set apart, message 1 of {total}"
    page.keyboard.press("j")
    assert focused(page)["name"] == f"user, message 2 of {total}"
    page.keyboard.press("j")
    assert focused(page)["name"] == f"assistant, 1 tool call, message 3 of {total}"
    page.keyboard.press("k")
    assert focused(page)["name"] == f"user, message 2 of {total}"

    # A tool call's result, and back to the call.
    result = Message.objects.filter(conversation=conversation, role="tool").order_by("depth").first()
    assert result is not None
    tab_to(page, "el.matches('a.to-result')")
    page.keyboard.press("Enter")
    page.wait_for_url(re.compile(f"#m-{result.pk}$"))
    page.locator(f"#m-{result.pk}:focus").wait_for()
    assert focused(page)["name"] == f"tool, result of airalogy_search, message 4 of {total}"
    tab_to(page, "el.matches('a.to-call')")
    page.keyboard.press("Enter")
    page.wait_for_url(re.compile(r"#call-\d+$"))
    page.locator(".tool-call:focus").wait_for()
    assert focused(page)["name"] == "Tool call airalogy_search"

    # Switch to the other branch of the last answer.
    tab_to(page, "el.matches('.branch-switcher a')")
    page.keyboard.press("Enter")
    page.wait_for_url(re.compile(r"\?.*at=\d+"))
    answer = focused(page)
    assert answer["name"] == f"assistant, message {total} of {total}"
    assert "Answer 2: check the" in page.locator(f"#{answer['id']}").inner_text()

    # Feedback on it, with a label and a correction: the form comes in by htmx, and focus with it.
    tab_to(page, f"el.closest('#{answer['id']}') && el.textContent.trim() === 'Give feedback'")
    page.keyboard.press("Enter")
    assert page.locator(f"#{answer['id']} form").wait_for() is None
    page.locator("input[type=radio]:focus").wait_for()
    assert focused(page)["type"] == "radio"
    page.keyboard.press("ArrowRight")  # Thumbs up, Neutral: the arrow keys move and choose.
    page.keyboard.press("ArrowLeft")
    tab_to(page, "el.type === 'checkbox' && el.value === 'helpful'")
    page.keyboard.press("Space")
    tab_to(page, "el.name === 'comment'")
    page.keyboard.type("Close, but the temperature is too low.")
    tab_to(page, "el.name === 'correction'")
    page.keyboard.type("Raise the annealing temperature to 62 °C.")
    tab_to(page, "el.textContent.trim() === 'Save feedback'")
    page.keyboard.press("Enter")
    page.locator("#announcer").filter(has_text="Feedback saved.").wait_for()
    assert focused(page)["name"] == "Edit your feedback"
    feedback = Feedback.objects.get(author=reviewer, message_id=int(answer["id"].removeprefix("m-")))
    assert feedback.score == 1
    assert feedback.correction == "Raise the annealing temperature to 62 °C."
    assert list(feedback.labels.values_list("name", flat=True)) == ["helpful"]

    # Mark the conversation reviewed: the buttons are in the page's head, before the messages.
    tab_to(page, "el.textContent.trim() === 'Mark reviewed'", backwards=True)
    page.keyboard.press("Enter")
    page.locator("#announcer").filter(has_text="Review status saved: Reviewed.").wait_for()
    assert focused(page)["name"] == "Review status saved: Reviewed."
    conversation.refresh_from_db()
    assert conversation.review_status == ReviewStatus.REVIEWED

    # n: the next unreviewed conversation of the same filtered list.
    page.keyboard.press("n")
    page.get_by_role("heading", name="Primer search 1").wait_for()
    assert "q=nitrocellulose" in page.url


HEADINGS = """() => Array.from(document.querySelectorAll('h1, h2, h3, h4, h5, h6'))
  .filter((h) => h.getClientRects().length > 0 || h.closest('.visually-hidden'))
  .map((h) => Number(h.tagName[1]))"""


def assert_outline(page: Any) -> None:
    """Landmarks, one h1, and headings that never skip a level going down."""
    assert page.get_by_role("banner").count() == 1
    assert page.get_by_role("main").count() == 1
    levels = page.evaluate(HEADINGS)
    assert levels.count(1) == 1 and levels[0] == 1, levels
    assert all(b <= a + 1 for a, b in pairwise(levels)), levels


def test_what_a_screen_reader_is_told(
    page: Any, live_server: Any, reviewer: User, source: Source, problems: Problems
) -> None:
    factories.make_labels("helpful")
    tools = factories.make_conversation(source, title="Primer search", n_messages=6)
    record = factories.make_record_qa(source)
    sign_in(page, live_server.url, "rita")
    assert_outline(page)
    assert page.get_by_role("navigation", name="Main").count() == 1
    # Every chart of the dashboard is also a table, with the same figures.
    tools_table = page.get_by_role("table", name="Most-used tools")
    assert tools_table.get_by_role("row", name="airalogy_search 1", exact=True).count() == 1
    # Each chart is hidden from the reader (the table says it all) or, when its bars are links, a named group.
    charts = page.locator(
        "figure.chart svg.bars[aria-hidden='true'], figure.chart svg.bars[role='group'][aria-labelledby]"
    )
    assert (
        charts.count()
        == page.locator("figure.chart svg.bars").count()
        == page.locator("figure.chart table").count()
        > 0
    )

    page.goto(f"{live_server.url}{tools.get_absolute_url()}")
    assert_outline(page)
    messages = page.get_by_role("article")
    assert messages.count() == 6
    assert page.get_by_role("article", name="user, message 2 of 6", exact=True).count() == 1
    assert page.get_by_role("article", name="tool, result of airalogy_search, message 4 of 6", exact=True).count() == 1
    assert page.get_by_role("group", name="Tool call airalogy_search", exact=True).count() == 1
    # Updates are said through one polite live region, there before they happen.
    live = page.locator("#announcer")
    assert live.get_attribute("role") == "status" and live.get_attribute("aria-live") == "polite"
    page.get_by_role("button", name="Mark in review").click()
    live.filter(has_text="Review status saved: In review.").wait_for()

    page.goto(f"{live_server.url}{record.get_absolute_url()}")
    assert_outline(page)
    injections = page.get_by_role("group", name=re.compile(r"^Injected "))
    assert injections.count() == page.locator(".injection").count() > 0

    for path in ("/conversations/", "/artifacts/", "/queues/"):
        page.goto(f"{live_server.url}{path}")
        assert_outline(page)


MOVING = """() => Array.from(document.querySelectorAll('*')).filter((el) => {
  const style = getComputedStyle(el);
  const durations = (style.transitionDuration + ',' + style.animationDuration).split(',').map(parseFloat);
  return durations.some((d) => d > 0) || style.animationName !== 'none' || style.scrollBehavior === 'smooth';
}).map((el) => el.tagName + '.' + el.className)"""


def test_nothing_moves_for_whoever_asks_for_less_motion(
    browser: Any, live_server: Any, reviewer: User, source: Source
) -> None:
    conversation = factories.make_conversation(source, title="Primer search", n_messages=6, branches=1)
    context = browser.new_context(reduced_motion="reduce")
    page = context.new_page()
    sign_in(page, live_server.url, "rita", conversation.get_absolute_url())
    assert page.evaluate("matchMedia('(prefers-reduced-motion: reduce)').matches")
    assert page.evaluate(MOVING) == []
    page.keyboard.press("j")
    assert page.evaluate(MOVING) == []
    context.close()


def test_pages_fit_320_css_pixels_without_scrolling_sideways(
    browser: Any, live_server: Any, reviewer: User, source: Source
) -> None:
    factories.make_labels("helpful")
    conversation = factories.make_conversation(source, title="Primer search", n_messages=6, branches=1)
    factories.make_record_qa(source)
    context = browser.new_context(viewport={"width": 320, "height": 640})
    page = context.new_page()
    sign_in(page, live_server.url, "rita")
    for path in ("/", "/conversations/", conversation.get_absolute_url()):
        page.goto(f"{live_server.url}{path}")
        width = page.evaluate("document.scrollingElement.scrollWidth")
        wide = page.evaluate(
            """() => Array.from(document.querySelectorAll('body *')).filter((el) => {
                 const r = el.getBoundingClientRect();
                 return r.right > 321 && !el.closest('pre');
               }).slice(-8).map((el) => el.tagName + '.' + el.className + ' ' + Math.round(el.getBoundingClientRect().right))"""
        )
        assert width <= 320, f"{path}: {width} px wide, {wide}"
    # Code blocks scroll on their own rather than widen the page.
    assert page.evaluate("getComputedStyle(document.querySelector('pre')).overflowX") in ("auto", "scroll")
    context.close()
