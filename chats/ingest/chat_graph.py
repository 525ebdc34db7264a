"""The ``chat_graph`` logging format: a conversation tree as a list of nodes linked by ``parent_id``.

``{conversation_id, nodes: [{node_id, parent_id, timestamp, message: {id, author: {role, metadata},
content: {content_type, parts}, context}}]}``. Several nodes with the same parent are branches. Loggers also send
the graph under a ``chat_graph`` key, as they send a history under ``chat_history``: ``{"chat_graph": {...},
...}``. The ``chat_graph`` key then stays in the metadata, holding the graph's own other keys, so that the graph is
exported wrapped again (see ``chats.export.common.graph_wrapper``).

Content is ChatGPT's content object, whose ``content_type`` says where the text is: ``parts`` usually, ``text`` for
``code`` and ``execution_output`` (read by ChatGPT's rules, ``parts.content_object_parts``).

The format has no place of its own for tool calls, the call a tool message answers, or reasoning kept apart from
the answer: they travel as OpenAI-style keys of the node's message (``tool_calls``, ``function_call``,
``tool_call_id``, ``reasoning_content``, ``name``, ``refusal``), read by the openai parser's own rules. Tool results
are linked to their calls by id, and injected artifacts are read from the injection calls, as for OpenAI messages.
"""

from __future__ import annotations

import re
from typing import Any

from chats.formats.canonical import Conversation, Issue, Issues, Message
from chats.formats.chat_graph import WRAPPER_KEY
from chats.formats.openai_messages import OPENAI_STYLE_KEYS
from chats.formats.times import parse_timestamp
from chats.ingest.common import (
    context_pairs,
    explicit_id,
    extract_inline_reasoning,
    message_author,
    parents_first,
    parse_nested,
    require_messages,
    shape_error,
    unmapped_keys,
)
from chats.ingest.injections import extract_artifacts
from chats.ingest.openai import MessageChain
from chats.ingest.parts import content_object_parts, content_parts, render_text
from chats.json_types import JSONObject

NAME = "chat_graph"
EXPECTS = "an object with a 'nodes' list (or such an object under a 'chat_graph' key)"

_MAPPED = frozenset({"conversation_id", "nodes"})
_NODE_KEYS = frozenset({"node_id", "parent_id", "timestamp", "message"})
# A node message's keys read into fields: its own, and the OpenAI-style ones it may carry (see OpenAIStyleKeys).
_MESSAGE_KEYS = frozenset({"id", "author", "content", "context"}) | OPENAI_STYLE_KEYS
_NODE_PATH = re.compile(r"^(/nodes/\d+)/")


class OpenAIStyleKeys(MessageChain):
    """Reads the OpenAI-style keys a tree format's message carries, by the openai parser's own rules.

    Tool calls (invalid JSON arguments, custom calls, missing ids, legacy ``function_call``), ``tool_call_id``,
    ``reasoning_content``, ``name`` and ``refusal`` mean what they mean in an OpenAI message. Each message is read
    on its own (its key and parent come from the tree); call ids are checked for reuse across the conversation.
    """

    def read(self, message: Message, fields: dict[str, Any], path: str, extra: dict[str, Any]) -> None:
        """Read the keys of ``fields`` (found at ``path``) into ``message``; a value of the wrong type goes to
        ``extra`` with a warning, as in an OpenAI message."""
        name = self._string_field("name", fields.get("name"), path, extra)
        if name and not message.name:
            message.name = name
        elif name and name != message.name:
            extra["name"] = name  # the author's name wins; a different one is not lost
        tool_call_id = fields.get("tool_call_id")
        if isinstance(tool_call_id, int) and not isinstance(tool_call_id, bool):
            tool_call_id = str(tool_call_id)  # some loggers number their calls
        message.tool_call_id = self._string_field("tool_call_id", tool_call_id, path, extra)
        reasoning = self._string_field("reasoning_content", fields.get("reasoning_content"), path, extra)
        if reasoning:
            # As in an OpenAI message: the reasoning_content first, then any inline reasoning already found.
            message.reasoning = f"{reasoning}\n\n{message.reasoning}" if message.reasoning else reasoning
        refusal = self._string_field("refusal", fields.get("refusal"), path, extra)
        if refusal:
            message.parts.append({"type": "refusal", "refusal": refusal})
            message.text = render_text(message.parts)
        if fields.get("tool_calls") is not None:
            self._add_tool_calls(message, fields["tool_calls"], f"{path}/tool_calls")
        if fields.get("function_call") is not None:
            self._add_function_call(message, fields["function_call"], f"{path}/function_call")

    def link(self, messages: list[Message]) -> None:
        """Link results to calls by id across ``messages`` (parents first), warning about loose ends."""
        self.messages = messages
        self._link_results()


def matches(document: object) -> bool:
    return _is_graph(document) or (isinstance(document, dict) and _is_graph(document.get(WRAPPER_KEY)))


def _is_graph(document: object) -> bool:
    return isinstance(document, dict) and isinstance(document.get("nodes"), list)


def parse(document: Any) -> Conversation:
    if not matches(document):
        raise shape_error(NAME, EXPECTS)
    if _is_graph(document):
        return _parse_graph(document)
    conversation = parse_nested(f"/{WRAPPER_KEY}", lambda: _parse_graph(document[WRAPPER_KEY]))
    # The wrapper's other keys are the document's top-level keys; the graph's own other keys stay under its key.
    conversation.metadata = {
        key: conversation.metadata if key == WRAPPER_KEY else value for key, value in document.items()
    }
    return conversation


def _parse_graph(document: dict[str, Any]) -> Conversation:
    issues = Issues()
    conversation_id = explicit_id(document, issues)
    keys = OpenAIStyleKeys(issues)
    by_id: dict[str, Message] = {}
    node_index: dict[str, int] = {}
    parent_of: dict[str, str | None] = {}
    for index, node in enumerate(document["nodes"]):
        message = _read_node(node, f"/nodes/{index}", issues, keys)
        if message is None:
            continue
        if message.key in by_id:
            issues.error(
                f"/nodes/{index}/node_id",
                f"duplicate node_id '{message.key}' (first at /nodes/{node_index[message.key]})",
            )
            continue
        by_id[message.key] = message
        node_index[message.key] = index
        parent_of[message.key] = message.parent_key

    for key, parent in parent_of.items():
        if parent is not None and parent not in by_id:
            issues.warn(
                f"/nodes/{node_index[key]}/parent_id",
                f"parent '{parent}' is not a node; the node is treated as a root",
            )
            parent_of[key] = by_id[key].parent_key = None
    ordered, in_cycle = parents_first(parent_of)
    for key in in_cycle:
        issues.error(f"/nodes/{node_index[key]}/parent_id", f"node '{key}' is in or under a cycle of parent_id links")
    issues.raise_errors()
    messages = [by_id[key] for key in ordered]
    require_messages(messages, "/nodes")
    keys.link(messages)
    artifacts, artifact_warnings = extract_artifacts(messages)

    return Conversation(
        format=NAME,
        messages=messages,
        external_id=conversation_id,
        metadata=unmapped_keys(document, _MAPPED),
        active_leaf_key=_latest_leaf(messages, parent_of, node_index),
        artifacts=artifacts,
        warnings=issues.warnings + [_in_node_message(warning) for warning in artifact_warnings],
    )


def _in_node_message(warning: Issue) -> Issue:
    """An artifact warning located in the node's message (the injections module points below the node)."""
    return Issue(_NODE_PATH.sub(r"\1/message/", warning.path, count=1), warning.message)


def _read_node(node: object, path: str, issues: Issues, keys: OpenAIStyleKeys) -> Message | None:
    if not isinstance(node, dict):
        issues.error(path, "a node must be an object")
        return None
    node_id = node.get("node_id")
    if not isinstance(node_id, str) or not node_id:
        issues.error(f"{path}/node_id", "a node needs a node_id (a non-empty string)")
        return None
    parent_id = node.get("parent_id")
    if parent_id is not None and not isinstance(parent_id, str):
        issues.error(f"{path}/parent_id", "parent_id must be a string or null")
        return None
    body = node.get("message")
    if not isinstance(body, dict):
        issues.error(f"{path}/message", "a node needs a message object")
        return None
    found = message_author(body, f"{path}/message", issues)
    if found is None:
        return None
    author, role = found

    message = Message(
        key=node_id,
        input_id=node_id,
        role=role,
        parent_key=parent_id,
        content_is_string=False,
        created_at=parse_timestamp(node.get("timestamp"), f"{path}/timestamp", issues),
        raw=node,
        source_path=path,
    )
    name = author.get("name")
    if isinstance(name, str):
        message.name = name
    metadata = author.get("metadata")
    if isinstance(metadata, dict):
        message.author_metadata = metadata
    elif metadata is not None:
        issues.warn(f"{path}/message/author/metadata", "author metadata must be an object; ignored")

    content = body.get("content")
    content_path = f"{path}/message/content"
    reasoning = ""
    if isinstance(content, dict) and content.get("parts") is not None:
        parts = content_parts(content["parts"], f"{content_path}/parts", issues)
    elif isinstance(content, dict):
        parts, reasoning = _partless_content(content, content_path, issues)
    else:
        message.content_is_null = content is None
        message.content_is_string = isinstance(content, str)
        parts = content_parts(content, content_path, issues)
    if role == "assistant":
        parts, inline_reasoning = extract_inline_reasoning(parts)
        reasoning = "\n\n".join(block for block in (reasoning, inline_reasoning) if block)
    message.reasoning = reasoning
    message.parts = parts
    message.text = render_text(parts)

    extra = unmapped_keys(node, _NODE_KEYS)
    extra.update(unmapped_keys(body, _MESSAGE_KEYS))
    keys.read(message, body, f"{path}/message", extra)
    if body.get("context") is not None:
        pairs = context_pairs(body["context"], f"{path}/message/context", issues)
        if pairs is None:
            extra["context"] = body["context"]
        else:
            message.context_pairs = pairs
    message.extra = extra
    return message


def _partless_content(content: JSONObject, path: str, issues: Issues) -> tuple[list[JSONObject], str]:
    """(parts, reasoning) of content without ``parts`` (``{"content_type": "code", "text": ...}``), read by
    ChatGPT's rules; content holding something that gives no text is kept whole, as an unknown part."""
    parts, reasoning = content_object_parts(content, path, issues)
    whole: JSONObject = {"type": "unknown", "raw": content}
    if not parts and not reasoning and any(_holds(value) for key, value in content.items() if key != "content_type"):
        parts = [whole]
    if parts == [whole]:
        issues.warn(path, "content has no parts and no text; kept verbatim as an unknown part")
    return parts, reasoning


def _holds(value: object) -> bool:
    return value is not None and value != "" and value != [] and value != {}


def _latest_leaf(messages: list[Message], parent_of: dict[str, str | None], node_index: dict[str, int]) -> str:
    """The leaf with the latest timestamp (ties and missing timestamps: the later node in the list)."""
    parents = set(parent_of.values())
    leaves = [message for message in messages if message.key not in parents]
    return max(
        leaves,
        key=lambda message: (
            message.created_at is not None,
            message.created_at.timestamp() if message.created_at else 0.0,
            node_index[message.key],
        ),
    ).key
