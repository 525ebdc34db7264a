"""The machinery of the permission matrix: who may do what on every URL the site serves, requested for real.

Every URL pattern (the review pages, the API, the admin with every registered model's views and its custom URLs,
sign-in and sign-out) is requested as each principal below, with GET for reads and the write methods for writes,
and the answer is compared with the expected row. The rows are not here: the test file of each chats module,
`tests/<package>/test_<module>_permissions.py`, declares those of the URLs the module serves as
`EXPECTED: dict[str, dict[str, Row]]` and runs them with `check_rows(world, EXPECTED)`;
`tests/security/test_permission_completeness.py` collects every such file and checks that every URL pattern has
exactly one row, in the file of the module that serves it.

The objects in the URLs belong to source A (a Record QA conversation with tool calls and injected artifacts, its
receipt, its key) and the feedback in them to the first reviewer, so that source B's key and the second reviewer
show what a stranger gets. Every principal goes through CSRF checks as a browser would (the client enforces them)
and sends a valid token, so that a refusal is a permission's and not CSRF's (a session's write without one is in
`tests/security/test_source_isolation.py`). Each request runs in a savepoint that is rolled back, so every principal
sees the same starting state; inside it, every refused write is checked to have changed nothing.

A new URL needs a row in its module's file and a target in `build_targets` below (the admin's model views get
theirs from the registry).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.cookies import SimpleCookie
from typing import Any

import pytest
from axes.models import AccessAttempt
from django.conf import settings
from django.contrib import admin
from django.contrib.auth.models import Group, User
from django.contrib.contenttypes.models import ContentType
from django.core.cache import cache
from django.db import transaction
from django.db.models import Model
from django.http import HttpResponseBase
from django.middleware.csrf import get_token
from django.test import Client, RequestFactory
from django.urls import URLPattern, URLResolver, get_resolver, resolve

from chats.models import (
    ApiKey,
    ApiKeyDailyUsage,
    AuditEvent,
    ContextArtifactId,
    Conversation,
    Dataset,
    DatasetItem,
    DatasetLine,
    ExportJob,
    ExportJobPart,
    Feedback,
    FeedbackLabel,
    IngestionReceipt,
    InjectedArtifact,
    JobState,
    Label,
    Lease,
    Message,
    ModelCall,
    Queue,
    QueueItem,
    QueueRule,
    QueueRuleRun,
    ReadEvent,
    ReceiptPayload,
    Resolution,
    Review,
    RubricVersion,
    SavedView,
    Source,
    ToolCall,
    TrendDay,
    TrendMember,
    TrendTally,
    ViewedVia,
)
from chats.services.audit import CommandActor
from chats.services.audit_verification import audit_chain_verify
from chats.services.datasets import dataset_snapshot_create
from chats.services.export_jobs import export_job_create
from chats.services.feedback import feedback_submit
from chats.services.queue_rules import rule_create
from chats.services.review import (
    item_assign,
    item_resolve,
    queue_add_conversations,
    queue_create,
    review_save_draft,
)
from chats.services.saved_views import saved_view_create
from chats.services.sources import api_key_create
from chats.services.trend_rollups import trends_rollup_all
from chats.throttling import ingest_quota_charge
from tests.factories import last_assistant, make_conversation, make_labels, make_record_qa

# --------------------------------------------------------------------------------------------------------------
# Principals and outcomes

PRINCIPALS = (
    "anonymous",
    "source_a_key",  # Authorization: Api-Key of source A, which owns every object in the URLs
    "source_b_key",  # Authorization: Api-Key of source B, a stranger to them
    "reviewer",  # group Reviewers, author of the feedback in the URLs
    "other_reviewer",  # group Reviewers too
    "auditor",  # group Auditors, marked staff as the README says, so the admin's view-only permissions apply
    "no_role",  # signed in, in no group
    "staff",  # is_staff with no group and no permission: reads the review pages, sees an empty admin
    "superuser",  # is_superuser and is_staff
)

Outcome = int | str
# A 302 to a sign-in page is told apart from other redirects (into a thread, back to a form): it is a refusal,
# except after signing out.
LOGIN = "302 to /accounts/login/"
ADMIN_LOGIN = "302 to /admin/login/"
# What a refused write may answer; inside the savepoint every one of them is checked to have changed nothing.
REFUSED = {LOGIN, ADMIN_LOGIN, 401, 403, 404, 405, 415}

Row = dict[str, Outcome]


def row(*outcomes: Outcome) -> Row:
    """One outcome per principal, in the order of PRINCIPALS."""
    return dict(zip(PRINCIPALS, outcomes, strict=True))


Expected = dict[str, dict[str, Row]]  # URL name (or, for the admin's unnamed patterns, the route) -> method -> row

# --------------------------------------------------------------------------------------------------------------
# The URL configuration, enumerated


def _join_route(prefix: str, route: str) -> str:
    # As ResolverMatch.route joins them, so that an enumerated route and a resolved one compare equal.
    return prefix + route.removeprefix("^") if prefix else route


def url_views(patterns: list[Any] | None = None, prefix: str = "", namespace: str = "") -> Iterator[tuple[str, Any]]:
    """The key of every URL pattern, the admin's included (its namespaced name, or its full route if unnamed), with
    the view that serves it."""
    for pattern in get_resolver().url_patterns if patterns is None else patterns:
        route = _join_route(prefix, str(pattern.pattern))
        if isinstance(pattern, URLResolver):
            inner = ":".join(part for part in (namespace, pattern.namespace or "") if part)
            yield from url_views(pattern.url_patterns, route, inner)
        else:
            assert isinstance(pattern, URLPattern)
            key = f"{namespace}:{pattern.name}" if namespace and pattern.name else pattern.name or route
            yield key, pattern.callback


def url_patterns() -> Iterator[str]:
    """The key of every URL pattern: the keys of EXPECTED."""
    return (key for key, _ in url_views())


def pattern_key(path: str) -> str:
    match = resolve(path.split("?", 1)[0])
    return match.view_name if match.url_name else match.route


# --------------------------------------------------------------------------------------------------------------
# What is requested


@dataclass(frozen=True)
class JsonBody:
    value: Any
    content_type: str = "application/json"


Body = dict[str, Any] | JsonBody


@dataclass(frozen=True)
class Target:
    """The concrete URLs of one pattern (each is requested: the export formats, say) and a body per method."""

    paths: tuple[str, ...]
    bodies: dict[str, Body] = field(default_factory=dict)


@dataclass(frozen=True)
class Principal:
    name: str
    headers: dict[str, str]
    cookies: dict[str, str]
    # One client each, reused: a client loads the middleware once (WhiteNoise scans every static file then).
    client: Client = field(init=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "client", Client(enforce_csrf_checks=True, headers=self.headers))


@dataclass
class World:
    source_a: Source
    source_b: Source
    key_a: ApiKey
    raw_key_a: str
    raw_key_b: str
    conversation: Conversation  # source A's
    conversation_b: Conversation  # source B's
    message: Message
    feedback: Feedback  # the reviewer's, on `message`
    label: Label
    reviewer: User
    other_reviewer: User
    leaver: User  # the user the admin's user pages are about
    queue: Queue  # worked by the two reviewers, created by the superuser (a lead)
    rule: QueueRule  # the queue's one rule, the superuser's
    rule_run: QueueRuleRun  # a done run of it
    export_job: ExportJob  # the reviewer's, done
    queue_item: QueueItem  # the conversation in the queue, resolved by the superuser
    spare_group: Group
    admin_objects: dict[str, Model]
    csrf_secret: str
    csrf_token: str
    principals: dict[str, Principal] = field(default_factory=dict)
    saved_view: SavedView | None = None  # the reviewer's own, personal


PASSWORD = "correct horse battery staple"
NEW_PASSWORD = "a Different passphrase 4 the matrix"
TINY_DOCUMENT = {"conversation_id": "matrix-1", "chat_history": [{"role": "user", "content": "Who are you?"}]}
QUESTIONS = [{"key": "correct", "prompt": "Correct?", "type": "categorical", "options": ["yes", "no"]}]
EXPORT_FORMATS = ("openai", "chat_document", "record_qa", "chat_history", "chat_graph", "chatgpt_export", "openwebui")


def _user(username: str, *, group: str | None = None, **flags: Any) -> User:
    user = User.objects.create_user(username=username, password=PASSWORD, **flags)
    if group:
        user.groups.add(Group.objects.get(name=group))
    return user


def build_world() -> World:
    source_a = Source.objects.create(name="source-a")
    source_b = Source.objects.create(name="source-b")
    key_a, raw_key_a = api_key_create(source=source_a, name="a")
    ingest_quota_charge(key_a, 1000)  # a day's usage of A's key
    _, raw_key_b = api_key_create(source=source_b, name="b")
    (label,) = make_labels("helpful")
    conversation = make_record_qa(source_a)
    conversation_b = make_conversation(source_b, n_messages=4)
    reviewer = _user("rita", group="Reviewers")
    other_reviewer = _user("oscar", group="Reviewers")
    message = last_assistant(conversation)
    feedback, _ = feedback_submit(
        author=reviewer, conversation=conversation, message=message, score=1, labels=[label], comment="Clear."
    )
    users = {
        "reviewer": reviewer,
        "other_reviewer": other_reviewer,
        "auditor": _user("aude", group="Auditors", is_staff=True),
        "no_role": _user("nobody"),
        "staff": _user("stephen", is_staff=True),
        "superuser": User.objects.create_superuser(username="root", password=PASSWORD),
    }
    leaver = _user("leaver")
    member = _user("mia")  # works the queue: holds its item and has a draft review of it
    queue = queue_create(
        actor=users["superuser"],
        name="Answers",
        questions=QUESTIONS,
        reviews_per_item=2,
        members=[reviewer, other_reviewer, member],
    )
    queue_add_conversations(
        actor=users["superuser"], queue=queue, conversations=Conversation.objects.filter(pk=conversation.pk)
    )
    queue_item = QueueItem.objects.get(queue=queue)
    rule = rule_create(actor=users["superuser"], queue=queue, name="Everything", filters={}, sample_rate="0.5")
    item_resolve(actor=users["superuser"], item=queue_item, answers={"correct": "yes"})
    item_assign(actor=users["superuser"], item=queue_item, reviewer=member)
    review_save_draft(reviewer=member, item=queue_item, answers={})
    dataset = dataset_snapshot_create(actor=users["superuser"], name="v1", queues=[queue])
    rule_run = QueueRuleRun.objects.create(rule=rule, requested_by=users["superuser"], state=JobState.DONE, added=0)
    export_job = export_job_create(actor=reviewer, requested_by=reviewer, format="openai")
    assert export_job.state == JobState.DONE
    spare_group = Group.objects.create(name="Spare role")
    saved_view = saved_view_create(actor=reviewer, name="Thumbs down", query="score=-1")
    model_call = ModelCall.objects.create(conversation=conversation, message=message, form="genai", provider="openai")
    trends_rollup_all()  # the Trends rollups, as the ingestions' post-commit step keeps them
    found: dict[str, Model | None] = {
        "auth.user": leaver,
        "auth.group": spare_group,
        "chats.source": source_a,
        "chats.apikey": key_a,
        "chats.conversation": conversation,
        "chats.message": message,
        "chats.toolcall": ToolCall.objects.filter(conversation=conversation).order_by("id").first(),
        "chats.injectedartifact": InjectedArtifact.objects.filter(conversation=conversation).order_by("id").first(),
        "chats.contextartifactid": ContextArtifactId.objects.filter(conversation=conversation).order_by("id").first(),
        "chats.ingestionreceipt": IngestionReceipt.objects.filter(source=source_a).order_by("id").first(),
        "chats.receiptpayload": ReceiptPayload.objects.filter(receipts__source=source_a).order_by("sha256").first(),
        "chats.apikeydailyusage": ApiKeyDailyUsage.objects.filter(api_key=key_a).first(),
        "chats.label": label,
        "chats.feedback": feedback,
        "chats.feedbacklabel": FeedbackLabel.objects.get(feedback=feedback),
        "chats.auditevent": AuditEvent.objects.order_by("id").first(),
        "chats.auditcheckpoint": audit_chain_verify(actor=CommandActor("verify_audit"))[1],
        "chats.readevent": ReadEvent.objects.create(
            conversation_uuid=conversation.uuid, viewer_name="rita", via=ViewedVia.PAGE
        ),
        "chats.queue": queue,
        "chats.queuerule": rule,
        "chats.rubricversion": RubricVersion.objects.get(queue=queue),
        "chats.queueitem": queue_item,
        "chats.lease": Lease.objects.get(item=queue_item),
        "chats.review": Review.objects.get(item=queue_item),
        "chats.resolution": Resolution.objects.get(item=queue_item),
        "chats.dataset": dataset,
        "chats.datasetitem": DatasetItem.objects.get(dataset=dataset),
        "chats.datasetline": DatasetLine.objects.filter(dataset=dataset).order_by("id").first(),
        "chats.exportjob": export_job,
        "chats.exportjobpart": ExportJobPart.objects.filter(job=export_job).first(),
        "chats.queuerulerun": rule_run,
        "chats.savedview": saved_view,
        "chats.modelcall": model_call,
        "chats.trendday": TrendDay.objects.order_by("id").first(),
        "chats.trendtally": TrendTally.objects.order_by("id").first(),
        "chats.trendmember": TrendMember.objects.order_by("conversation_id").first(),
        "axes.accessattempt": AccessAttempt.objects.create(
            username="oscar", ip_address="192.0.2.1", user_agent="a browser", failures_since_start=5
        ),
    }
    assert all(found.values()), found
    admin_objects = {name: obj for name, obj in found.items() if obj is not None}
    request = RequestFactory().get("/")
    csrf_token = get_token(request)
    world = World(
        source_a=source_a,
        source_b=source_b,
        key_a=key_a,
        raw_key_a=raw_key_a,
        raw_key_b=raw_key_b,
        conversation=conversation,
        conversation_b=conversation_b,
        message=message,
        feedback=feedback,
        label=label,
        reviewer=reviewer,
        other_reviewer=other_reviewer,
        leaver=leaver,
        queue=queue,
        rule=rule,
        rule_run=rule_run,
        export_job=export_job,
        queue_item=queue_item,
        spare_group=spare_group,
        admin_objects=admin_objects,
        csrf_secret=request.META["CSRF_COOKIE"],
        csrf_token=csrf_token,
        saved_view=saved_view,
    )
    # Everyone carries the CSRF cookie and token a browser would have, so that writes test permissions.
    csrf_cookie = {settings.CSRF_COOKIE_NAME: world.csrf_secret}
    csrf_header = {"X-CSRFToken": world.csrf_token}
    world.principals["anonymous"] = Principal("anonymous", csrf_header, csrf_cookie)
    for name, raw in (("source_a_key", raw_key_a), ("source_b_key", raw_key_b)):
        world.principals[name] = Principal(name, {**csrf_header, "Authorization": f"Api-Key {raw}"}, csrf_cookie)
    for name, user in users.items():
        client = Client()
        client.force_login(user)
        session = {settings.SESSION_COOKIE_NAME: client.cookies[settings.SESSION_COOKIE_NAME].value}
        world.principals[name] = Principal(name, csrf_header, {**csrf_cookie, **session})
    assert tuple(world.principals) == PRINCIPALS
    return world


def _admin_targets(world: World) -> dict[str, Target]:
    targets: dict[str, Target] = {}
    add_forms: dict[str, dict[str, Any]] = {
        "auth.user": {"username": "newcomer", "password1": NEW_PASSWORD, "password2": NEW_PASSWORD},
        "auth.group": {"name": "New role"},
        "chats.source": {"name": "source-new", "description": "", "is_active": "on"},
        "chats.label": {"name": "off-topic", "description": ""},
    }
    change_forms: dict[str, dict[str, Any]] = {
        "auth.user": {
            "username": "leaver",
            "is_active": "on",
            "date_joined_0": "2026-01-01",
            "date_joined_1": "00:00:00",
            "initial-date_joined_0": "2026-01-01",
            "initial-date_joined_1": "00:00:00",
        },
        "auth.group": {"name": "Spare role, renamed"},
        "chats.source": {"name": world.source_a.name, "description": "changed in the admin", "is_active": "on"},
        "chats.label": {"name": world.label.name, "description": "changed in the admin"},
        "chats.feedback": {"score": "-1", "comment": "changed in the admin", "correction": ""},
    }
    for model, model_admin in admin.site._registry.items():
        label = model._meta.label_lower
        app, name = label.split(".")
        obj = world.admin_objects[label]
        base = f"/admin/{app}/{name}/"
        one = f"{base}{obj.pk}/"
        # The admin's own action when it has one (revoking keys, unlocking a sign-in, pruning payloads; without
        # the step that confirms it), else deleting.
        own = [name for name in ("revoke_keys", "unlock", "prune_payloads") if name in (model_admin.actions or [])]
        action = own[0] if own else "delete_selected"
        targets[f"admin:{app}_{name}_changelist"] = Target(
            (base,), {"POST": {"action": action, "_selected_action": [str(obj.pk)], "index": "0", "post": "yes"}}
        )
        targets[f"admin:{app}_{name}_add"] = Target((f"{base}add/",), {"POST": add_forms.get(label, {})})
        targets[f"admin:{app}_{name}_change"] = Target((f"{one}change/",), {"POST": change_forms.get(label, {})})
        targets[f"admin:{app}_{name}_delete"] = Target((f"{one}delete/",), {"POST": {"post": "yes"}})
        targets[f"admin:{app}_{name}_history"] = Target((f"{one}history/",))
        targets[f"admin/{app}/{name}/<path:object_id>/"] = Target((one,))
    targets["admin:auth_user_password_change"] = Target(
        (f"/admin/auth/user/{world.leaver.pk}/password/",),
        {"POST": {"password1": NEW_PASSWORD, "password2": NEW_PASSWORD}},
    )
    receipt = world.admin_objects["chats.ingestionreceipt"]
    targets["admin:chats_ingestionreceipt_payload"] = Target((f"/admin/chats/ingestionreceipt/{receipt.pk}/payload/",))
    targets["admin:chats_source_create_key"] = Target(
        (f"/admin/chats/source/{world.source_a.pk}/create-key/",), {"POST": {"name": "from the matrix"}}
    )
    conversation_type = ContentType.objects.get_for_model(Conversation)
    targets.update(
        {
            "admin:index": Target(("/admin/",)),
            "admin:login": Target(("/admin/login/",), {"POST": {"username": "nobody-here", "password": "wrong"}}),
            "admin:logout": Target(("/admin/logout/",)),
            "admin:password_change": Target(
                ("/admin/password_change/",),
                {"POST": {"old_password": "wrong", "new_password1": NEW_PASSWORD, "new_password2": NEW_PASSWORD}},
            ),
            "admin:password_change_done": Target(("/admin/password_change/done/",)),
            "admin:autocomplete": Target(("/admin/autocomplete/",)),
            "admin:jsi18n": Target(("/admin/jsi18n/",)),
            "admin:view_on_site": Target((f"/admin/r/{conversation_type.pk}/{world.conversation.pk}/",)),
            "admin:app_list": Target(("/admin/chats/",)),
            "admin/(?P<url>.*)$": Target(("/admin/no-such-page/",)),
        }
    )
    return targets


def build_targets(world: World) -> dict[str, Target]:
    conversation = f"/conversations/{world.conversation.uuid}/"
    feedback_api = f"/api/v1/feedback/{world.feedback.uuid}/"
    conversation_api = f"/api/v1/conversations/{world.conversation.uuid}/"
    queue_api = f"/api/v1/queues/{world.queue.pk}/"
    item_api = f"{queue_api}items/{world.queue_item.pk}/"
    queue_page = f"/queues/{world.queue.pk}/"
    item_page = f"{queue_page}items/{world.queue_item.pk}/"
    dataset_api = f"/api/v1/datasets/{world.admin_objects['chats.dataset'].pk}/"
    receipt = world.admin_objects["chats.ingestionreceipt"]
    artifact = world.admin_objects["chats.injectedartifact"]
    assert isinstance(receipt, IngestionReceipt) and isinstance(artifact, InjectedArtifact)
    assert world.saved_view is not None
    saved_view_page = f"/views/{world.saved_view.uuid}/"
    saved_view_api = f"/api/v1/views/{world.saved_view.uuid}/"
    targets = {
        "chats:home": Target(("/",)),
        "chats:trends": Target(("/trends/",)),
        "chats:conversation_list": Target(("/conversations/",)),
        "chats:next_unreviewed": Target(("/conversations/next/",)),
        "chats:thread": Target((conversation,)),
        "chats:thread_messages": Target((f"{conversation}messages/?after=0",)),
        "chats:artifact_list": Target(("/artifacts/",)),
        "chats:artifact_detail": Target((f"/artifacts/{artifact.artifact_id}/",)),
        "chats:feedback_form": Target((f"{conversation}feedback/form/?message={world.message.pk}",)),
        "chats:feedback_save": Target(
            (f"{conversation}feedback/",),
            {
                "POST": {
                    "feedback": str(world.feedback.uuid),
                    "message": str(world.message.pk),
                    "score": "-1",
                    "comment": "changed on the page",
                }
            },
        ),
        "chats:feedback_delete": Target((f"{conversation}feedback/{world.feedback.uuid}/delete/",)),
        "chats:review_status": Target((f"{conversation}status/",), {"POST": {"status": "reviewed"}}),
        "chats:active_branch": Target((f"{conversation}branch/",), {"POST": {"message": str(world.message.pk)}}),
        "chats:audit_list": Target(("/audit/", f"/audit/?conversation={world.conversation.uuid}")),
        "chats:audit_event": Target((f"/audit/{AuditEvent.objects.order_by('id').values_list('id', flat=True)[0]}/",)),
        "chats:audit_export": Target(
            ("/audit/export/?format=ndjson", "/audit/export/?format=csv&action=feedback.created")
        ),
        "chats:queue_list": Target(("/queues/",)),
        "chats:queue_detail": Target((queue_page,)),
        "chats:queue_item": Target((item_page,)),
        "chats:queue_adjudicate": Target((f"{queue_page}adjudicate/",)),
        "chats:queue_create": Target(
            ("/queues/new/",),
            {
                "POST": {
                    "name": "New",
                    "reviews_per_item": "1",
                    "rubric-TOTAL_FORMS": "1",
                    "rubric-INITIAL_FORMS": "0",
                    "rubric-0-key": "correct",
                    "rubric-0-prompt": "Correct?",
                    "rubric-0-type": "boolean",
                    "rubric-0-target": "conversation",
                }
            },
        ),
        "chats:queue_update": Target(
            (f"{queue_page}edit/",),
            {
                "POST": {
                    "name": "Answers, renamed",
                    "reviews_per_item": "2",
                    "members": ["rita", "oscar", "mia"],
                    "rubric-TOTAL_FORMS": "1",
                    "rubric-INITIAL_FORMS": "0",
                    "rubric-0-key": "correct",
                    "rubric-0-prompt": "Correct?",
                    "rubric-0-type": "categorical",
                    "rubric-0-options": "yes\nno",
                    "rubric-0-target": "conversation",
                }
            },
        ),
        "chats:queue_assign": Target(
            (f"{queue_page}assign/",),
            {"POST": {"item": str(world.queue_item.pk), "reviewer": "rita", "action": "assign"}},
        ),
        "chats:item_resolve": Target((f"{item_page}resolve/",), {"POST": {"q.correct": "no"}}),
        "chats:queue_add": Target(
            ("/conversations/add-to-queue/",),
            {"POST": {"queue": str(world.queue.pk), "scope": "selected", "selected": str(world.conversation_b.uuid)}},
        ),
        "chats:queue_next": Target((f"{queue_page}next/",)),
        "chats:export_jobs": Target(("/exports/",)),
        "chats:export_job_create": Target(("/exports/new/",), {"POST": {"format": "training", "score": "1"}}),
        "chats:saved_view_list": Target(("/views/",)),
        "chats:saved_view_menu": Target(("/views/menu/",)),
        "chats:saved_view_create": Target(("/views/new/",), {"POST": {"name": "From the matrix", "query": "score=-1"}}),
        "chats:saved_view_share": Target((f"{saved_view_page}share/",), {"POST": {"shared": "true"}}),
        "chats:saved_view_delete": Target((f"{saved_view_page}delete/",), {"POST": {}}),
        "api:saved-view-list": Target(
            ("/api/v1/views/",), {"POST": JsonBody({"name": "From the matrix", "query": "status=unreviewed"})}
        ),
        "api:saved-view-detail": Target(
            (saved_view_api,),
            {
                "PATCH": JsonBody({"name": "Renamed"}),
                "PUT": JsonBody({"name": "Replaced", "query": "score=1"}),
                "DELETE": JsonBody({}),
            },
        ),
        "chats:review_draft": Target((f"{item_page}draft/",), {"POST": {"q.correct": "no"}}),
        "chats:review_submit": Target((f"{item_page}submit/",), {"POST": {"q.correct": "no"}}),
        "login": Target(("/accounts/login/",), {"POST": {"username": "nobody-here", "password": "wrong"}}),
        "logout": Target(("/accounts/logout/",)),
        "api:ingest": Target(("/api/v1/ingest/",), {"POST": JsonBody(TINY_DOCUMENT)}),
        "api:ingest-bulk": Target(("/api/v1/ingest/bulk/",), {"POST": JsonBody([TINY_DOCUMENT])}),
        "api:otel-traces": Target(("/api/v1/otel/v1/traces",), {"POST": JsonBody({"resourceSpans": []})}),
        "api:receipt": Target((f"/api/v1/receipts/{receipt.uuid}/",), {"POST": JsonBody({})}),
        "api:receipt-payload": Target((f"/api/v1/receipts/{receipt.uuid}/payload/",), {"POST": JsonBody({})}),
        "api:artifacts": Target(("/api/v1/artifacts/",), {"POST": JsonBody({})}),
        "api:artifact-detail": Target((f"/api/v1/artifacts/{artifact.artifact_id}/",), {"POST": JsonBody({})}),
        "api:artifacts-export": Target(("/api/v1/export/artifacts/",), {"POST": JsonBody({})}),
        "api:labels": Target(("/api/v1/labels/",), {"POST": JsonBody({"name": "new"})}),
        "api:export": Target(
            tuple(f"/api/v1/export/?format={fmt}" for fmt in (*EXPORT_FORMATS, "training")), {"POST": JsonBody({})}
        ),
        "api:schema": Target(("/api/v1/schema/",), {"POST": JsonBody({})}),
        "api:health": Target(("/api/v1/health/",), {"POST": JsonBody({})}),
        "api:docs": Target(("/api/v1/docs/",), {"POST": JsonBody({})}),
        "api:conversation-list": Target(("/api/v1/conversations/",), {"POST": JsonBody({})}),
        "api:conversation-detail": Target(
            (conversation_api,), {"PUT": JsonBody({"title": "x"}), "PATCH": JsonBody({"title": "x"})}
        ),
        "api:conversation-export": Target(
            tuple(f"{conversation_api}export/?format={fmt}" for fmt in EXPORT_FORMATS), {"POST": JsonBody({})}
        ),
        "api:feedback-list": Target(
            ("/api/v1/feedback/",),
            {"POST": JsonBody({"conversation": str(world.conversation.uuid), "score": 1, "comment": "Overall fine."})},
        ),
        "api:feedback-detail": Target(
            (feedback_api,), {"PUT": JsonBody({"comment": "changed"}), "PATCH": JsonBody({"comment": "changed"})}
        ),
        "api:queue-list": Target(("/api/v1/queues/",), {"POST": JsonBody({"name": "New", "questions": QUESTIONS})}),
        "api:queue-items": Target(
            (f"{queue_api}items/",), {"POST": JsonBody({"conversations": [str(world.conversation_b.uuid)]})}
        ),
        "api:queue-next": Target((f"{queue_api}next/",), {"POST": JsonBody({})}),
        "api:queue-detail": Target((queue_api,), {"PATCH": JsonBody({"reviews_per_item": 1, "lease_minutes": 45})}),
        "api:queue-progress": Target((f"{queue_api}progress/",), {"POST": JsonBody({})}),
        "api:queue-item-assign": Target((f"{item_api}assign/",), {"POST": JsonBody({"reviewer": "rita"})}),
        "api:queue-item-release": Target((f"{item_api}release/",), {"POST": JsonBody({"reviewer": "mia"})}),
        "api:queue-item-draft": Target((f"{item_api}draft/",), {"PUT": JsonBody({"answers": {"correct": "no"}})}),
        "api:queue-agreement": Target((f"{queue_api}agreement/",), {"POST": JsonBody({})}),
        "api:queue-rules": Target(
            (f"{queue_api}rules/",), {"POST": JsonBody({"name": "Tools", "filters": {"has_tool_calls": "true"}})}
        ),
        "api:queue-rule": Target(
            (f"{queue_api}rules/{world.rule.pk}/",), {"PATCH": JsonBody({"sample_rate": 0.25}), "DELETE": JsonBody({})}
        ),
        "api:queue-rule-run": Target((f"{queue_api}rules/{world.rule.pk}/run/",), {"POST": JsonBody({})}),
        "api:queue-rule-run-detail": Target(
            (f"{queue_api}rules/{world.rule.pk}/runs/{world.rule_run.pk}/",), {"POST": JsonBody({})}
        ),
        "api:export-jobs": Target(("/api/v1/export/jobs/",), {"POST": JsonBody({"format": "openai"})}),
        "api:export-job-detail": Target((f"/api/v1/export/jobs/{world.export_job.uuid}/",), {"POST": JsonBody({})}),
        "api:export-job-download": Target(
            (f"/api/v1/export/jobs/{world.export_job.uuid}/download/",), {"POST": JsonBody({})}
        ),
        "api:queue-item-reviews": Target((f"{item_api}reviews/",), {"POST": JsonBody({"answers": {"correct": "no"}})}),
        "api:queue-item-resolution": Target(
            (f"{item_api}resolution/",), {"POST": JsonBody({"answers": {"correct": "no"}})}
        ),
        "api:dataset-list": Target(
            ("/api/v1/datasets/",), {"POST": JsonBody({"name": "v2", "queues": [world.queue.pk]})}
        ),
        "api:dataset-detail": Target((dataset_api,), {"POST": JsonBody({})}),
        "api:dataset-export": Target(
            (f"{dataset_api}export/?format=training", f"{dataset_api}export/?format=gold"), {"POST": JsonBody({})}
        ),
    }
    targets.update(_admin_targets(world))
    return targets


# --------------------------------------------------------------------------------------------------------------
# Requesting


def state() -> dict[str, Any]:
    """What a refused write must leave as it was (not the audit log, nor when a key was last used)."""
    return {
        "sources": list(Source.objects.order_by("pk").values_list("pk", "name", "description", "is_active")),
        "keys": list(ApiKey.objects.order_by("pk").values_list("pk", "name", "revoked_at", "expires_at")),
        "conversations": list(
            Conversation.objects.order_by("pk").values_list(
                "pk", "title", "review_status", "active_leaf_key", "message_count", "feedback_count"
            )
        ),
        "messages": list(Message.objects.order_by("pk").values_list("pk", "on_active_path")),
        "feedback": list(
            Feedback.objects.order_by("pk").values_list("pk", "author", "score", "comment", "correction", "updated_at")
        ),
        "feedback labels": list(FeedbackLabel.objects.order_by("pk").values_list("pk", "feedback", "label")),
        "labels": list(Label.objects.order_by("pk").values_list("pk", "name", "description")),
        "receipts": IngestionReceipt.objects.count(),
        "queues": list(Queue.objects.order_by("pk").values_list("pk", "name", "reviews_per_item", "lease_minutes")),
        "queue rules": list(
            QueueRule.objects.order_by("pk").values_list("pk", "queue", "name", "filters", "sample_rate", "enabled")
        ),
        "queue items": list(
            QueueItem.objects.order_by("pk").values_list("pk", "queue", "conversation", "submitted_count")
        ),
        "leases": list(Lease.objects.order_by("pk").values_list("pk", "item", "reviewer", "expires_at")),
        "reviews": list(Review.objects.order_by("pk").values_list("pk", "reviewer", "state", "answers")),
        "resolutions": list(Resolution.objects.order_by("pk").values_list("pk", "lead", "answers", "correction")),
        "datasets": list(Dataset.objects.order_by("pk").values_list("pk", "name", "description")),
        "dataset items": list(DatasetItem.objects.order_by("pk").values_list("pk", "dataset", "answers")),
        "users": list(
            User.objects.order_by("pk").values_list(
                "pk", "username", "password", "is_active", "is_staff", "is_superuser"
            )
        ),
        "groups": list(Group.objects.order_by("pk").values_list("pk", "name")),
        "memberships": list(User.groups.through.objects.order_by("pk").values_list("user", "group")),
        "role permissions": Group.permissions.through.objects.count(),
        "sign-in attempts": list(
            AccessAttempt.objects.order_by("pk").values_list("pk", "username", "ip_address", "failures_since_start")
        ),
        "saved views": list(SavedView.objects.order_by("pk").values_list("pk", "owner", "name", "query", "shared")),
    }


def outcome_of(response: HttpResponseBase) -> Outcome:
    if response.streaming:
        b"".join(response.streaming_content)  # type: ignore[attr-defined]  # a failure while streaming shows here
    if response.status_code == 302:
        location = response["Location"]
        if location.startswith("/accounts/login/"):
            return LOGIN
        if location.startswith("/admin/login/"):
            return ADMIN_LOGIN
    return response.status_code


def send(principal: Principal, method: str, path: str, body: Body | None) -> HttpResponseBase:
    client = principal.client
    client.cookies = SimpleCookie(principal.cookies)  # as they were: signing out, say, does not carry over
    if method == "GET":
        return client.get(path)
    if isinstance(body, JsonBody):
        return client.generic(method, path, data=json.dumps(body.value), content_type=body.content_type)
    if method == "POST":
        return client.post(path, body or {})
    return client.generic(method, path)


def attempt(
    principal: Principal, method: str, path: str, body: Body | None, before: dict[str, Any], expected: Expected
) -> str | None:
    """Request in a savepoint that is rolled back; a description of what went wrong, or None."""
    cache.clear()  # throttles count in the cache: each request starts with none counted
    changed = False
    try:
        with transaction.atomic():
            try:
                result = outcome_of(send(principal, method, path, body))
                if method != "GET" and result in REFUSED:
                    changed = state() != before
            finally:
                transaction.set_rollback(True)
    except Exception as error:
        result = f"raised {error!r}"
    wanted = expected[pattern_key(path)][method][principal.name]
    problems = []
    if result != wanted:
        problems.append(f"expected {wanted}, got {result}")
    if changed:
        problems.append(f"refused with {result} but changed the database")
    return f"{method} {path} as {principal.name}: {'; '.join(problems)}" if problems else None


def check_rows(world: World, expected: Expected) -> None:
    """Request every URL of `expected` with each of its methods as every principal; fail with every mismatch."""
    targets = build_targets(world)
    assert set(expected) <= set(targets), f"rows without a target in build_targets: {set(expected) - set(targets)}"
    before = state()

    problems = [
        problem
        for key, methods in expected.items()
        for method in methods
        for path in targets[key].paths
        for principal in world.principals.values()
        if (problem := attempt(principal, method, path, targets[key].bodies.get(method), before, expected))
    ]

    assert problems == [], "\n".join(problems)
    assert state() == before


@pytest.fixture
def world(db: None) -> World:
    """Import it (with `# noqa: F401`, and `# noqa: F811` where a test takes it) into a test module to use it."""
    return build_world()
