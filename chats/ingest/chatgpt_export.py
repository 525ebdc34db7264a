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

from collections.abc import Callable
from typing import Any

from chats import jsonio
from chats.ingest.canonical import (
    FEEDBACK_ORIGIN_CHATGPT,
    Conversation,
    Feedback,
    Issue,
    Message,
    ParseError,
    ToolCall,
)
from chats.ingest.chat_graph import OpenAIStyleKeys
from chats.ingest.common import (
    Issues,
    external_id,
    normalize_part,
    parents_first,
    parse_arguments,
    parse_timestamp,
    pointer,
    render_text,
    require_messages,
    shape_error,
    unmapped_keys,
)
from chats.ingest.injections import extract_artifacts

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


def matches(document: Any) -> bool:
    if isinstance(document, list):
        return is_conversation_list(document)
    return isinstance(document, dict) and isinstance(document.get("mapping"), dict)


def is_conversation_list(document: list[Any]) -> bool:
    """Whether a JSON array is a whole ``conversations.json`` (judged by its first item)."""
    return bool(document) and isinstance(document[0], dict) and isinstance(document[0].get("mapping"), dict)


def parse(document: Any) -> Conversation:
    if not matches(document):
        raise shape_error(NAME, EXPECTS)
    if isinstance(document, list):
        if len(document) != 1:
            raise ParseError(
                [Issue("", f"this conversations.json holds {len(document)} conversations: import it in bulk")]
            )
        return _inside_list(_Parser(document[0]))
    return _Parser(document).parse()


def _inside_list(parser: _Parser) -> Conversation:
    """Parse the one conversation of a ``conversations.json`` array, with every path pointing under ``/0``."""
    try:
        conversation = parser.parse()
    except ParseError as error:
        raise ParseError([Issue(f"/0{issue.path}", issue.message) for issue in error.errors]) from None
    conversation.warnings = [Issue(f"/0{issue.path}", issue.message) for issue in conversation.warnings]
    for message in conversation.messages:
        message.source_path = f"/0{message.source_path}"
    return conversation


class _Parser:
    def __init__(self, document: dict[str, Any]) -> None:
        self.document = document
        self.issues = Issues()
        self.by_key: dict[str, Message] = {}
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
                self.by_key[node_id] = message
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
            active_leaf_key=self._active_leaf(document.get("current_node"), nearest),
            artifacts=artifacts,
            warnings=issues.warnings + _in_messages(artifact_warnings, messages),
        )

    def _parent_links(self, mapping: dict[str, Any]) -> dict[str, str | None]:
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

    def _read_message(self, node_id: str, node: dict[str, Any], parent_key: str | None) -> Message | None:
        body = node.get("message")
        if body is None:
            return None
        path = pointer("/mapping", node_id, "message")
        issues = self.issues
        if not isinstance(body, dict):
            issues.error(path, "message must be an object or null")
            return None
        author = body.get("author")
        if not isinstance(author, dict):
            author = {}
        role = author.get("role")
        if not isinstance(role, str) or not role:
            issues.error(f"{path}/author/role", "a message needs a role (a non-empty string)")
            return None

        content = body.get("content")
        parts, reasoning = _content_parts(content, f"{path}/content", issues)
        metadata = body.get("metadata")
        metadata = metadata if isinstance(metadata, dict) else {}
        recipient = body.get("recipient")
        recipient = recipient if isinstance(recipient, str) else ""
        message = Message(
            key=node_id,
            role=role,
            parent_key=parent_key,
            name=author["name"] if isinstance(author.get("name"), str) else "",
            parts=parts,
            content_is_null=content is None,
            content_is_string=False,
            text=render_text(parts),
            reasoning=reasoning,
            author_metadata=author["metadata"] if isinstance(author.get("metadata"), dict) else {},
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
            parsed, _ = parse_arguments(arguments)
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

    def _read_metadata_keys(self, message: Message, metadata: dict[str, Any], path: str) -> None:
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
            ancestor_key = message.parent_key
            while ancestor_key is not None:
                ancestor = self.by_key[ancestor_key]
                if ancestor.role == "user":
                    break
                if ancestor.recipient == message.name and _recipient_call(ancestor) is not None:
                    message.tool_call_id = ancestor.key
                    answered.add(ancestor.key)
                    break
                ancestor_key = ancestor.parent_key
            if not message.tool_call_id:
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

    def _active_leaf(self, current_node: Any, nearest: dict[str, str | None]) -> str | None:
        if current_node is None:
            return None
        if isinstance(current_node, str) and current_node in nearest:
            return nearest[current_node]
        self.issues.warn("/current_node", f"current_node {current_node!r} is not in the mapping; ignored")
        return None


def _recipient_call(message: Message) -> ToolCall | None:
    for call in message.tool_calls:
        if call.type == _RECIPIENT_CALL:
            return call
    return None


def _in_messages(warnings: list[Issue], messages: list[Message]) -> list[Issue]:
    """Artifact warnings located where the call or result really is in its node (the injections module points
    below the node, as if it were an OpenAI message)."""
    by_path = {message.source_path: message for message in messages}
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
            call = next((call for call in message.tool_calls if call.index == index), None)
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


# --- content ------------------------------------------------------------------------------------------------


def _content_parts(content: Any, path: str, issues: Issues) -> tuple[list[dict[str, Any]], str]:
    """(parts, reasoning) of a ChatGPT content object; its ``content_type`` decides where the text is."""
    if content is None:
        return [], ""
    if not isinstance(content, dict):
        issues.error(path, "content must be an object")
        return [], ""
    content_type = content.get("content_type")
    reader = _CONTENT_READERS.get(content_type) if isinstance(content_type, str) else None
    if reader is not None:
        return reader(content, path, issues), ""
    if content_type == "thoughts":
        return [], _thoughts(content.get("thoughts"))
    # An unknown content type: take its parts or text when it has some, else keep it whole.
    if isinstance(content.get("parts"), list):
        return _multimodal_parts(content, path, issues), ""
    if isinstance(content.get("text"), str):
        return _text(content["text"]), ""
    return [{"type": "unknown", "raw": content}], ""


def _text(*pieces: Any) -> list[dict[str, Any]]:
    text = "\n".join(piece for piece in pieces if isinstance(piece, str) and piece)
    return [{"type": "text", "text": text}] if text else []


def _multimodal_parts(content: dict[str, Any], path: str, issues: Issues) -> list[dict[str, Any]]:
    raw_parts = content.get("parts")
    if not isinstance(raw_parts, list):
        return []
    parts: list[dict[str, Any]] = []
    for index, part in enumerate(raw_parts):
        if isinstance(part, str):
            if part:  # system and hidden messages often carry a single empty part
                parts.append({"type": "text", "text": part})
        elif isinstance(part, dict) and "content_type" in part:
            parts.append(_pointer_part(part))
        else:
            converted = normalize_part(part)
            if converted is None:
                issues.error(f"{path}/parts/{index}", "a content part must be an object or a string")
            else:
                parts.append(converted)
    return parts


def _pointer_part(part: dict[str, Any]) -> dict[str, Any]:
    kind = part["content_type"]
    asset = part.get("asset_pointer")
    if kind == "image_asset_pointer" and isinstance(asset, str):
        return {"type": "image", "url": asset}
    if kind == "audio_asset_pointer" and isinstance(asset, str):
        return {"type": "audio", "url": asset}
    if kind == "audio_transcription" and isinstance(part.get("text"), str):
        return {"type": "text", "text": part["text"]}
    return {"type": "unknown", "raw": part}


def _thoughts(thoughts: Any) -> str:
    if not isinstance(thoughts, list):
        return ""
    blocks = []
    for thought in thoughts:
        if isinstance(thought, dict):
            block = "\n".join(
                piece for piece in (thought.get("summary"), thought.get("content")) if isinstance(piece, str) and piece
            )
            if block:
                blocks.append(block)
    return "\n\n".join(blocks)


def _tether_quote(content: dict[str, Any]) -> list[dict[str, Any]]:
    title, url = content.get("title"), content.get("url")
    heading = f"{title} ({url})" if isinstance(title, str) and isinstance(url, str) else title or url
    return _text(heading, content.get("text"))


def _system_error(content: dict[str, Any]) -> list[dict[str, Any]]:
    name, text = content.get("name"), content.get("text")
    return _text(f"{name}: {text}" if isinstance(name, str) and isinstance(text, str) else name or text)


_CONTENT_READERS: dict[str, Callable[[dict[str, Any], str, Issues], list[dict[str, Any]]]] = {
    "text": _multimodal_parts,
    "multimodal_text": _multimodal_parts,
    "code": lambda content, path, issues: _text(content.get("text")),
    "execution_output": lambda content, path, issues: _text(content.get("text")),
    "reasoning_recap": lambda content, path, issues: _text(content.get("content")),
    "tether_browsing_display": lambda content, path, issues: _text(content.get("result") or content.get("summary")),
    "tether_quote": lambda content, path, issues: _tether_quote(content),
    "system_error": lambda content, path, issues: _system_error(content),
    "user_editable_context": lambda content, path, issues: _text(
        content.get("user_profile"), content.get("user_instructions")
    ),
}


# --- message_feedback.json ----------------------------------------------------------------------------------


def apply_message_feedback(conversations: list[Conversation], feedback: Any) -> list[Issue]:
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


def _feedback_comment(content: Any) -> str:
    """The free text of a thumbs entry, whose ``content`` is often a JSON string ``{"text", "tags"}``."""
    decoded = content
    if isinstance(content, str) and content.lstrip().startswith("{"):
        try:
            decoded = jsonio.loads(content)
        except ValueError:
            return content
    if isinstance(decoded, dict):
        text = decoded.get("text")
        return text if isinstance(text, str) else ""
    return content if isinstance(content, str) else ""
