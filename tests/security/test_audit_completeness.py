"""The audit table is complete: every way to write is in some feature file's table, or said here to write nothing.

Each feature file (`tests/<package>/test_<module>_audit.py`) declares its write paths with `@write_path` (see
tests/security/audit_paths.py). This file imports every such file, found by name (a new one joins by itself), and
fails when a URL, an admin (add, change, delete, an action, an extra page), a public function of a chats.services
module or a management command is neither covered by a declared write path nor listed in NOT_WRITES with the reason
it changes nothing audited; when an entry names something that no longer exists; when two write paths share a
name; and when a declared write path is not among its file's test cases.
"""

from __future__ import annotations

import importlib
import pkgutil
import uuid
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from axes.models import AccessAttempt
from django.contrib import admin
from django.contrib.auth.models import User
from django.db import transaction
from django.test import Client, RequestFactory
from django.urls import URLPattern, URLResolver, get_resolver, reverse
from django.urls.converters import IntConverter, UUIDConverter

import chats.management.commands
from chats.admin import AuditedModelAdmin
from chats.models import AuditEvent, Label, Source
from chats.services import labels as label_services
from chats.services.audit import audited
from tests.security.audit_paths import WRITE_PATHS, World, WritePath, audited_writes_only, make_world, service_functions

pytestmark = pytest.mark.django_db

WRITE_METHODS = ("POST", "PUT", "PATCH", "DELETE")
TESTS = Path(__file__).resolve().parent.parent


def _feature_modules() -> list[ModuleType]:
    """Every tests/**/test_*_audit.py, imported under the dotted name pytest gives it: importing one registers its
    write paths (a file with none, such as a test module that happens to match, adds nothing)."""
    return [
        importlib.import_module(".".join(path.relative_to(TESTS.parent).with_suffix("").parts))
        for path in sorted(TESTS.rglob("test_*_audit.py"))
    ]


FEATURE_MODULES = _feature_modules()


@pytest.fixture
def world(reviewer: User, admin_user: User, source: Source, ingest_key: str, tmp_path: Path) -> World:
    return make_world(reviewer=reviewer, admin=admin_user, source=source, raw_key=ingest_key, tmp=tmp_path)


# --------------------------------------------------------------------------------------------------------------
# Everything that is said to write nothing audited, and why


NOT_WRITES = {
    # The Trends rollups are derived from stored rows (rebuilt, never edited): rebuilding them changes no audited
    # state, as the search vectors built with the messages do not.
    "command rollup_trends": "rebuilds derived rollups",
    "service rollup_keys": "rebuilds derived rollups",
    "service trends_rollup": "rebuilds derived rollups",
    "service trends_rollup_soon": "schedules the rollups' rebuild after the write commits",
    "service trends_rollup_all": "rebuilds derived rollups",
    # Ingestion's steps that write nothing themselves: checking and parsing, finding the conversation, reading
    # what is stored, and building the rows and the event that conversation_store and the bulk writer save.
    "service document_prepare": "parses",
    "service target_external_ids": "read",
    "service idless_lock": "takes a lock",
    "command citus_ddl": "prints SQL read from the catalog; changes nothing",
    # The ingest task once its retries are spent: the receipts still queued are rejected through
    # queued_receipts_fail (a receipt, no audited state).
    "service queued_receipts_exhausted": "rejects queued receipts: no audited state",
    "service cyclic_gc_paused": "holds Python's garbage collector off around a bulk ingestion",
    # Called inside every ingestion's write, whose entries cover it: the queue rules' events are the ingestion's.
    "service conversations_changed": "part of an ingestion's write",
    "service stored_snapshots": "read",
    # Team review: the messages an item's answers may name, read by the answer check of every review write.
    "service receipt_values": "builds a receipt's values",
    "service ingest_event": "builds an unsaved event",
    "service sender_actor": "computes who an ingestion's events name",
    "service plan_rows": "builds rows",
    "service new_conversation": "builds an unsaved conversation",
    # conversation_store's steps, which the ingestion paths cover through it: refusing a document (a receipt
    # only), storing a receipt, and writing a plan's rows (its event is written by conversation_store).
    "service reject": "a step of conversation_store: a receipt, no audited state",
    "service receipt_create": "a step of conversation_store: a receipt, no audited state",
    "service document_content": "computes the bytes a document is kept as",
    "service receipt_payloads_save": "a step of every receipt's writing: the bytes it names, no audited state",
    "service write_plan": "a step of conversation_store, which writes the event",
    # Signing in and out changes a session (and last_login), no audited state.
    "POST login": "signing in",
    "PUT login": "signing in (Django's form views take PUT as POST)",
    "POST logout": "signing out",
    "admin:login": "signing in",
    "admin:logout": "signing out",
    # Reads.
    "GET chats:home": "read",
    "GET chats:trends": "read",
    "GET chats:conversation_list": "read",
    "GET chats:next_unreviewed": "read",
    "GET chats:feedback_form": "read",
    "GET api:receipt": "read",
    "GET api:health": "read",
    "GET api:receipt-payload": "read",
    "admin:chats_ingestionreceipt_payload": "read (a download)",
    "GET api:artifacts": "read",
    "GET api:artifact-detail": "read",
    "GET chats:artifact_list": "read",
    "GET chats:artifact_detail": "read",
    "GET chats:audit_list": "read",
    "GET chats:audit_event": "read",
    "GET api:labels": "read",
    "GET api:schema": "read",
    "GET api:docs": "read",
    "GET api:conversation-list": "read",
    "GET api:dataset-detail": "read",
    "GET api:export-job-detail": "read",
    "GET chats:export_jobs": "read",
    "GET chats:saved_view_list": "read",
    "GET chats:saved_view_menu": "read",
    "service saved_view_query": "checks a saved view's query string",
    "service person_roles_of": "read",
    "GET api:queue-rule-run-detail": "read",
    "GET api:queue-agreement": "read",
    "GET api:queue-progress": "read",
    "GET chats:queue_list": "read",
    "GET chats:queue_detail": "read",
    "GET chats:queue_adjudicate": "read",
    # The review page records the view, as the thread page does (ReadEvent, apart from the audit log).
    "GET chats:queue_item": "read (a view recorded)",
    "admin:index": "read",
    "admin:app_list": "read",
    "admin:jsi18n": "read",
    "admin:autocomplete": "read",
    "admin:view_on_site": "read (a redirect)",
    "admin:password_change_done": "read",
    # Services that are the audit trail itself, or read, or keep derived counters.
    "service audit_record": "the audit trail itself",
    "service audit_snapshot": "the audit trail itself",
    "service audit_record_saved": "the audit trail itself",
    "service audit_record_deleted": "the audit trail itself",
    "service audit_event": "the audit trail itself",
    "service audit_insert": "the audit trail itself (every event is chained and stored through it)",
    "service audit_chain_digest": "the audit trail itself (computes an event's hash)",
    "service audit_chain_check": "the audit trail itself (a read: walks the chain)",
    "service audited": "the audit trail itself (the admin's and the commands' writes go through it)",
    "service audited_delete": "the audit trail itself",
    "service audited_set": "the audit trail itself (the audited field update the services' updates go through)",
    "service audit_record_changes": "the audit trail itself (records an update's changed keys)",
    "service audited_update": "the audit trail itself (the source and label services go through it)",
    "service audited_write": "the audit trail itself (a decorator)",
    "service audit_scope": "the audit trail itself",
    "service in_audited_write": "the audit trail itself (a read)",
    "service jsonable": "computes",
    "service feedback_ensure_owner": "checks a permission",
    "service feedback_summary_refresh": "derived counters, refreshed inside the audited feedback services",
    "service api_key_daily_bytes_add": "a derived counter: the bytes a key sent today, counted by the ingest throttle",
}


# --------------------------------------------------------------------------------------------------------------
# The ways to write: URLs, admins, services and commands


def _walk(patterns: list[Any], namespace: str = "", converters: dict[str, Any] | None = None) -> Iterator[Any]:
    for entry in patterns:
        found = {**(converters or {}), **entry.pattern.converters}
        if isinstance(entry, URLResolver):
            inner = f"{namespace}:{entry.namespace}" if namespace and entry.namespace else entry.namespace or namespace
            yield from _walk(entry.url_patterns, inner, found)
        elif isinstance(entry, URLPattern):
            name = f"{namespace}:{entry.name}" if namespace and entry.name else entry.name
            yield name, entry.callback, found


def _sample(converter: Any) -> Any:
    if isinstance(converter, UUIDConverter):
        return uuid.uuid4()
    return 1 if isinstance(converter, IntConverter) else "x"


def _write_methods(name: str, callback: Any, converters: dict[str, Any]) -> set[str]:
    view = getattr(callback, "cls", None) or getattr(callback, "view_class", None)
    if view is not None:
        allowed = (
            set(callback.actions)
            if hasattr(callback, "actions")
            else {m for m in view.http_method_names if hasattr(view, m)}
        )
        return {method.upper() for method in allowed & set(view.http_method_names)} & set(WRITE_METHODS)
    # A function view: require_GET / require_POST answer 405 to other methods before anything else.
    url = reverse(name, kwargs={key: _sample(converter) for key, converter in converters.items()})
    client = Client()
    return {method for method in WRITE_METHODS if client.generic(method, url).status_code != 405}


def _standard_admin_urls() -> set[str]:
    return {
        f"admin:{model._meta.app_label}_{model._meta.model_name}_{suffix}"
        for model in admin.site._registry
        for suffix in ("changelist", "add", "history", "delete", "change")
    }


def _url_keys() -> set[str]:
    keys = set()
    standard = _standard_admin_urls()
    for name, callback, converters in _walk(get_resolver().url_patterns):
        if name is None:
            continue  # the admin's catch-all and object redirect: no view of their own
        if name.startswith("admin:"):
            if name not in standard:
                keys.add(name)  # the site's own pages and the admins' extra ones
            continue
        methods = _write_methods(name, callback, converters)
        keys |= {f"{method} {name}" for method in methods} or {f"GET {name}"}
    return keys


def _admin_keys(superuser: User) -> set[str]:
    """What a superuser can do in each admin: add, change, delete, and each action."""
    request = RequestFactory().get("/admin/")
    request.user = superuser
    keys = set()
    for model, model_admin in admin.site._registry.items():
        label = model._meta.label_lower
        for operation in ("add", "change", "delete"):
            check = getattr(model_admin, f"has_{operation}_permission")
            if check(request) if operation == "add" else check(request, None):
                keys.add(f"admin {label} {operation}")
        keys |= {f"admin {label} action {action}" for action in model_admin.get_actions(request)}
    return keys


def _service_keys() -> set[str]:
    return {f"service {name}" for name in service_functions()}


def _command_keys() -> set[str]:
    return {f"command {module.name}" for module in pkgutil.iter_modules(chats.management.commands.__path__)}


# --------------------------------------------------------------------------------------------------------------
# The table is complete: every way to write is in it, or said to write nothing audited


def _covered() -> set[str]:
    return {cover for path in WRITE_PATHS for cover in path.covers}


def test_every_write_path_is_in_the_table_or_said_to_write_nothing(admin_user: User) -> None:
    required = _url_keys() | _admin_keys(admin_user) | _service_keys() | _command_keys()
    covered = _covered()

    assert sorted(required - covered - NOT_WRITES.keys()) == [], "write paths without an audit test"
    assert sorted((covered | NOT_WRITES.keys()) - required) == [], "entries for write paths that no longer exist"
    assert sorted(covered & NOT_WRITES.keys()) == []


def test_every_admin_that_writes_rows_audits_them(admin_user: User) -> None:
    request = RequestFactory().get("/admin/")
    request.user = admin_user
    for model, model_admin in admin.site._registry.items():
        writes = (
            model_admin.has_add_permission(request)
            or model_admin.has_change_permission(request, None)
            or model_admin.has_delete_permission(request, None)
        )
        assert not writes or isinstance(model_admin, AuditedModelAdmin), model


def test_the_completeness_check_notices_a_new_write(admin_user: User, monkeypatch: pytest.MonkeyPatch) -> None:
    def label_merge(*, label: Label, into: Label) -> None:
        raise NotImplementedError

    label_merge.__module__ = label_services.__name__
    monkeypatch.setattr(label_services, "label_merge", label_merge, raising=False)
    listed = _covered() | NOT_WRITES.keys()

    assert "service label_merge" in _service_keys() - listed
    assert {"POST chats:feedback_save", "GET api:export", "admin:password_change"} <= _url_keys()
    assert {"admin auth.user action delete_selected", "admin chats.label delete"} <= _admin_keys(admin_user)


def test_a_write_that_bypasses_the_audit_is_caught(world: World) -> None:
    with audited_writes_only():
        with audited(Label(name="kept"), actor=world.admin) as label:
            label.save()
        with (
            pytest.raises(AssertionError, match=r"chats\.Label written outside an audited write"),
            transaction.atomic(),
        ):
            Label.objects.create(name="unaudited")
        with pytest.raises(AssertionError, match=r"auth\.User written outside"), transaction.atomic():
            world.reviewer.groups.add(world.group)
        attempt = AccessAttempt.objects.create(username="rita", ip_address="192.0.2.1", failures_since_start=5)
        with pytest.raises(AssertionError, match=r"axes\.AccessAttempt written outside"), transaction.atomic():
            attempt.delete()

    assert AuditEvent.objects.filter(action="label.created", target_id=str(label.pk)).exists()


# --------------------------------------------------------------------------------------------------------------
# The feature files: each declares its own write paths, and tests exactly those


def test_no_two_feature_files_declare_the_same_write_path() -> None:
    declared_by: dict[str, list[str]] = {}
    for path in WRITE_PATHS:
        declared_by.setdefault(path.name, []).append(path.module)

    duplicates = {name: modules for name, modules in declared_by.items() if len(modules) > 1}

    assert duplicates == {}, "write path names declared more than once (name: the files that declare it)"


def _tested(module: ModuleType) -> list[WritePath]:
    """The write paths a module's tests are parametrized over."""
    found = []
    for function in vars(module).values():
        for mark in getattr(function, "pytestmark", []) if callable(function) else []:
            if mark.name == "parametrize" and mark.args and mark.args[0] == "path":
                values = [value for param in mark.args[1] for value in getattr(param, "values", (param,))]
                found += [value for value in values if isinstance(value, WritePath)]
    return found


def test_each_feature_file_tests_exactly_the_write_paths_it_declares() -> None:
    declared = {(path.module, path.name) for path in WRITE_PATHS}
    tested = {(module.__name__, path.name) for module in FEATURE_MODULES for path in _tested(module)}

    assert declared, "no write path declared: were the feature files found?"
    assert sorted(declared - tested) == [], "declared outside a feature file, or after its file's test"
    assert sorted(tested - declared) == [], "tested by a file that does not declare them"
