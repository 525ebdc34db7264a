"""ChatGPT data exports: conversations of ``conversations.json``, thumbs of ``message_feedback.json``.

A conversation is a tree in ``mapping`` (node id -> ``{id, message | null, parent, children}``); nodes
without a message (the root, usually) are skipped and their children hang from the nearest ancestor that has
one. There are no ``tool_calls``: an assistant message addressed to a tool (``recipient: "python"``) is the
call, answered by the next ``tool`` message of that branch whose author name is the tool.

Conversations exported from this application into this format also carry OpenAI-style ``tool_calls``,
``tool_call_id`` and ``reasoning_content`` in a message's ``metadata`` (ChatGPT has no place for them): they are
read by the openai parser's rules and their results linked by id. The message's ``metadata`` stays in ``extra``
verbatim. ChatGPT's metadata is its own, so a ``tool_calls`` there that cannot be read is a warning, never an error.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from chats.formats.canonical import (
    FEEDBACK_ORIGIN_CHATGPT,
    Conversation,
    Feedback,
    Issue,
    Issues,
    Message,
    ToolCall,
)
from chats.formats.times import parse_timestamp
from chats.ingest.chat_graph import OpenAIStyleKeys
from chats.ingest.common import (
    external_id,
    json_in_text,
    message_author,
    original_times,
    parents_first,
    parse_arguments,
    parse_export_item,
    pointer,
    require_messages,
    shape_error,
    unmapped_keys,
)
from chats.ingest.injections import extract_artifacts
from chats.ingest.parts import content_object_parts, render_text
from chats.json_types import JSONMapping

NAME = "chatgpt_export"
EXPECTS = "an object with a 'mapping' object and a 'current_node' (or an array of them)"

_MAPPED = frozenset(
    {
        "id",
        "conversation_id",
        "title",
        "create_time",
        "update_time",
        "current_node",
        "mapping",
        "default_model_slug",
    }
)
_MESSAGE_KEYS = frozenset({"id", "author", "content", "create_time", "recipient", "weight"})
_RATINGS = {"thumbsUp": 1, "thumbsDown": -1}
# The OpenAI-style keys read from a message's metadata.
_METADATA_KEYS = ("tool_calls", "tool_call_id", "reasoning_content")
_RECIPIENT_CALL = "recipient"


def matches(document: object) -> bool:
    if isinstance(document, list):
        return is_conversation_list(document)
    return isinstance(document, dict) and isinstance(document.get("mapping"), dict)


def is_conversation_list(document: Sequence[object]) -> bool:
    """Whether a JSON array is a whole ``conversations.json`` (judged by its first item)."""
    return bool(document) and isinstance(document[0], dict) and isinstance(document[0].get("mapping"), dict)


def parse(document: Any) -> Conversation:
    if not matches(document):
        raise shape_error(NAME, EXPECTS)
    return parse_export_item(
        document, lambda item: _Parser(item).parse(), export="conversations.json", items="conversations"
    )


class _Parser:
    def __init__(self, document: dict[str, Any]) -> None:
        self.document = document
        self.issues = Issues()
        # Reads the metadata's OpenAI-style keys into issues of its own, which are drained after every message.
        self.metadata_keys = OpenAIStyleKeys(Issues())

    def parse(self) -> Conversation:
        document, issues = self.document, self.issues
        conversation_id = external_id(document.get("id", document.get("conversation_id")), "/id", issues)
        mapping: dict[str, Any] = document["mapping"]
        parent_of = self._parent_links(mapping)
        ordered, in_cycle = parents_first(parent_of)
        for node_id in in_cycle:
            issues.error(pointer("/mapping", node_id, "parent"), f"node '{node_id}' is in or under a cycle of parents")
        issues.raise_errors()

        # A node without a message stands for its nearest ancestor that has one.
        nearest: dict[str, str | None] = {}
        messages: list[Message] = []
        for node_id in ordered:
            parent = parent_of[node_id]
            parent_key = nearest[parent] if parent is not None else None
            message = self._read_message(node_id, mapping[node_id], parent_key)
            if message is None:
                nearest[node_id] = parent_key
            else:
                nearest[node_id] = node_id
                messages.append(message)
        issues.raise_errors()
        require_messages(messages, "/mapping")
        self._link_results(messages)
        artifacts, artifact_warnings = extract_artifacts(messages)

        default_model = document.get("default_model_slug")
        model_name = default_model if isinstance(default_model, str) else _last_model_slug(messages)
        return Conversation(
            format=NAME,
            messages=messages,
            external_id=conversation_id,
            title=document["title"] if isinstance(document.get("title"), str) else "",
            model_name=model_name,
            model=default_model,
            started_at=parse_timestamp(document.get("create_time"), "/create_time", issues),
            ended_at=parse_timestamp(document.get("update_time"), "/update_time", issues),
            metadata=unmapped_keys(document, _MAPPED),
            original_times=original_times(document, ("create_time", "update_time")),
            active_leaf_key=self._active_leaf(document.get("current_node"), nearest),
            artifacts=artifacts,
            warnings=issues.warnings + _in_messages(artifact_warnings, messages),
        )

    def _parent_links(self, mapping: JSONMapping) -> dict[str, str | None]:
        parent_of: dict[str, str | None] = {}
        for node_id, node in mapping.items():
            path = pointer("/mapping", node_id)
            if not node_id:  # a message's key: "" would read as "no parent" wherever it is a parent
                self.issues.error(path, "a node id must be a non-empty string")
                continue
            if not isinstance(node, dict):
                self.issues.error(path, "a mapping node must be an object")
                continue
            parent = node.get("parent")
            if parent is not None and not isinstance(parent, str):
                self.issues.error(f"{path}/parent", "parent must be a node id or null")
                continue
            if parent is not None and not isinstance(mapping.get(parent), dict):
                self.issues.warn(f"{path}/parent", f"parent '{parent}' is not in the mapping; treated as a root")
                parent = None
            parent_of[node_id] = parent
        return parent_of

    def _read_message(self, node_id: str, node: JSONMapping, parent_key: str | None) -> Message | None:
        body = node.get("message")
        if body is None:
            return None
        path = pointer("/mapping", node_id, "message")
        issues = self.issues
        if not isinstance(body, dict):
            issues.error(path, "message must be an object or null")
            return None
        found = message_author(body, path, issues)
        if found is None:
            return None
        author, role = found
        name, author_metadata = author.get("name"), author.get("metadata")

        content = body.get("content")
        parts, reasoning = content_object_parts(content, f"{path}/content", issues)
        metadata = body.get("metadata")
        metadata = metadata if isinstance(metadata, dict) else {}
        recipient = body.get("recipient")
        recipient = recipient if isinstance(recipient, str) else ""
        message = Message(
            key=node_id,
            input_id=node_id,
            role=role,
            parent_key=parent_key,
            name=name if isinstance(name, str) else "",
            parts=parts,
            content_is_null=content is None,
            content_is_string=False,
            text=render_text(parts),
            reasoning=reasoning,
            author_metadata=author_metadata if isinstance(author_metadata, dict) else {},
            created_at=parse_timestamp(body.get("create_time"), f"{path}/create_time", issues),
            hidden=body.get("weight") == 0 or bool(metadata.get("is_visually_hidden_from_conversation")),
            recipient=recipient,
            extra=unmapped_keys(body, _MESSAGE_KEYS),
            raw=node,
            source_path=pointer("/mapping", node_id),
        )
        if role == "assistant" and recipient and recipient != "all":
            arguments = message.text
            # The input to a tool (code, a browser command) is not JSON by contract: no error when it is not.
            parsed, _, _ = parse_arguments(arguments)
            message.tool_calls.append(
                ToolCall(
                    call_id=node_id,
                    type=_RECIPIENT_CALL,
                    name=recipient,
                    arguments=arguments,
                    parsed_arguments=parsed,
                )
            )
        if any(key in metadata for key in _METADATA_KEYS):
            self._read_metadata_keys(message, metadata, f"{path}/metadata")
        return message

    def _read_metadata_keys(self, message: Message, metadata: JSONMapping, path: str) -> None:
        """The OpenAI-style keys of a message's metadata (written by this application's exporter)."""
        fields = {key: metadata[key] for key in _METADATA_KEYS if key in metadata}
        # Values of the wrong type stay where they are: in the metadata, which `extra` keeps verbatim.
        self.metadata_keys.read(message, fields, path, extra={})
        found = self.metadata_keys.issues
        self.issues.warnings.extend(found.warnings)
        for error in found.errors:
            self.issues.warn(error.path, f"{error.message}; ignored")
        found.warnings.clear()
        found.errors.clear()

    def _link_results(self, messages: list[Message]) -> None:
        """Point each tool message at the call it answers, and warn about results and calls left over.

        A message whose metadata names a ``tool_call_id`` answers that call. Any other tool message answers the
        nearest assistant ancestor addressed to it, in the same turn (the search stops at a user message).
        """
        calls = {call.call_id for message in messages for call in message.tool_calls}
        callers = _nearest_callers(messages)
        answered: set[str] = set()
        for message in messages:
            if message.tool_call_id:
                if message.tool_call_id in calls:
                    answered.add(message.tool_call_id)
                else:
                    self.issues.warn(
                        message.source_path,
                        f"orphan result: tool_call_id '{message.tool_call_id}' matches no call",
                    )
                continue
            if message.role != "tool":
                continue
            caller = callers.get(message.key)
            if caller is not None:
                message.tool_call_id = caller
                answered.add(caller)
            else:
                self.issues.warn(
                    message.source_path,
                    f"orphan result: no earlier message of this turn calls '{message.name}'",
                )
        for message in messages:
            for call in message.tool_calls:
                if call.call_id in answered:
                    continue
                if call.type == _RECIPIENT_CALL:
                    self.issues.warn(message.source_path, f"unanswered call: '{message.recipient}' never answers")
                else:
                    self.issues.warn(
                        f"{message.source_path}/message/metadata/tool_calls/{call.index}",
                        f"unanswered call: no result for '{call.call_id}'",
                    )

    def _active_leaf(self, current_node: object, nearest: dict[str, str | None]) -> str | None:
        if current_node is None:
            return None
        if isinstance(current_node, str) and current_node in nearest:
            return nearest[current_node]
        self.issues.warn("/current_node", f"current_node {current_node!r} is not in the mapping; ignored")
        return None


def _nearest_callers(messages: list[Message]) -> dict[str, str]:
    """tool message key -> the key of its nearest ancestor addressed to its name in the same turn (with no user
    message between them), for the tool messages that have one.

    One walk down the tree, keeping on the way the callers of each tool name and the user messages on the current
    path: linear, where searching up from every tool message costs the length of the turn each time.
    """
    children: dict[str | None, list[Message]] = {}
    for message in messages:  # parents first
        children.setdefault(message.parent_key, []).append(message)
    found: dict[str, str] = {}
    callers: dict[str, list[tuple[int, str]]] = {}  # tool name -> (depth, key) of its callers on the path
    turns: list[int] = [-1]  # depths of the user messages on the path
    # (message, depth, whether it calls a tool, whether the walk is entering it or leaving it)
    stack = [(root, 0, False, True) for root in reversed(children.get(None, []))]
    while stack:
        message, depth, calls, entering = stack.pop()
        if not entering:
            if message.role == "user":
                turns.pop()
            elif calls:
                callers[message.recipient].pop()
            continue
        if message.role == "tool":
            on_path = callers.get(message.name)
            if on_path and on_path[-1][0] > turns[-1]:
                found[message.key] = on_path[-1][1]
        calls = message.role != "user" and _recipient_call(message) is not None
        if message.role == "user":
            turns.append(depth)
        elif calls:
            callers.setdefault(message.recipient, []).append((depth, message.key))
        stack.append((message, depth, calls, False))
        stack.extend((child, depth + 1, False, True) for child in reversed(children.get(message.key, [])))
    return found


def _recipient_call(message: Message) -> ToolCall | None:
    for call in message.tool_calls:
        if call.type == _RECIPIENT_CALL:
            return call
    return None


def _in_messages(warnings: list[Issue], messages: list[Message]) -> list[Issue]:
    """Artifact warnings located where the call or result really is in its node (the injections module points
    below the node, as if it were an OpenAI message)."""
    by_path = {message.source_path: message for message in messages}
    first_calls: dict[tuple[str, int], ToolCall] = {}  # (message path, call index) -> the first such call
    for holder in messages:
        for tool_call in holder.tool_calls:
            first_calls.setdefault((holder.source_path, tool_call.index), tool_call)
    located = []
    for warning in warnings:
        tokens = warning.path.split("/")  # "", "mapping", node id, then what the injections module names
        message = by_path.get("/".join(tokens[:3]))
        if message is None or len(tokens) < 4:
            located.append(warning)
            continue
        rest = "/".join(tokens[3:])
        if tokens[3] == "tool_calls":
            index = int(tokens[4]) if len(tokens) > 4 and tokens[4].isdigit() else None
            call = first_calls.get((message.source_path, index)) if index is not None else None
            # A recipient call is the message's content; the others are in its metadata.
            rest = "content" if call is not None and call.type == _RECIPIENT_CALL else f"metadata/{rest}"
        located.append(Issue(f"{message.source_path}/message/{rest}", warning.message))
    return located


def _last_model_slug(messages: list[Message]) -> str:
    for message in reversed(messages):
        metadata = message.extra.get("metadata")
        slug = metadata.get("model_slug") if isinstance(metadata, dict) else None
        if isinstance(slug, str):
            return slug
    return ""


# --- message_feedback.json ----------------------------------------------------------------------------------


def apply_message_feedback(conversations: list[Conversation], feedback: object) -> list[Issue]:
    """Attach the thumbs of a ``message_feedback.json`` list to the conversations they name; return warnings.

    Paths in the warnings point into the feedback list.
    """
    if not isinstance(feedback, list):
        return [Issue("", "message feedback must be a list")]
    by_id = {conversation.external_id: conversation for conversation in conversations if conversation.external_id}
    message_keys: dict[str, set[str]] = {}
    warnings: list[Issue] = []
    for index, entry in enumerate(feedback):
        path = f"/{index}"
        if not isinstance(entry, dict):
            warnings.append(Issue(path, "a feedback entry must be an object; ignored"))
            continue
        conversation_id, message_id = entry.get("conversation_id"), entry.get("message_id")
        conversation = by_id.get(conversation_id) if isinstance(conversation_id, str) else None
        if conversation is None or not isinstance(conversation_id, str):
            warnings.append(Issue(f"{path}/conversation_id", f"no conversation {conversation_id!r}; ignored"))
            continue
        if conversation_id not in message_keys:
            message_keys[conversation_id] = {message.key for message in conversation.messages}
        if not isinstance(message_id, str) or message_id not in message_keys[conversation_id]:
            warnings.append(Issue(f"{path}/message_id", f"no message {message_id!r} in that conversation; ignored"))
            continue
        rating = entry.get("rating")
        score = _RATINGS.get(rating) if isinstance(rating, str) else None
        if score is None:
            warnings.append(Issue(f"{path}/rating", f"rating must be thumbsUp or thumbsDown, not {rating!r}"))
            continue
        conversation.feedback.append(
            Feedback(
                origin=FEEDBACK_ORIGIN_CHATGPT,
                message_key=message_id,
                score=score,
                comment=_feedback_comment(entry.get("content")),
                raw=entry,
            )
        )
    return warnings


def _feedback_comment(content: object) -> str:
    """The free text of a thumbs entry, whose ``content`` is often a JSON string ``{"text", "tags"}``."""
    decoded = content
    if isinstance(content, str) and content.lstrip().startswith("{"):
        # JSON inside text: its text is used when it is not JSON, or when what it decodes to cannot be stored.
        decoded = json_in_text(content)[0]
        if decoded is None:
            return content
    if isinstance(decoded, dict):
        text = decoded.get("text")
        return text if isinstance(text, str) else ""
    return content if isinstance(content, str) else ""
