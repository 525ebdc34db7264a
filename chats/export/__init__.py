"""Export a canonical conversation in any input format, and as a training record.

Pure Python over the dataclasses of `chats.formats.canonical`: no Django, no ORM. The caller (a view, a
command) loads a `Conversation`, from a parser or rebuilt from the database, and serialises
`ExportResult.document`.
"""

from __future__ import annotations

from collections.abc import Callable

from chats.formats.canonical import FORMATS, Conversation

from .capabilities import CAPABILITIES, CAPABILITY_NAMES
from .common import ExportResult, active_path
from .linear import export_chat_document, export_chat_history, export_openai, export_record_qa
from .openwebui import export_openwebui
from .training import training_record
from .trees import export_chat_graph, export_chatgpt

__all__ = [
    "CAPABILITIES",
    "CAPABILITY_NAMES",
    "FORMATS",
    "ExportResult",
    "active_path",
    "export_conversation",
    "training_record",
]

_EXPORTERS: dict[str, Callable[[Conversation], ExportResult]] = {
    "openai": export_openai,
    "chat_document": export_chat_document,
    "record_qa": export_record_qa,
    "chat_history": export_chat_history,
    "chat_graph": export_chat_graph,
    "chatgpt_export": export_chatgpt,
    "openwebui": export_openwebui,
}
assert set(_EXPORTERS) == set(FORMATS)


def export_conversation(conversation: Conversation, format: str) -> ExportResult:
    """The conversation as a document of `format`, with notes of what that format could not hold.

    Exporting in the format the conversation arrived in gives back an equivalent document: each message as it
    was received, the top level rebuilt from the conversation's fields and its verbatim metadata.
    """
    try:
        exporter = _EXPORTERS[format]
    except KeyError:
        raise ValueError(f"unknown export format {format!r}; expected one of {', '.join(FORMATS)}") from None
    return exporter(conversation)
