"""Property-based, on PostgreSQL: for a random rubric, a random sequence of edits (among them saves of the queue's
edit form exactly as the page renders it, and the same questions spelled differently) and random reviews between
them, every stored review still validates against its own rubric version, a save that changes nothing makes no
version, and agreement (the selector, the page and the API) never fails."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import transaction
from django.test import Client
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rest_framework.test import APIClient

from chats.models import Conversation, Queue, Review, ReviewState, RubricVersion, Source
from chats.review.rubric import answers_errors, rubric_errors, same_questions
from chats.selectors.pinning import active_path_pin, pin_at
from chats.selectors.review import current_rubric, queue_agreement
from chats.services import review as review_services
from tests import factories
from tests.factories.review import make_lead
from tests.review.page_forms import as_post, form_fields

pytestmark = pytest.mark.django_db

# One line of text, as a prompt, an option or a label is (no control character; PostgreSQL and UTF-8 hold it).
line = st.text(st.characters(blacklist_categories=["Cc", "Cs"]), min_size=1, max_size=12).filter(str.strip)
free_text = st.text(st.characters(blacklist_categories=["Cs"], blacklist_characters="\x00"), max_size=20)
# A small pool of keys, so that later rubrics ask the same key again, often with another type.
KEYS = ["a", "b", "c_1", "d"]
TARGETS = ["conversation", "role:assistant", "role:user"]


@st.composite
def questions(draw: st.DrawFn) -> list[dict[str, Any]]:
    keys = draw(st.lists(st.sampled_from(KEYS), min_size=1, max_size=4, unique=True))
    made = []
    for key in keys:
        kind = draw(st.sampled_from(["categorical", "multi_label", "ordinal", "boolean", "text"]))
        question: dict[str, Any] = {"key": key, "prompt": draw(line), "type": kind}
        if draw(st.booleans()):  # the default target is often left out, as API clients do
            question["target"] = draw(st.sampled_from(TARGETS))
        if kind in ("categorical", "multi_label"):
            options = draw(st.lists(line, min_size=1, max_size=4, unique_by=str.strip))
            # An option holding a comma: what the old edit form split in two.
            question["options"] = [*options, "yes, mostly"] if draw(st.booleans()) else options
            question["options"] = list(dict.fromkeys(option.strip() for option in question["options"]))
        elif kind == "ordinal":
            low = draw(st.integers(-3, 3))
            high = low + draw(st.integers(1, 6))
            points = draw(st.lists(st.integers(low, high), unique=True, max_size=4))
            question["scale"] = {"min": low, "max": high, "labels": {str(point): draw(line) for point in points}}
        made.append(question)
    assert rubric_errors(made) == []
    return made


def respelled(stored: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The same questions spelled differently: the default target left out, labels in reverse, spaces around."""
    spelled = []
    for question in stored:
        copy = {**question, "prompt": f" {question['prompt']} "}
        if copy.get("target") == "conversation":
            del copy["target"]
        if "scale" in copy:
            copy["scale"] = {**copy["scale"], "labels": dict(reversed(list(copy["scale"]["labels"].items())))}
        spelled.append(copy)
    return spelled


def answer_of(draw: Any, question: dict[str, Any], path: dict[str, str]) -> Any:
    def value() -> Any:
        kind = question["type"]
        if kind == "categorical":
            return draw(st.sampled_from(question["options"]))
        if kind == "multi_label":
            return draw(st.lists(st.sampled_from(question["options"]), unique=True))
        if kind == "ordinal":
            return draw(st.integers(question["scale"]["min"], question["scale"]["max"]))
        if kind == "boolean":
            return draw(st.booleans())
        return draw(free_text)

    target = question.get("target") or "conversation"
    if target == "conversation":
        return value()
    keys = sorted(key for key, role in path.items() if role == target.removeprefix("role:"))
    if not keys:
        return {}
    return {key: value() for key in draw(st.lists(st.sampled_from(keys), unique=True))}


SETTINGS = settings(
    max_examples=20,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large],
)
OPERATIONS = ["save_unchanged", "rename", "respell", "change", "review", "review"]
NAMES = itertools.count()


@pytest.fixture
def conversations(source: Source) -> list[Conversation]:
    # System, user, assistant: questions about each user or assistant message have something to name.
    return [factories.make_conversation(source, n_messages=3, with_tools=False) for _ in range(2)]


@SETTINGS
@given(data=st.data())
def test_every_review_validates_against_its_version_and_agreement_never_fails(
    reviewer: User, other_reviewer: User, conversations: list[Conversation], data: st.DataObject
) -> None:
    with transaction.atomic():
        lead = User.objects.filter(username="lena").first() or make_lead()
        page = Client()
        page.force_login(lead)
        queue = review_services.queue_create(
            actor=lead,
            name=f"Property {next(NAMES)}",
            questions=data.draw(questions(), label="rubric"),
            reviews_per_item=2,
            members=[reviewer, other_reviewer],
        )
        review_services.queue_add_conversations(
            actor=lead, queue=queue, conversations=Conversation.objects.filter(pk__in=[c.pk for c in conversations])
        )
        items = list(queue.items.order_by("pk"))
        paths = {item.pk: active_path_pin(item.conversation_id).message_roles for item in items}
        left = [(person, item) for person in (reviewer, other_reviewer) for item in items]

        for operation in data.draw(st.lists(st.sampled_from(OPERATIONS), min_size=1, max_size=8), label="edits"):
            versions = RubricVersion.objects.filter(queue=queue).count()
            if operation in ("save_unchanged", "rename"):
                html = page.get(f"/queues/{queue.pk}/").content.decode()
                posted = as_post(form_fields(html, f"/queues/{queue.pk}/edit/"))
                if operation == "rename":
                    posted["name"] = [f"{queue.name} again"]
                response = page.post(f"/queues/{queue.pk}/edit/", posted)
                assert response.status_code == 302, response.content.decode()[:2000]
                assert RubricVersion.objects.filter(queue=queue).count() == versions
                queue.refresh_from_db()
            elif operation == "respell":
                stored = current_rubric(queue).questions
                assert not review_services.queue_update(actor=lead, queue=queue, questions=respelled(stored))
                assert RubricVersion.objects.filter(queue=queue).count() == versions
            elif operation == "change":
                review_services.queue_update(actor=lead, queue=queue, questions=data.draw(questions(), label="edit"))
            elif left:
                person, item = left.pop(data.draw(st.integers(0, len(left) - 1), label="who"))
                rubric = current_rubric(queue).questions
                answers = {q["key"]: answer_of(data.draw, q, paths[item.pk]) for q in rubric}
                review_services.review_submit(reviewer=person, item=item, answers=answers)

        reviews = Review.objects.filter(item__queue=queue, state=ReviewState.SUBMITTED).select_related("rubric_version")
        for review in reviews:
            questions_then = review.rubric_version.questions
            assert rubric_errors(questions_then) == []
            judged = pin_at(review.conversation_id, review.pinned_leaf_key).message_roles  # the path it pinned
            assert answers_errors(questions_then, review.answers, complete=True, message_keys=judged) == []
        # Each version differs in meaning from the one before it.
        stored = list(RubricVersion.objects.filter(queue=queue).order_by("version").values_list("questions", flat=True))
        assert all(not same_questions(before, after) for before, after in itertools.pairwise(stored))
        # Each figure compares the answers of one form of its question, and says from which versions.
        for group in queue_agreement(queue):
            assert group.versions and group.current == (max(group.versions) == current_rubric(queue).version)
        assert page.get(f"/queues/{queue.pk}/").status_code == 200
        api = APIClient()
        api.force_login(lead)
        assert api.get(f"/api/v1/queues/{queue.pk}/agreement/").status_code == 200
        assert Queue.objects.filter(pk=queue.pk).exists()
        transaction.set_rollback(True)
