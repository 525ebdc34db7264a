"""OpenAI-style message lists: the ``openai`` format (a bare JSON array) and the messages of other formats."""

from __future__ import annotations

import json
from collections import deque
from typing import TypeGuard

from chats.formats.canonical import Conversation, Issue, Issues, Message, ToolCall, chain_key, content_key
from chats.ingest.common import extract_inline_reasoning, parse_arguments, require_messages, shape_error
from chats.ingest.injections import extract_artifacts
from chats.ingest.parts import content_parts, render_text
from chats.json_types import JSON, JSONArray, JSONObject

NAME = "openai"
EXPECTS = "a JSON array of message objects"

_MESSAGE_KEYS = frozenset(
    {"role", "content", "name", "tool_calls", "function_call", "tool_call_id", "refusal", "reasoning_content"}
)
_CALL_KEYS = frozenset({"id", "type", "function", "custom", "arguments", "name"})


def matches(document: object) -> TypeGuard[JSONArray]:
    return isinstance(document, list)


def parse(document: object) -> Conversation:
    if not matches(document):
        raise shape_error(NAME, EXPECTS)
    messages, warnings = parse_messages(document, path="")
    require_messages(messages, "")
    artifacts, artifact_warnings = extract_artifacts(messages)
    return Conversation(format=NAME, messages=messages, artifacts=artifacts, warnings=warnings + artifact_warnings)


def parse_messages(messages: object, *, path: str, section: str = "main") -> tuple[list[Message], list[Issue]]:
    """Parse one message list into a chain (each message the parent of the next): (messages, warnings).

    Raises ParseError with every error found.
    """
    chain = MessageChain(Issues())
    chain.add(messages, path=path, section=section)
    return chain.finish(), chain.issues.warnings


class MessageChain:
    """Builds one linear chain from one or more consecutive message lists (scenario messages, then main ones).

    Tool results are linked to their calls across all the lists, by id, when the chain is finished.
    """

    def __init__(self, issues: Issues) -> None:
        self.issues = issues
        self.messages: list[Message] = []
        self._parent: Message | None = None
        self._call_count = 0  # numbers synthetic call ids across the whole conversation
        self._call_paths: dict[str, str] = {}  # call id -> JSON path of its first occurrence

    def add(self, messages: object, *, path: str, section: str) -> None:
        if not isinstance(messages, list):
            self.issues.error(path, "must be a list of messages")
            return
        for index, raw in enumerate(messages):
            self._add_message(raw, f"{path}/{index}", section)

    def finish(self) -> list[Message]:
        """Raise the errors found, else link tool results to calls (warning about loose ends) and return."""
        self.issues.raise_errors()
        self._link_results()
        return self.messages

    def _add_message(self, raw: object, path: str, section: str) -> None:
        issues = self.issues
        if not isinstance(raw, dict):
            issues.error(path, "a message must be an object")
            return
        role = raw.get("role")
        if not isinstance(role, str) or not role:
            issues.error(f"{path}/role", "a message needs a role (a non-empty string)")
            return
        content = raw.get("content")
        parent = self._parent
        message = Message(
            key="",  # set below, from the content
            role=role,
            parent_key=parent.key if parent is not None else None,
            parts=content_parts(content, f"{path}/content", issues),
            content_is_null=content is None,
            content_is_string=isinstance(content, str),
            section=section,
            raw=raw,
            source_path=path,
        )
        extra = {name: value for name, value in raw.items() if name not in _MESSAGE_KEYS}

        tool_call_id = raw.get("tool_call_id")
        if isinstance(tool_call_id, int) and not isinstance(tool_call_id, bool):
            tool_call_id = str(tool_call_id)  # some loggers number their calls
        message.name = self._string_field("name", raw.get("name"), path, extra)
        message.tool_call_id = self._string_field("tool_call_id", tool_call_id, path, extra)
        message.reasoning = self._string_field("reasoning_content", raw.get("reasoning_content"), path, extra)
        refusal = self._string_field("refusal", raw.get("refusal"), path, extra)
        if refusal:
            # The `refusal` key becomes a refusal part so that it shows and exports like one.
            message.parts.append({"type": "refusal", "refusal": refusal})

        if role == "assistant":
            message.parts, inline_reasoning = extract_inline_reasoning(message.parts)
            if inline_reasoning:
                message.reasoning = (
                    f"{message.reasoning}\n\n{inline_reasoning}" if message.reasoning else inline_reasoning
                )
        message.text = render_text(message.parts)

        if raw.get("tool_calls") is not None:
            self._add_tool_calls(message, raw["tool_calls"], f"{path}/tool_calls")
        legacy = (
            self._function_call(message, raw["function_call"], f"{path}/function_call")
            if (raw.get("function_call") is not None)
            else None
        )
        if legacy is not None:
            message.tool_calls.append(legacy)
        message.content_key = content_key(parent.content_key if parent is not None else None, message)
        message.key = chain_key(message.content_key)
        if legacy is not None:
            # Its id names the message, which has its key only now.
            message.tool_calls.pop()
            legacy.call_id = f"function_call:{message.key}"
            self._register_call(message, legacy, f"{path}/function_call")
        message.extra = extra
        self._parent = message
        self.messages.append(message)

    def _string_field(self, key: str, value: JSON, path: str, extra: JSONObject) -> str:
        """A string field's value ("" when absent); a value of another type is kept in extra, with a warning."""
        if value is None or isinstance(value, str):
            return value or ""
        self.issues.warn(f"{path}/{key}", f"{key} is not a string; kept in extra")
        extra[key] = value
        return ""

    def _add_tool_calls(self, message: Message, calls: object, path: str) -> None:
        issues = self.issues
        if not isinstance(calls, list):
            issues.error(path, "tool_calls must be a list")
            return
        for index, call in enumerate(calls):
            call_path = f"{path}/{index}"
            if not isinstance(call, dict):
                issues.error(call_path, "a tool call must be an object")
                continue
            function = call.get("function")
            custom = call.get("custom")
            if isinstance(custom, dict):
                name, arguments, default_type = custom.get("name"), custom.get("input"), "custom"
            elif isinstance(function, dict):
                # Some producers put `arguments` beside `function` instead of inside it.
                name, arguments = function.get("name"), function.get("arguments", call.get("arguments"))
                default_type = "function"
            elif function is None:
                name, arguments, default_type = call.get("name"), call.get("arguments"), "function"
            else:
                issues.error(f"{call_path}/function", "function must be an object")
                continue
            if not isinstance(name, str) or not name:
                issues.error(call_path, "a tool call needs a function name")
                continue
            call_type = call.get("type")
            if not isinstance(call_type, str) or not call_type:
                call_type = default_type
            call_id = call.get("id")
            if not isinstance(call_id, str) or not call_id:
                call_id = f"call_{self._call_count}"
                issues.warn(call_path, f"tool call has no id; using '{call_id}'")
            tool_call = ToolCall(
                call_id=call_id,
                type=call_type,
                name=name,
                arguments=self._arguments_text(arguments, call_path),
                index=index,
                extra={key: value for key, value in call.items() if key not in _CALL_KEYS},
            )
            # A custom tool's input is free text by contract, so it is not read as JSON.
            if default_type != "custom":
                self._decode_arguments(tool_call, call_path)
            self._register_call(message, tool_call, call_path)

    def _add_function_call(self, message: Message, call: object, path: str) -> None:
        tool_call = self._function_call(message, call, path)
        if tool_call is not None:
            tool_call.call_id = f"function_call:{message.key}"
            self._register_call(message, tool_call, path)

    def _function_call(self, message: Message, call: object, path: str) -> ToolCall | None:
        """A legacy function_call as a tool call, without its id (it names the message it belongs to)."""
        if not isinstance(call, dict):
            self.issues.error(path, "function_call must be an object")
            return None
        name = call.get("name")
        if not isinstance(name, str) or not name:
            self.issues.error(path, "a function_call needs a name")
            return None
        tool_call = ToolCall(
            call_id="",
            type="function_call",
            name=name,
            arguments=self._arguments_text(call.get("arguments"), path),
            index=len(message.tool_calls),
            extra={key: value for key, value in call.items() if key not in _CALL_KEYS},
        )
        self._decode_arguments(tool_call, path)
        return tool_call

    def _arguments_text(self, arguments: object, path: str) -> str:
        if arguments is None:
            return ""
        if isinstance(arguments, str):
            return arguments
        self.issues.warn(path, "arguments are not a string; stored as their JSON text")
        return json.dumps(arguments, ensure_ascii=False)

    def _decode_arguments(self, tool_call: ToolCall, path: str) -> None:
        tool_call.parsed_arguments, tool_call.arguments_error, warning = parse_arguments(tool_call.arguments)
        if warning:
            self.issues.warn(path, warning)

    def _register_call(self, message: Message, tool_call: ToolCall, path: str) -> None:
        self._call_count += 1
        first_path = self._call_paths.get(tool_call.call_id)
        if first_path is not None:
            self.issues.warn(
                path,
                f"tool call id '{tool_call.call_id}' is used twice (first at {first_path})",
            )
        else:
            self._call_paths[tool_call.call_id] = path
        message.tool_calls.append(tool_call)

    def _link_results(self) -> None:
        """Check that each result answers a call and each call is answered; match legacy function messages.

        Results are linked by id, never by position. A legacy `function` message has no id: it answers the
        earliest open `function_call` of the same name, and gets that call's synthetic id.
        """
        issues = self.issues
        call_position: dict[str, int] = {}
        for position, message in enumerate(self.messages):
            for call in message.tool_calls:
                call_position.setdefault(call.call_id, position)
        answered: set[str] = set()
        open_function_calls: dict[str, deque[str]] = {}  # oldest first
        for position, message in enumerate(self.messages):
            for call in message.tool_calls:
                if call.type == "function_call":
                    open_function_calls.setdefault(call.name, deque()).append(call.call_id)
            if message.role == "function" and not message.tool_call_id:
                waiting = open_function_calls.get(message.name)
                if waiting:
                    message.tool_call_id = waiting.popleft()
                    answered.add(message.tool_call_id)
                else:
                    issues.warn(
                        message.source_path,
                        f"orphan result: function message '{message.name}' answers no open function_call",
                    )
            elif message.tool_call_id:
                call_at = call_position.get(message.tool_call_id)
                if call_at is None:
                    issues.warn(
                        message.source_path,
                        f"orphan result: tool_call_id '{message.tool_call_id}' matches no call",
                    )
                    continue
                answered.add(message.tool_call_id)
                if call_at > position:
                    issues.warn(
                        message.source_path,
                        f"out of order: the result of '{message.tool_call_id}' comes before its call",
                    )
            elif message.role == "tool":
                issues.warn(message.source_path, "orphan result: tool message without a tool_call_id")
        for call_id, path in self._call_paths.items():
            if call_id not in answered:
                issues.warn(path, f"unanswered call: no result for '{call_id}'")
