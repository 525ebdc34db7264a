"""The audit table's machinery (no tests): every state change a person or a key makes writes an audit event.

A feature's test file (`tests/<package>/test_<module>_audit.py`, by the chats module that performs the write)
declares its write paths with `@write_path(...)`: each is performed through the real stack (the pages and the
admin with a signed-in Client, the API with APIClient, commands with call_command) and returns the events it must
write. The file ends with one parametrized test over `declared_in(__name__)` that calls `check_write_path`.
`tests/security/test_audit_completeness.py` imports every such file and fails when a URL, an admin operation, a
service function or a command is in no file's table and not in its NOT_WRITES.

A feature file's `world` fixture is three lines:

    @pytest.fixture
    def world(reviewer: User, admin_user: User, source: Source, ingest_key: str, tmp_path: Path) -> World:
        return make_world(reviewer=reviewer, admin=admin_user, source=source, raw_key=ingest_key, tmp=tmp_path)
"""

from __future__ import annotations

import importlib
import inspect
import json
import pkgutil
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from unittest.mock import ANY

import pytest
from django.contrib.admin.models import CHANGE, LogEntry
from django.contrib.auth.models import Group, User
from django.contrib.contenttypes.models import ContentType
from django.db.models import Model, signals
from django.test import Client
from django.utils import timezone
from rest_framework.test import APIClient

import chats.services
from chats.models import (
    ApiKey,
    AuditEvent,
    Conversation,
    Feedback,
    IngestionReceipt,
    Label,
    Queue,
    QueueItem,
    RubricVersion,
    Source,
)
from chats.services.audit import CommandActor, audit_scope, in_audited_write
from chats.services.feedback import feedback_submit
from chats.services.ingestion import conversation_ingest
from chats.services.labels import label_create
from chats.services.sources import source_get_or_create
from tests.factories import make_conversation

PASSWORD = "correct horse battery staple"
NEW_PASSWORD = "a quite different horse 42"

Events = list[dict[str, Any]]


# --------------------------------------------------------------------------------------------------------------
# The world every write path starts from (its own events are written before the test looks)


@dataclass
class World:
    reviewer: User
    admin: User
    other_user: User  # no role, one admin log entry; the admin changes, deletes and sets the password of this one
    source: Source
    raw_key: str
    conversation: Conversation  # a branched conversation (make_conversation)
    feedback: Feedback  # the reviewer's, on the conversation as a whole, labelled "helpful"
    label: Label  # "helpful", in use
    spare_label: Label  # in no feedback: deletable
    spare_source: Source  # no conversations, no keys: deletable
    group: Group  # "Editors", no permissions
    chat: Conversation  # ingested through the API: the document is `chat_document`
    chat_document: dict[str, Any]
    tmp: Path

    @property
    def key_prefix(self) -> str:
        return self.raw_key[3 : 3 + ApiKey.PREFIX_LENGTH]

    def page(self, user: User) -> Client:
        client = Client()
        client.force_login(user)
        return client

    def api(self, user: User | None = None) -> APIClient:
        """A person's session, or (no user) the source's key."""
        client = APIClient()
        if user is None:
            client.credentials(HTTP_AUTHORIZATION=f"Api-Key {self.raw_key}")
        else:
            client.force_login(user)
        return client

    def ingest(self, document: Any) -> Any:
        return self.api().post("/api/v1/ingest/", data=json.dumps(document), content_type="application/json")


def chat(*turns: tuple[str, str], chat_id: str = "audit-chat", title: str = "Primers") -> dict[str, Any]:
    messages = [{"role": role, "content": text} for role, text in turns]
    return {"chat_id": chat_id, "title": title, "main_messages": messages}


FIRST_TURN = (("user", "Why two bands?"), ("assistant", "Primer dimers."))
# The audited values of the world's feedback.
WORLD_FEEDBACK = {"score": 1, "comment": "", "correction": "", "labels": ["helpful"], "message": None}


def make_world(*, reviewer: User, admin: User, source: Source, raw_key: str, tmp: Path) -> World:
    """The body of every feature file's `world` fixture (from the `reviewer`, `admin_user`, `source`,
    `ingest_key` and `tmp_path` fixtures)."""
    helpful = label_create(name="helpful", description="Solved it.")
    spare_label = label_create(name="spare", description="Unused.")
    conversation = make_conversation(source, n_messages=5, with_tools=False, branches=1)
    feedback, _ = feedback_submit(author=reviewer, conversation=conversation, score=1, labels=[helpful])
    spare_source, _ = source_get_or_create(name="spare-source")
    other_user = User.objects.create_user(username="uma", password=PASSWORD)
    # What the admin did as a staff member goes with them when they are deleted.
    LogEntry.objects.create(
        user=other_user,
        content_type=ContentType.objects.get_for_model(Label),
        object_id=str(helpful.pk),
        object_repr="helpful",
        action_flag=CHANGE,
    )
    group = Group.objects.create(name="Editors")
    chat_document = chat(*FIRST_TURN)
    ingested_chat = conversation_ingest(
        source=source, document=chat_document, api_key=ApiKey.objects.get(source=source)
    ).conversation
    assert ingested_chat is not None
    return World(
        reviewer=reviewer,
        admin=admin,
        other_user=other_user,
        source=source,
        raw_key=raw_key,
        conversation=conversation,
        feedback=feedback,
        label=helpful,
        spare_label=spare_label,
        spare_source=spare_source,
        group=group,
        chat=ingested_chat,
        chat_document=chat_document,
        tmp=tmp,
    )


# --------------------------------------------------------------------------------------------------------------
# Expected events


def expect(
    action: str,
    actor: User | str,
    target_type: str,
    target_id: Any,
    *,
    before: Any = None,
    after: Any = None,
    conversation: Any = None,
) -> dict[str, Any]:
    """An event as stored; `actor` is a user, or the name of a source ("source:x") or a command."""
    return {
        "action": action,
        "actor_id": actor.pk if isinstance(actor, User) else None,
        "actor_username": actor.get_username() if isinstance(actor, User) else actor,
        "target_type": target_type,
        "target_id": str(target_id),
        "conversation_uuid": conversation,
        "before": before,
        "after": after,
    }


def stored(events: Any) -> list[dict[str, Any]]:
    return list(
        events.values(
            "action", "actor_id", "actor_username", "target_type", "target_id", "conversation_uuid", "before", "after"
        )
    )


def _order(event: dict[str, Any]) -> tuple[str, str]:
    return event["action"], event["target_id"]


def command(name: str) -> str:
    return CommandActor(name).get_username()


def ingest_state(conversation: Conversation, **extra: Any) -> dict[str, Any]:
    conversation.refresh_from_db()
    state = {
        "message_count": conversation.message_count,
        "branch_count": conversation.branch_count,
        "active_leaf_key": conversation.active_leaf_key,
        "feedback_count": conversation.feedback_count,
        "score_up": conversation.score_up,
        "score_down": conversation.score_down,
    }
    return state | extra


def user_row(user: User, **changes: Any) -> dict[str, Any]:
    """A user's audited row (the password only as set or not), as created or deleted."""
    return {
        "id": user.pk,
        "password": "(set)",
        "last_login": None,
        "is_superuser": False,
        "username": user.username,
        "first_name": "",
        "last_name": "",
        "email": "",
        "is_staff": False,
        "is_active": True,
        "date_joined": ANY,
        "groups": [],
        "user_permissions": [],
    } | changes


# --------------------------------------------------------------------------------------------------------------
# Helpers several features use


def ingested(w: World, action: str, response: Any, before: Any, **after: Any) -> dict[str, Any]:
    """The event of an ingestion by the world's key, from the API's response."""
    body = response.json()
    conversation = Conversation.objects.get(uuid=body["conversation"])
    extra = {"receipt": body["receipt"], "api_key": w.key_prefix, **after}
    return expect(
        action,
        f"source:{w.source.name}",
        "conversation",
        conversation.uuid,
        before=before,
        after=ingest_state(conversation, **extra),
        conversation=conversation.uuid,
    )


REVIEW_QUESTIONS: list[dict[str, Any]] = [
    {"key": "correct", "prompt": "Correct?", "type": "categorical", "options": ["yes", "no"], "target": "conversation"}
]


def review_queue(w: World, reviews_per_item: int = 1) -> Queue:
    """A queue of the world's conversation, worked by the reviewer; its own events are not the path's."""
    with audit_scope():
        queue = Queue.objects.create(name="Answers", reviews_per_item=reviews_per_item, created_by=w.admin)
        RubricVersion.objects.create(queue=queue, version=1, questions=REVIEW_QUESTIONS)
        queue.members.add(w.reviewer)
        QueueItem.objects.create(queue=queue, conversation=w.conversation)
    return queue


def admin_post(w: World, url: str, data: dict[str, Any]) -> Any:
    """Post an admin form as the world's admin; the form must be accepted."""
    response = w.page(w.admin).post(url, data)
    assert response.status_code in (200, 302), response.content[:2000]
    if response.status_code == 200 and "adminform" in (response.context or {}):
        errors = response.context["adminform"].form.errors
        assert not errors, errors
    return response


def pruned(w: World, receipt: IngestionReceipt, days: int, target: str, actor: User | str) -> dict[str, Any]:
    """The event of a prune that removed `receipt`'s payload, which no other receipt named."""
    receipt.refresh_from_db()
    assert receipt.payload_id is None and receipt.payload_sha256 and receipt.outcome == "created"
    after = {
        "older_than_days": days,
        "cutoff": ANY,
        "receipts": 1,
        "payloads_deleted": 1,
        "payload_bytes_deleted": receipt.size_bytes,
        "stored_bytes_deleted": ANY,
    }
    return expect("receipt.payloads_pruned", actor, "receipts", target, after=after)


# --------------------------------------------------------------------------------------------------------------
# The write paths: each feature file registers its own


@dataclass(frozen=True)
class WritePath:
    name: str
    covers: tuple[str, ...]  # "<METHOD> <url name>", "admin <model> <add|change|delete>", "service <fn>", ...
    perform: Callable[[World], Events]  # does the write, returns the events it must write
    module: str  # the feature file that declares it
    xfail: str = ""  # a known gap, and why: the test must fail until it is closed (strict)
    postgres: bool = False  # runs on PostgreSQL only (skipped when the suite runs on SQLite)


# Every write path declared by an imported feature file, in declaration order.
WRITE_PATHS: list[WritePath] = []


def write_path(
    *covers: str, xfail: str = "", postgres: bool = False
) -> Callable[[Callable[[World], Events]], Callable[[World], Events]]:
    def register(perform: Callable[[World], Events]) -> Callable[[World], Events]:
        WRITE_PATHS.append(WritePath(perform.__name__, covers, perform, perform.__module__, xfail, postgres))
        return perform

    return register


def declared_in(module: str) -> list[Any]:
    """The write paths `module` declares, as the parameters of its one test (call at the end of the file)."""
    return [
        pytest.param(
            path,
            id=path.name,
            marks=([pytest.mark.xfail(strict=True, reason=path.xfail)] if path.xfail else [])
            + ([pytest.mark.postgres] if path.postgres else []),
        )
        for path in WRITE_PATHS
        if path.module == module
    ]


def check_write_path(world: World, path: WritePath) -> None:
    """Perform the path: it writes exactly its events (a time within the test, no password hash or key in any),
    goes through each service it says it covers, and changes no audited row outside an audited write."""
    mark = AuditEvent.objects.order_by("-id").values_list("id", flat=True).first() or 0
    services_used = [cover.removeprefix("service ") for cover in path.covers if cover.startswith("service ")]
    started = timezone.now()
    with spying(services_used) as calls, audited_writes_only():
        expected = path.perform(world)
    events = AuditEvent.objects.filter(id__gt=mark).order_by("id")

    assert sorted(stored(events), key=_order) == sorted(expected, key=_order)
    for event in events:
        assert started <= event.created_at <= timezone.now()
        recorded = json.dumps([event.before, event.after])
        assert "md5$" not in recorded and world.raw_key not in recorded  # never a password hash or a key
    for name, count in calls.items():
        assert count, f"{path.name} does not go through the service {name}"


def service_functions() -> dict[str, Callable[..., Any]]:
    """The public functions of every module of chats.services, by name."""
    found: dict[str, Callable[..., Any]] = {}
    for module_info in pkgutil.iter_modules(chats.services.__path__):
        module = importlib.import_module(f"chats.services.{module_info.name}")
        for name, function in inspect.getmembers(module, inspect.isfunction):
            if function.__module__ == module.__name__ and not name.startswith("_"):
                found[name] = function
    return found


@contextmanager
def spying(names: list[str]) -> Iterator[dict[str, int]]:
    """Count the calls of the named services (however their callers import them), to check that an entry goes
    through the services it says it covers."""
    functions = service_functions()
    codes = {inspect.unwrap(functions[name]).__code__: name for name in names}
    calls = dict.fromkeys(names, 0)
    tool = sys.monitoring.OPTIMIZER_ID
    sys.monitoring.use_tool_id(tool, "audit-trail-spy")

    def started(code: Any, offset: int) -> None:
        calls[codes[code]] += 1

    try:
        sys.monitoring.register_callback(tool, sys.monitoring.events.PY_START, started)
        for code in codes:
            sys.monitoring.set_local_events(tool, code, sys.monitoring.events.PY_START)
        yield calls
    finally:
        for code in codes:
            sys.monitoring.set_local_events(tool, code, 0)
        sys.monitoring.register_callback(tool, sys.monitoring.events.PY_START, None)
        sys.monitoring.free_tool_id(tool)


# Rows that are records themselves (the audit log, receipts, views, the admin's own log, sessions), and signing in.
UNAUDITED = {
    "chats.auditevent",
    # The heads of the audit chain verify_audit found intact: its own record, beside its audit.verified event.
    "chats.auditcheckpoint",
    # A worker's records of background work: the parts of an export job's result (asking for the job is audited,
    # downloading it too), and a queue rule's runs (what a run adds is audited by rule_run).
    "chats.exportjobpart",
    "chats.queuerulerun",
    "chats.ingestionreceipt",
    "chats.readevent",
    "admin.logentry",
    "sessions.session",
}
# Failed sign-ins, which django-axes records as people sign in; removing them (unlocking) is audited.
RECORDED_BY_SIGNING_IN = {"axes.accessattempt"}


@contextmanager
def audited_writes_only() -> Iterator[None]:
    """Fail any save, delete or many-to-many change of an audited model made outside an audited write (a service,
    or `audited`/`audited_delete`): the one way to change a row is the audited one."""

    def check(sender: type[Model], **kwargs: Any) -> None:
        model = kwargs["instance"].__class__ if sender._meta.auto_created else sender
        if model._meta.label_lower in UNAUDITED or in_audited_write():
            return
        if model._meta.label_lower in RECORDED_BY_SIGNING_IN and kwargs["signal"] is signals.pre_save:
            return
        if model is User and set(kwargs.get("update_fields") or ()) == {"last_login"}:
            return  # signing in
        raise AssertionError(f"{model._meta.label} written outside an audited write")

    receivers = [(signals.pre_save, check), (signals.pre_delete, check), (signals.m2m_changed, check)]
    for signal, receiver in receivers:
        signal.connect(receiver, weak=False, dispatch_uid="audited-writes-only")
    try:
        yield
    finally:
        for signal, _ in receivers:
            signal.disconnect(dispatch_uid="audited-writes-only")
