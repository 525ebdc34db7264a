"""What the model was given (design notes §4, "What the model was given, and was it allowed"): the thread page's
panel of the system, developer and scenario messages, the model and its settings, the times, the scenario, the
tools offered, and the Record QA injection context with every listed id's state and every injection's verdict.

Four queries whatever the thread's size: the ids the context lists, the conversation's injections (their
verdicts), the names of the tools it called, and the system, developer and scenario messages along the whole path
shown (the page holds only a window of it). A message's author metadata and unknown keys are shown with the message
itself (``ThreadMessage.has_details``).

Where each part is stored after ingestion: the model as given in ``Conversation.model_config``; a request's
``tools`` list and a Masterbrain document's ``function_names`` among the unmapped top-level keys
(``Conversation.metadata``), or inside the model object when a producer put them there; the injection context in
``Conversation.injection_context`` and its ids, judged at ingestion (chats.ingest.policy), in ``ContextArtifactId``.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.db.models import BooleanField, ExpressionWrapper

from chats.ingest.injections import injection_kind, is_id_list_key
from chats.models import (
    ContextArtifactId,
    ContextIdState,
    Conversation,
    InjectedArtifact,
    Message,
    ToolCall,
    Verdict,
)
from chats.selectors.threads import Thread, set_apart

# Where the tools offered come from, by preference; the third is a fallback, and says so.
TOOLS_LIST = "tools"
FUNCTION_NAMES = "function_names"
CALLED = "called"
TOOL_ORIGINS = {
    TOOLS_LIST: "the request's tools list",
    FUNCTION_NAMES: "the document's function_names",
    CALLED: "the tools actually called (nothing else says what was offered)",
}
# Keys of the model object that name the model (chats.ingest.chat_document reads the name from them).
MODEL_NAME_KEYS = ("name", "model")
# The metadata keys the panel shows in their own place (the rest is shown as "other fields").
SHOWN_METADATA_KEYS = frozenset({TOOLS_LIST, FUNCTION_NAMES})


@dataclass(frozen=True)
class OfferedTool:
    name: str
    description: str
    called: bool  # the conversation has a call of a tool of this name
    definition: Any  # the entry as given (a tools-list object, or the name)


@dataclass(frozen=True)
class ToolOffer:
    """The tools offered, as one source states them."""

    origin: str  # TOOLS_LIST, FUNCTION_NAMES or CALLED

    tools: list[OfferedTool]

    @property
    def origin_text(self) -> str:
        return TOOL_ORIGINS[self.origin]


@dataclass(frozen=True)
class KindSetting:
    """One kind's setting in the injection context: ``inject_airalogy_protocols: {enabled, ids, scope}``."""

    key: str
    kind: str
    enabled: bool  # only the JSON true enables (chats.ingest.policy)
    enabled_as_given: Any
    scope: Any
    other: dict[str, Any]  # the setting's other keys (neither enabled, scope nor an id list), verbatim


@dataclass(frozen=True)
class ModelInputs:
    conversation: Conversation
    model_name: str
    model_settings: dict[str, Any]  # the model object's keys but its name ({} for a plain name)
    model_as_given: Any
    started_at: datetime | None
    ended_at: datetime | None
    prompts: list[Message]  # system, developer and scenario messages along the path shown
    scenario: Any
    tool_offers: list[ToolOffer]  # stated offers (tools list, function_names), else the tools called
    called_not_offered: list[str]  # tools called that a stated offer does not name
    kinds: list[KindSetting]
    other_context: dict[str, Any]  # context keys that are not injection settings
    context_ids: list[ContextArtifactId]
    injections: list[InjectedArtifact]  # every injection of the conversation (all branches), with its verdict
    other_metadata: dict[str, Any]
    context_pairs: list[Any] = field(default_factory=list)

    @property
    def duration(self) -> timedelta | None:
        if self.started_at is None or self.ended_at is None:
            return None
        return self.ended_at - self.started_at

    @property
    def duration_text(self) -> str:
        """How long the conversation ran, as "5 min 30 s"; "" without both times or when the end is before the start."""
        duration = self.duration
        if duration is None or duration < timedelta(0):
            return ""
        seconds = int(duration.total_seconds())
        days, rest = divmod(seconds, 86_400)
        hours, rest = divmod(rest, 3600)
        minutes, seconds = divmod(rest, 60)
        parts = [(days, "d"), (hours, "h"), (minutes, "min"), (seconds, "s")]
        return " ".join(f"{n} {unit}" for n, unit in parts if n) or "0 s"

    @property
    def has_context(self) -> bool:
        return self.conversation.injection_context is not None

    @property
    def violation(self) -> bool | None:
        return self.conversation.policy_violation

    @property
    def not_permitted(self) -> list[InjectedArtifact]:
        return [a for a in self.injections if a.verdict is not None and a.verdict != Verdict.PERMITTED]

    @property
    def state_counts(self) -> list[tuple[str, int]]:
        """How many listed ids are in each state, as words, in the states' order."""
        counts = Counter(item.state for item in self.context_ids)
        return [(str(label), counts[value]) for value, label in ContextIdState.choices if counts[value]]

    @property
    def tools_offered_count(self) -> int:
        stated = [offer for offer in self.tool_offers if offer.origin != CALLED]
        return len({tool.name for offer in stated for tool in offer.tools})


def _model(conversation: Conversation) -> tuple[str, dict[str, Any]]:
    config = conversation.model_config
    if not isinstance(config, dict):
        return conversation.model_name, {}
    name_key = next((key for key in MODEL_NAME_KEYS if isinstance(config.get(key), str)), None)
    return conversation.model_name, {key: value for key, value in config.items() if key != name_key}


def _tool_entry(entry: object, called: set[str]) -> OfferedTool:
    """One entry of a tools list: ``{"type": "function", "function": {name, description, parameters}}``, the flat
    ``{"name", "description"}`` some APIs take, or a bare name."""
    if isinstance(entry, str):
        return OfferedTool(name=entry, description="", called=entry in called, definition=entry)
    body = entry.get("function") if isinstance(entry, dict) and isinstance(entry.get("function"), dict) else entry
    name = body.get("name") if isinstance(body, dict) else None
    description = body.get("description") if isinstance(body, dict) else None
    shown = name if isinstance(name, str) else ""
    return OfferedTool(
        name=shown,
        description=description if isinstance(description, str) else "",
        called=bool(shown) and shown in called,
        definition=entry,
    )


def _stated(conversation: Conversation, key: str) -> Any:
    """A key of the top-level document (metadata), or of the model object when a producer put it there."""
    metadata = conversation.metadata if isinstance(conversation.metadata, dict) else {}
    if key in metadata:
        return metadata[key]
    config = conversation.model_config
    return config.get(key) if isinstance(config, dict) else None


def _tool_offers(conversation: Conversation, called_names: list[str]) -> tuple[list[ToolOffer], list[str]]:
    called = set(called_names)
    offers = []
    for origin in (TOOLS_LIST, FUNCTION_NAMES):
        stated = _stated(conversation, origin)
        if isinstance(stated, list):
            offers.append(ToolOffer(origin, [_tool_entry(entry, called) for entry in stated]))
    if not offers:
        if not called_names:
            return [], []
        return [ToolOffer(CALLED, [OfferedTool(name, "", True, name) for name in called_names])], []
    named = {tool.name for offer in offers for tool in offer.tools}
    return offers, [name for name in called_names if name not in named]


def _kinds(context: object) -> tuple[list[KindSetting], dict[str, Any]]:
    if not isinstance(context, dict):
        return [], {} if context is None else {"(context)": context}
    kinds, other = [], {}
    for key, setting in context.items():
        kind = injection_kind(key)
        if kind is None:
            other[key] = setting
            continue
        values = setting if isinstance(setting, dict) else {}
        rest = {k: v for k, v in values.items() if k not in ("enabled", "scope") and not is_id_list_key(k)}
        kinds.append(
            KindSetting(
                key=key,
                kind=kind,
                enabled=values.get("enabled") is True,
                enabled_as_given=values.get("enabled"),
                scope=values.get("scope"),
                other=rest if isinstance(setting, dict) else {"(setting)": setting},
            )
        )
    return kinds, other


def model_inputs_read(thread: Thread) -> ModelInputs:
    """The panel of ``thread``'s conversation, in four queries whatever the thread's size."""
    conversation = thread.conversation
    context_ids = list(ContextArtifactId.objects.filter(conversation=conversation).order_by("id"))
    injections: list[InjectedArtifact] = list(
        InjectedArtifact.objects.filter(conversation=conversation)
        .only("id", "kind", "artifact_id", "id_well_formed", "verdict", "tool_call_id", "message_id")
        # Whether its message is on the path shown (its call can be linked to), in the same query.
        .annotate(on_path=ExpressionWrapper(thread.window.on_path("message__"), output_field=BooleanField()))
        .order_by("id")
    )
    called_names = list(
        ToolCall.objects.filter(conversation=conversation)
        .exclude(name="")
        .order_by("name")
        .values_list("name", flat=True)
        .distinct()
    )
    prompts = list(
        Message.objects.filter(thread.window.on_path(""), conversation=conversation)
        .filter(set_apart())
        .only("id", "role", "name", "section", "text", "position", "depth")
        .order_by("depth", "id")
    )

    model_name, settings = _model(conversation)
    offers, called_not_offered = _tool_offers(conversation, called_names)
    kinds, other_context = _kinds(conversation.injection_context)
    metadata = conversation.metadata if isinstance(conversation.metadata, dict) else {}
    return ModelInputs(
        conversation=conversation,
        model_name=model_name,
        model_settings=settings,
        model_as_given=conversation.model_config,
        started_at=conversation.started_at,
        ended_at=conversation.ended_at,
        prompts=prompts,
        scenario=conversation.scenario,
        tool_offers=offers,
        called_not_offered=called_not_offered,
        kinds=kinds,
        other_context=other_context,
        context_ids=context_ids,
        injections=injections,
        other_metadata={key: value for key, value in metadata.items() if key not in SHOWN_METADATA_KEYS},
        context_pairs=list(conversation.context_pairs or []),
    )
