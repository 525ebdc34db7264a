"""Team review in Chromium: two reviewers work one queue that wants two reviews per item, each item held by one of
them at a time; neither sees the other's answers before submitting their own; the lead adjudicates the item they
disagree on. axe finds no serious or critical violation on the queue, review and adjudication pages. The README's
screenshots of the queue page and of the review page are taken here (SCREENSHOTS=1)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User

from chats.models import Conversation, Lease, QueueItem, Resolution, Review, ReviewState, Source
from chats.services.review import queue_add_conversations
from tests import factories
from tests.browser.conftest import Problems, sign_in
from tests.browser.test_given_panel import axe_violations
from tests.factories.review import make_lead, make_queue

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

DOCS = Path(__file__).resolve().parents[2] / "docs"


def serious(page: Any) -> list[str]:
    return [v for v in axe_violations(page) if "(serious)" in v or "(critical)" in v]


def next_item(page: Any, base_url: str, queue_pk: int) -> int:
    """Open the queue's page and press n; the item the review page opened on."""
    page.goto(f"{base_url}/queues/{queue_pk}/")
    page.get_by_role("button", name="Next item").wait_for()
    page.keyboard.press("n")
    page.locator("#review-form").wait_for()
    return int(page.url.rstrip("/").rsplit("/", 1)[1])


def answer_with_keys(page: Any, correct_digit: str, boolean: str) -> None:
    """j to each question, digits and y/n to answer; every answer saves the draft."""
    status = page.locator("#draft-status")
    page.locator("body").click(position={"x": 5, "y": 300})
    page.keyboard.press("j")
    page.keyboard.press(correct_digit)  # categorical: correct / partly / wrong
    status.filter(has_text="Draft saved at").wait_for()
    page.keyboard.press("j")
    page.keyboard.press("1")  # multi-label: hallucination
    page.keyboard.press("j")
    page.keyboard.press("4")  # ordinal, per assistant message: 4
    page.keyboard.press("j")
    page.keyboard.press(boolean)  # boolean
    page.keyboard.press("j")
    page.keyboard.press("Enter")  # the text question
    page.keyboard.type("Checked the answer.")
    page.keyboard.press("Escape")


def submit(page: Any) -> None:
    page.keyboard.press("s")
    page.get_by_text("You submitted your review").wait_for()


def test_two_reviewers_work_a_queue_blind_and_the_lead_adjudicates_their_disagreement(
    page: Any,
    browser: Any,
    live_server: Any,
    reviewer: User,
    other_reviewer: User,
    source: Source,
    problems: Problems,
) -> None:
    lead = make_lead()
    queue = make_queue(lead, [reviewer, other_reviewer], reviews_per_item=2, name="Answers")
    made = [factories.make_conversation(source, n_messages=3, with_tools=False) for _ in range(2)]
    queue_add_conversations(
        actor=lead, queue=queue, conversations=Conversation.objects.filter(pk__in=[c.pk for c in made])
    )
    first, second = QueueItem.objects.filter(queue=queue).order_by("created_at", "id")
    base = live_server.url
    oscar = browser.new_context(viewport={"width": 1400, "height": 900}).new_page()

    # Rita takes the first item with the keyboard and submits it.
    sign_in(page, base, "rita", f"/queues/{queue.pk}/")
    assert serious(page) == []
    assert next_item(page, base, queue.pk) == first.pk
    answer_with_keys(page, "3", "y")  # wrong, tools used well
    page.locator("#draft-status").filter(has_text="Draft saved at").wait_for()
    assert serious(page) == []
    if os.environ.get("SCREENSHOTS"):
        page.screenshot(path=str(DOCS / "screenshot-review.png"))
    submit(page)
    # She goes on to the second item, and holds it.
    assert next_item(page, base, queue.pk) == second.pk

    # Oscar is given the first item, not the one Rita holds; he does not see her answers before submitting.
    sign_in(oscar, base, "oscar", f"/queues/{queue.pk}/")
    assert next_item(oscar, base, queue.pk) == first.pk
    assert set(Lease.objects.values_list("item", "reviewer__username")) == {(first.pk, "oscar"), (second.pk, "rita")}
    assert "1 other review is hidden until you submit yours" in oscar.locator(".other-reviews").inner_text()
    assert oscar.locator('.other-reviews td[data-reviewer="rita"]').count() == 0
    answer_with_keys(oscar, "3", "y")  # he agrees
    submit(oscar)
    assert oscar.locator('.other-reviews td[data-reviewer="rita"]').first.is_visible()

    # Rita submits the second item; only then is it Oscar's, and they disagree on it.
    page.locator("#draft-status").wait_for()
    answer_with_keys(page, "1", "y")  # correct
    submit(page)
    assert next_item(oscar, base, queue.pk) == second.pk
    assert oscar.locator('.other-reviews td[data-reviewer="rita"]').count() == 0
    answer_with_keys(oscar, "3", "n")  # wrong, tools not used well
    submit(oscar)
    assert Review.objects.filter(state=ReviewState.SUBMITTED).count() == 4
    oscar.context.close()

    # The lead sees the disagreement first and resolves it.
    sign_in(page, base, "lena", f"/queues/{queue.pk}/")
    page.get_by_text("Done").first.wait_for()
    assert page.locator('dd[data-count="done"]').inner_text() == "2"
    # The lead sees agreement per question: both agreed on one item of two, on two items only ("too few").
    agreement = page.locator("section.agreement")
    assert "oscar \u2013 rita" in agreement.locator('tr[data-question="correct"]').inner_text()
    assert "too few" in agreement.inner_text()
    assert serious(page) == []
    if os.environ.get("SCREENSHOTS"):
        page.screenshot(path=str(DOCS / "screenshot-queue.png"), full_page=True)
        agreement.screenshot(path=str(DOCS / "screenshot-agreement.png"))
    page.get_by_role("link", name="Adjudicate").click()
    items = page.locator("article.adjudication")
    items.first.wait_for()
    assert items.first.get_attribute("id") == f"item-{second.pk}"
    assert "Disagreement on correct, tools_ok" in items.first.inner_text()
    assert serious(page) == []
    disputed = items.first
    disputed.locator('input[name="q.correct"][value="wrong"]').check()
    disputed.locator('input[name="q.tools_ok"][value="no"]').check()
    disputed.get_by_label("Final correction").fill("The bands come from a low annealing temperature.")
    disputed.get_by_role("button", name=f"Resolve item {second.pk}").click()
    page.get_by_text(f"Item {second.pk} resolved.").wait_for()

    resolution = Resolution.objects.get(item=second)
    assert resolution.answers["correct"] == "wrong" and resolution.answers["tools_ok"] is False
    assert resolution.correction == "The bands come from a low annealing temperature."
