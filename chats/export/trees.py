"""Exporters for the tree formats: chat_graph (logging nodes) and chatgpt_export (a ChatGPT `mapping`).

Both hold every branch. A node received in the target format goes out exactly as received (`Message.raw`);
other nodes are rebuilt from the canonical fields.
"""

from __future__ import annotations

from typing import Any

from chats.formats.canonical import Conversation, Message
from chats.formats.chat_graph import WRAPPER_KEY as GRAPH_WRAPPER_KEY
from chats.formats.openai_messages import RECIPIENT_CALL_TYPE, openai_part, openai_tool_call

from .capabilities import omitted_notes
from .common import (
    ExportResult,
    active_path,
    chatgpt_fields_note,
    children_by_parent,
    epoch_seconds,
    goes_out_raw,
    graph_wrapper,
    id_key_needed,
    keeps_message_extra,
    put_times,
    spill_metadata,
)

# The id ChatGPT gives the message-less node every conversation hangs from.
CHATGPT_ROOT_ID = "client-created-root"
# ChatGPT points at its own uploads; any other image (a URL, a data URI) goes as an OpenAI part, which its
# reader also understands.
CHATGPT_POINTER_SCHEMES = ("file-service://", "sediment://")


# --- chat_graph ---


def export_chat_graph(conversation: Conversation) -> ExportResult:
    ordered = _active_leaf_last(conversation)
    graph: dict[str, Any] = {}
    if id_key_needed(conversation):
        graph["conversation_id"] = conversation.external_id
    graph["nodes"] = [_graph_node(conversation, message) for message in ordered]
    notes = omitted_notes(conversation, "chat_graph", ordered)
    notes.extend(chatgpt_fields_note(conversation, ordered, "chat_graph"))
    wrapper = graph_wrapper(conversation)
    if wrapper is None:
        notes.extend(spill_metadata(conversation, graph, "chat_graph"))
        return ExportResult(document=graph, omitted=notes)
    # Received wrapped: wrapped again, the graph's own other keys inside and the wrapper's around it, in order.
    for key, value in wrapper.items():
        graph.setdefault(key, value)
    document = {key: graph if key == GRAPH_WRAPPER_KEY else value for key, value in conversation.metadata.items()}
    return ExportResult(document=document, omitted=notes)


def _graph_node(conversation: Conversation, message: Message) -> Any:
    if goes_out_raw(conversation, message, "chat_graph"):
        return message.raw
    author: dict[str, Any] = {"role": message.role, "metadata": dict(message.author_metadata)}
    if message.name:
        author["name"] = message.name
    body: dict[str, Any] = {
        "id": message.key,
        "author": author,
        "content": _graph_content(message),
        "context": [list(pair) for pair in message.context_pairs],
    }
    # The format has no place for these: they ride as OpenAI-style keys of the message, which the chat_graph
    # parser reads back (and an OpenAI-style reader of the node's message would understand).
    if message.tool_calls:
        body["tool_calls"] = [openai_tool_call(call) for call in message.tool_calls]
    if message.tool_call_id:
        body["tool_call_id"] = message.tool_call_id
    if message.reasoning:
        body["reasoning_content"] = message.reasoning
    if keeps_message_extra(conversation):
        for key, value in message.extra.items():
            body.setdefault(key, value)
    node: dict[str, Any] = {"node_id": message.key, "parent_id": message.parent_key}
    seconds = epoch_seconds(message.created_at)
    if seconds is not None:
        node["timestamp"] = int(seconds)
    node["message"] = body
    return node


def _graph_content(message: Message) -> dict[str, Any]:
    """`{content_type: "text", parts: [str, ...]}`; other parts go in OpenAI style (multimodal_text)."""
    if all(part.get("type") == "text" for part in message.parts):
        texts = [str(part.get("text", "")) for part in message.parts]
        return {"content_type": "text", "parts": texts}
    parts = [part.get("text", "") if part.get("type") == "text" else openai_part(part) for part in message.parts]
    return {"content_type": "multimodal_text", "parts": parts}


def _active_leaf_last(conversation: Conversation) -> list[Message]:
    """The messages, parents first, with the active leaf last so that a reader taking the last node agrees.

    A chat_graph reader takes the latest leaf by timestamp, then the last node: this settles ties and nodes
    without a timestamp. When the active leaf is already last the order is the conversation's own.
    """
    messages = conversation.messages
    path = active_path(conversation)
    # Nodes received as chat_graph keep their order: the same-format export must give the input back.
    if conversation.format == "chat_graph" or not path or messages[-1].key == path[-1].key:
        return list(messages)
    # Depth-first, visiting a node's active-path child after its other children, so the path ends the list.
    by_key = {m.key: m for m in messages}
    children = children_by_parent(messages)
    on_path = {m.key for m in path}
    ordered: list[Message] = []

    def visit(key: str) -> None:
        ordered.append(by_key[key])
        kids = children.get(key, [])
        for child in [k for k in kids if k not in on_path] + [k for k in kids if k in on_path]:
            visit(child)

    roots = children.get(None, []) + [m.key for m in messages if m.parent_key and m.parent_key not in by_key]
    for root in [k for k in roots if k not in on_path] + [k for k in roots if k in on_path]:
        visit(root)
    return ordered


# --- chatgpt_export ---


def export_chatgpt(conversation: Conversation) -> ExportResult:
    messages = conversation.messages
    path = active_path(conversation)
    same_format = conversation.format == "chatgpt_export"
    mapping: dict[str, Any] = {}
    children = children_by_parent(messages)
    keys = {m.key for m in messages}

    # Messages hang from a message-less root. A same-format export brings back the roots the received nodes
    # name; otherwise (and for a root-level message without its received node) a new root is made.
    root_ids = _chatgpt_roots(conversation) if same_format else []
    if not root_ids:
        root_ids = [CHATGPT_ROOT_ID]
    root_of: dict[str, str] = {}
    for message in messages:
        if message.parent_key is None or message.parent_key not in keys:
            named = message.raw.get("parent") if same_format and isinstance(message.raw, dict) else None
            root_of[message.key] = named if named in root_ids else root_ids[0]
    for root_id in root_ids:
        mapping[root_id] = {
            "id": root_id,
            "message": None,
            "parent": None,
            "children": [key for key, root in root_of.items() if root == root_id],
        }
    for message in messages:
        if goes_out_raw(conversation, message, "chatgpt_export"):
            mapping[message.key] = _with_children(message.raw, children.get(message.key, []))
            continue
        parent = message.parent_key if message.parent_key in keys else root_of[message.key]
        mapping[message.key] = {
            "id": message.key,
            "message": _chatgpt_message(message),
            "parent": parent,
            "children": list(children.get(message.key, [])),
        }

    document: dict[str, Any] = {}
    if conversation.title:
        document["title"] = conversation.title
    put_times(document, conversation, ("create_time", "update_time"), epoch_seconds)
    document["mapping"] = mapping
    document["current_node"] = path[-1].key if path else root_ids[0]
    if conversation.external_id:
        # ChatGPT writes the id twice; its parser takes either.
        document["id"] = document["conversation_id"] = conversation.external_id
    model_slug = _default_model_slug(conversation)
    if model_slug:
        document["default_model_slug"] = model_slug
    notes = omitted_notes(conversation, "chatgpt_export", messages)
    notes.extend(spill_metadata(conversation, document, "chatgpt_export"))
    return ExportResult(document=document, omitted=notes)


def _default_model_slug(conversation: Conversation) -> str:
    if isinstance(conversation.model, str):
        return conversation.model
    if conversation.format == "chatgpt_export":
        # Received without a default slug (the name was read from a message): it stays without one.
        return ""
    return conversation.model_name


def _chatgpt_roots(conversation: Conversation) -> list[str]:
    """Ids of the message-less nodes the received nodes name as their parent, in first-seen order."""
    keys = {m.key for m in conversation.messages}
    roots: list[str] = []
    for message in conversation.messages:
        raw = message.raw if isinstance(message.raw, dict) else {}
        parent = raw.get("parent")
        if isinstance(parent, str) and parent not in keys and parent not in roots:
            roots.append(parent)
    return roots


def _with_children(node: dict[str, Any], child_keys: list[str]) -> dict[str, Any]:
    """A received node, its `children` completed with messages added after it was received (a new branch)."""
    listed = node.get("children")
    listed = listed if isinstance(listed, list) else []
    missing = [key for key in child_keys if key not in listed]
    if not missing:
        return node
    return {**node, "children": [*listed, *missing]}


def _chatgpt_message(message: Message) -> dict[str, Any]:
    # ChatGPT has no tool_calls: they go in the message's metadata, which the chatgpt_export parser reads back.
    # A call that is the message's own `recipient` travels as that, natively.
    metadata: dict[str, Any] = {}
    calls = [
        call
        for call in message.tool_calls
        if not (call.type == RECIPIENT_CALL_TYPE and message.recipient and call.name == message.recipient)
    ]
    if calls:
        metadata["tool_calls"] = [openai_tool_call(call) for call in calls]
    if message.tool_call_id:
        metadata["tool_call_id"] = message.tool_call_id
    if message.reasoning:
        metadata["reasoning_content"] = message.reasoning
    if message.context_pairs:
        metadata["context"] = [list(pair) for pair in message.context_pairs]
    return {
        "id": message.key,
        "author": {
            "role": message.role,
            "name": message.name or None,
            "metadata": dict(message.author_metadata),
        },
        "create_time": epoch_seconds(message.created_at),
        "update_time": None,
        "content": _chatgpt_content(message),
        "status": "finished_successfully",
        "end_turn": None,
        "weight": 0.0 if message.hidden else 1.0,
        "metadata": metadata,
        "recipient": message.recipient or "all",
    }


def _chatgpt_content(message: Message) -> dict[str, Any]:
    if all(part.get("type") == "text" for part in message.parts):
        # ChatGPT always has at least one part, "" for an empty message.
        return {
            "content_type": "text",
            "parts": [str(part.get("text", "")) for part in message.parts] or [""],
        }
    parts: list[Any] = []
    for part in message.parts:
        if part.get("type") == "text":
            parts.append(part.get("text", ""))
        elif part.get("type") == "image" and str(part.get("url", "")).startswith(CHATGPT_POINTER_SCHEMES):
            parts.append({"content_type": "image_asset_pointer", "asset_pointer": part["url"]})
        else:
            parts.append(openai_part(part))
    return {"content_type": "multimodal_text", "parts": parts}
