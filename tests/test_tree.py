"""Messages form a tree: the active path, siblings and depth on a branching conversation."""

from __future__ import annotations

import pytest

from chats import services
from chats.models import Conversation, Message

pytestmark = pytest.mark.django_db


def node(node_id: str, parent: str | None, role: str, text: str, timestamp: int) -> dict:
    return {
        "node_id": node_id,
        "parent_id": parent,
        "timestamp": timestamp,
        "message": {
            "id": f"m-{node_id}",
            "author": {"role": role, "metadata": {}},
            "content": {"content_type": "text", "parts": [text]},
        },
    }


GRAPH = {
    "conversation_id": "tree-1",
    "nodes": [
        node("q", None, "user", "How do I passage HEK293T cells?", 100),
        node("a1", "q", "assistant", "First answer", 110),
        node("a2", "q", "assistant", "Regenerated answer", 120),
        node("f", "a2", "user", "And the split ratio?", 130),
        node("a3", "q", "assistant", "Third answer", 125),
    ],
}


@pytest.fixture
def conversation(source) -> Conversation:
    return services.conversation_ingest(source=source, document=GRAPH).conversation


def test_the_active_path_runs_from_the_root_to_the_newest_leaf(conversation):
    path = list(conversation.messages.active_path())

    # f (timestamp 130) is the newest leaf; a1 and a3 are leaves of other branches.
    assert [m.key for m in path] == ["q", "a2", "f"]
    assert conversation.active_leaf_key == "f" and conversation.branch_count == 2


def test_siblings_are_the_branches_at_a_message_in_arrival_order(conversation):
    regenerated = Message.objects.get(conversation=conversation, key="a2")

    assert [m.key for m in regenerated.siblings()] == ["a1", "a2", "a3"]
    assert [m.sibling_index for m in regenerated.siblings()] == [0, 1, 2]
    assert list(Message.objects.get(conversation=conversation, key="q").siblings()) == [
        Message.objects.get(conversation=conversation, key="q")
    ]


def test_depth_counts_the_steps_from_the_root(conversation):
    depths = dict(Message.objects.filter(conversation=conversation).values_list("key", "depth"))

    assert depths == {"q": 0, "a1": 1, "a2": 1, "a3": 1, "f": 2}
    follow_up = Message.objects.get(conversation=conversation, key="f")
    assert [m.key for m in follow_up.path_from_root()] == ["q", "a2", "f"]


def test_switching_branch_makes_the_path_through_that_message_active(conversation):
    services.message_set_active_branch(conversation=conversation, message=Message.objects.get(key="a3"))

    conversation.refresh_from_db()
    assert [m.key for m in conversation.messages.active_path()] == ["q", "a3"]
    assert conversation.active_leaf_key == "a3"
    assert Message.objects.filter(conversation=conversation, on_active_path=True).count() == 2
