"""Parsers from every input format to the canonical form (``chats.formats.canonical``), and format detection.

Pure Python: no Django, no database. Input is decoded JSON; output is a ``Conversation`` with its warnings,
or a ``ParseError`` carrying every error found, each located by a JSON pointer into the document.
``files`` reads conversation files (JSON, JSONL, ChatGPT export folders and zips) into documents.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from chats.formats.canonical import FORMATS as FORMATS
from chats.formats.canonical import Conversation, Issue, ParseError
from chats.ingest import chat_document, chat_graph, chat_history, chatgpt_export, openai, openwebui, record_qa


@dataclass(frozen=True, slots=True)
class _Format:
    name: str
    expects: str
    matches: Callable[[object], bool]
    parse: Callable[[object], Conversation]


# In detection order: the most specific shapes first (a Record QA document also has a chat document's shape,
# and any JSON array, an Open WebUI export among them, would pass for an OpenAI message list).
_DETECTION_ORDER = tuple(
    _Format(module.NAME, module.EXPECTS, module.matches, module.parse)
    for module in (chatgpt_export, openwebui, chat_graph, chat_history, record_qa, chat_document, openai)
)
_BY_NAME = {spec.name: spec for spec in _DETECTION_ORDER}
assert set(_BY_NAME) == set(FORMATS)


def detect_format(document: object) -> str:
    """The name of the format whose shape ``document`` has; ParseError when it has none of them."""
    for spec in _DETECTION_ORDER:
        if spec.matches(document):
            return spec.name
    accepted = "; ".join(f"{spec.name}: {spec.expects}" for spec in _DETECTION_ORDER)
    raise ParseError([Issue("", f"unrecognised document shape; accepted shapes are {accepted}")])


def parse_document(document: object, *, format: str | None = None) -> Conversation:
    """Parse one conversation document, in the named format or the detected one."""
    if format is None:
        format = detect_format(document)
    spec = _BY_NAME.get(format)
    if spec is None:
        raise ParseError([Issue("", f"unknown format '{format}'; expected one of: {', '.join(FORMATS)}")])
    return spec.parse(document)
