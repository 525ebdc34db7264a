"""Which branch of a conversation is the active one: what the thread shows first and what linear exports and
training data take. A reviewer's switch is audited; ingestion moves the path through the planner."""

from __future__ import annotations

from dataclasses import dataclass

from chats.audit_actions import AuditAction
from chats.models import Conversation, Message
from chats.services.audit import Actor, audit_record, audited_write


@dataclass
class _Node:
    id: int
    parent_id: int | None
    depth: int
    role: str
    on_active_path: bool


def _set_active_path(conversation: Conversation, nodes: dict[str, _Node], leaf_key: str) -> None:
    by_id = {node.id: node for node in nodes.values()}
    path: set[int] = set()
    node: _Node | None = nodes[leaf_key]
    while node is not None:
        path.add(node.id)
        node = by_id.get(node.parent_id) if node.parent_id else None
    Message.objects.filter(conversation=conversation, on_active_path=True).exclude(id__in=path).update(
        on_active_path=False
    )
    Message.objects.filter(conversation=conversation, id__in=path, on_active_path=False).update(on_active_path=True)
    conversation.active_leaf_key = leaf_key


@audited_write
def message_set_active_branch(*, conversation: Conversation, message: Message, actor: Actor = None) -> None:
    """Make the path through `message` (down to its newest leaf) the conversation's active path: what the thread
    shows first and what linear exports and training data take. A change is audited."""
    # Locked, so that the audited "before" is the path this switch replaces.
    stored_leaf = (
        Conversation.objects.select_for_update().values_list("active_leaf_key", flat=True).get(pk=conversation.pk)
    )
    nodes = {
        key: _Node(pk, parent_id, depth, role, active)
        for key, pk, parent_id, depth, role, active in Message.objects.filter(conversation=conversation).values_list(
            "key", "id", "parent_id", "depth", "role", "on_active_path"
        )
    }
    leaf_key = _newest_leaf_under(nodes, message.id)
    _set_active_path(conversation, nodes, leaf_key)
    conversation.save(update_fields=["active_leaf_key"])
    if leaf_key != stored_leaf:
        audit_record(
            actor=actor,
            action=AuditAction.CONVERSATION_BRANCH_SWITCHED,
            target_type="conversation",
            target_id=conversation.uuid,
            conversation_uuid=conversation.uuid,
            before={"active_leaf_key": stored_leaf},
            after={"active_leaf_key": leaf_key, "message": message.key},
        )


def _newest_leaf_under(nodes: dict[str, _Node], node_id: int) -> str:
    children: dict[int | None, list[int]] = {}
    key_of = {}
    for key, node in nodes.items():
        children.setdefault(node.parent_id, []).append(node.id)
        key_of[node.id] = key
    current = node_id
    while children.get(current):
        current = max(children[current])  # ids grow with arrival: the newest child
    return key_of[current]
