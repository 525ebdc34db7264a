"""Who may do what on every URL the site serves: a permission matrix generated from the URL configuration.

Every URL pattern (the review pages, the API, the admin with every registered model's views and its custom URLs,
sign-in and sign-out) is requested as each principal below, with GET for reads and the write methods for writes,
and the answer is compared with EXPECTED. A URL pattern without an entry in EXPECTED fails
`test_every_url_pattern_has_an_expected_row`, so a new page or endpoint cannot ship without saying who may use it.

The objects in the URLs belong to source A (a Record QA conversation with tool calls and injected artifacts, its
receipt, its key) and the feedback in them to the first reviewer, so that source B's key and the second reviewer
show what a stranger gets. Every principal goes through CSRF checks as a browser would (the client enforces them)
and sends a valid token, so that a refusal is a permission's and not CSRF's; a test below sends a session's write
without one. Each request runs in a savepoint that is rolled back, so every principal sees the same starting state;
inside it, every refused write is checked to have changed nothing.

The tests after the matrix check what a status code cannot show: that a source's key lists and exports only its
own source's conversations, feedback and receipts, and that ingestion refuses people.
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
    ConversationView,
    Dataset,
    DatasetItem,
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
    Queue,
    QueueItem,
    QueueRule,
    QueueRuleRun,
    ReceiptPayload,
    Resolution,
    Review,
    RubricVersion,
    Source,
    ToolCall,
    ViewedVia,
)
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
from chats.services.sources import api_key_create
from chats.throttling import ingest_quota_charge
from tests.factories import last_assistant, make_conversation, make_labels, make_record_qa

pytestmark = pytest.mark.django_db

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


# --------------------------------------------------------------------------------------------------------------
# The expected table: URL name (or, for the admin's unnamed patterns, the route) -> method -> principal -> outcome

# fmt: off
EXPECTED: dict[str, dict[str, Row]] = {
    # ---- Review pages. An API key means nothing to a page: key holders are anonymous there and, like anonymous
    # visitors, are sent to sign in. Reading needs Reviewers, Auditors or staff (no role: 403); writing needs
    # Reviewers or a superuser, so auditors and plain staff get 403. Write URLs refuse GET (405) before anything.
    # A reviewer changes and deletes only their own feedback (the other reviewer: 403); superusers manage all.
    #                                      anonymous    source_a_key source_b_key reviewer     other_rev.   auditor      no_role      staff        superuser
    "chats:home":            {"GET":   row(LOGIN,       LOGIN,       LOGIN,       200,         200,         200,         403,         200,         200)},
    "chats:conversation_list": {"GET": row(LOGIN,       LOGIN,       LOGIN,       200,         200,         200,         403,         200,         200)},
    # The next unreviewed conversation: a redirect into its thread.
    "chats:next_unreviewed": {"GET":   row(LOGIN,       LOGIN,       LOGIN,       302,         302,         302,         403,         302,         302)},
    "chats:thread":          {"GET":   row(LOGIN,       LOGIN,       LOGIN,       200,         200,         200,         403,         200,         200)},
    # A window of a thread (the page's script loads it): read like the thread.
    "chats:thread_messages": {"GET":   row(LOGIN,       LOGIN,       LOGIN,       200,         200,         200,         403,         200,         200)},
    # Artifacts: read like conversations.
    "chats:artifact_list":   {"GET":   row(LOGIN,       LOGIN,       LOGIN,       200,         200,         200,         403,         200,         200)},
    "chats:artifact_detail": {"GET":   row(LOGIN,       LOGIN,       LOGIN,       200,         200,         200,         403,         200,         200)},
    # The feedback form is only served to those who may post it.
    "chats:feedback_form":   {"GET":   row(LOGIN,       LOGIN,       LOGIN,       200,         200,         403,         403,         403,         200)},
    # Changing the first reviewer's feedback (a plain form post answers with a redirect back to the thread).
    "chats:feedback_save": {
        "GET":                         row(405,         405,         405,         405,         405,         405,         405,         405,         405),
        "POST":                        row(LOGIN,       LOGIN,       LOGIN,       302,         403,         403,         403,         403,         302),
    },
    "chats:feedback_delete": {
        "GET":                         row(405,         405,         405,         405,         405,         405,         405,         405,         405),
        "POST":                        row(LOGIN,       LOGIN,       LOGIN,       302,         403,         403,         403,         403,         302),
    },
    # Any reviewer may move a conversation through the review queue or choose its active branch.
    "chats:review_status": {
        "GET":                         row(405,         405,         405,         405,         405,         405,         405,         405,         405),
        "POST":                        row(LOGIN,       LOGIN,       LOGIN,       302,         302,         403,         403,         403,         302),
    },
    "chats:active_branch": {
        "GET":                         row(405,         405,         405,         405,         405,         405,         405,         405,         405),
        "POST":                        row(LOGIN,       LOGIN,       LOGIN,       302,         302,         403,         403,         403,         302),
    },
    # The audit section: Auditors, staff and superusers (Roles.can_audit); reviewers and people with no role get
    # 403; an API key is anonymous here (there is no audit API). The export is audited ("audit.exported").
    "chats:audit_list":      {"GET":   row(LOGIN,       LOGIN,       LOGIN,       403,         403,         200,         403,         200,         200)},
    "chats:audit_event":     {"GET":   row(LOGIN,       LOGIN,       LOGIN,       403,         403,         200,         403,         200,         200)},
    "chats:audit_export":    {"GET":   row(LOGIN,       LOGIN,       LOGIN,       403,         403,         200,         403,         200,         200)},

    # Export jobs: every reading role lists their own and runs an export as a job (a redirect to the list).
    "chats:export_jobs":     {"GET":   row(LOGIN,       LOGIN,       LOGIN,       200,         200,         200,         403,         200,         200)},
    "chats:export_job_create": {
        "GET":                         row(405,         405,         405,         405,         405,         405,         405,         405,         405),
        "POST":                        row(LOGIN,       LOGIN,       LOGIN,       302,         302,         302,         403,         302,         302),
    },

    # ---- Team review pages. Reading needs a reading role (no role: 403); the queue's page, its items and the
    # review page are seen by its members (the two reviewers), by those who audit (auditor, staff) and by leads
    # (the superuser). Leads create and edit queues, assign items, resolve them and add conversations (everyone
    # else: 403). Only members lease and review (the others, a lead too: 403, the service's NotAllowed). The
    # adjudication page is for leads and those who audit.
    #                                      anonymous    source_a_key source_b_key reviewer     other_rev.   auditor      no_role      staff        superuser
    "chats:queue_list":      {"GET":   row(LOGIN,       LOGIN,       LOGIN,       200,         200,         200,         403,         200,         200)},
    "chats:queue_detail":    {"GET":   row(LOGIN,       LOGIN,       LOGIN,       200,         200,         200,         403,         200,         200)},
    "chats:queue_item":      {"GET":   row(LOGIN,       LOGIN,       LOGIN,       200,         200,         200,         403,         200,         200)},
    "chats:queue_adjudicate": {"GET":  row(LOGIN,       LOGIN,       LOGIN,       403,         403,         200,         403,         200,         200)},
    "chats:queue_create": {
        "GET":                         row(405,         405,         405,         405,         405,         405,         405,         405,         405),
        "POST":                        row(LOGIN,       LOGIN,       LOGIN,       403,         403,         403,         403,         403,         302),
    },
    "chats:queue_update": {
        "GET":                         row(405,         405,         405,         405,         405,         405,         405,         405,         405),
        "POST":                        row(LOGIN,       LOGIN,       LOGIN,       403,         403,         403,         403,         403,         302),
    },
    "chats:queue_assign": {
        "GET":                         row(405,         405,         405,         405,         405,         405,         405,         405,         405),
        "POST":                        row(LOGIN,       LOGIN,       LOGIN,       403,         403,         403,         403,         403,         302),
    },
    "chats:item_resolve": {
        "GET":                         row(405,         405,         405,         405,         405,         405,         405,         405,         405),
        "POST":                        row(LOGIN,       LOGIN,       LOGIN,       403,         403,         403,         403,         403,         302),
    },
    "chats:queue_add": {
        "GET":                         row(405,         405,         405,         405,         405,         405,         405,         405,         405),
        "POST":                        row(LOGIN,       LOGIN,       LOGIN,       403,         403,         403,         403,         403,         302),
    },
    "chats:queue_next": {
        "GET":                         row(405,         405,         405,         405,         405,         405,         405,         405,         405),
        "POST":                        row(LOGIN,       LOGIN,       LOGIN,       302,         302,         403,         403,         403,         403),
    },
    "chats:review_draft": {
        "GET":                         row(405,         405,         405,         405,         405,         405,         405,         405,         405),
        "POST":                        row(LOGIN,       LOGIN,       LOGIN,       302,         302,         403,         403,         403,         403),
    },
    "chats:review_submit": {
        "GET":                         row(405,         405,         405,         405,         405,         405,         405,         405,         405),
        "POST":                        row(LOGIN,       LOGIN,       LOGIN,       302,         302,         403,         403,         403,         403),
    },

    # ---- Sign-in and sign-out are open to everyone. The sign-in form is shown to all (already signed in too);
    # a wrong password answers the form again. Signing out is a POST (GET: 405) that lands on the sign-in page.
    "login": {
        "GET":                         row(200,         200,         200,         200,         200,         200,         200,         200,         200),
        "POST":                        row(200,         200,         200,         200,         200,         200,         200,         200,         200),
    },
    "logout": {
        "GET":                         row(405,         405,         405,         405,         405,         405,         405,         405,         405),
        "POST":                        row(LOGIN,       LOGIN,       LOGIN,       LOGIN,       LOGIN,       LOGIN,       LOGIN,       LOGIN,       LOGIN),
    },

    # ---- Ingestion: only a source's key, which writes into its own source (B sending the same document makes
    # B's own conversation: 201, nothing of A's is touched). No credentials: 401. A person, whatever their role,
    # is not a source: with a personal token 403 (see the test below); with a session 401, since these endpoints
    # read only the Api-Key header, whatever the role.
    "api:ingest": {
        "GET":                         row(401,         405,         405,         401,         401,         401,         401,         401,         401),
        "POST":                        row(401,         201,         201,         401,         401,         401,         401,         401,         401),
    },
    "api:ingest-bulk": {
        "GET":                         row(401,         405,         405,         401,         401,         401,         401,         401,         401),
        "POST":                        row(401,         200,         200,         401,         401,         401,         401,         401,         401),
    },
    # A receipt is shown to the source it belongs to; to another source's key it does not exist (404); a session
    # is not read here (401).
    "api:receipt": {
        "GET":                         row(401,         200,         404,         401,         401,         401,         401,         401,         401),
        "POST":                        row(401,         405,         405,         401,         401,         401,         401,         401,         401),
    },
    "api:receipt-payload": {
        "GET":                         row(401,         200,         404,         401,         401,         401,         401,         401,         401),
        "POST":                        row(401,         405,         405,         401,         401,         401,         401,         401,         401),
    },

    # ---- Reading API: a source's key reads its own source's conversations (B's lists and exports are scoped to
    # B: 200 without A's rows, see the tests below), people read with Reviewers, Auditors or staff (no role: 403),
    # no credentials: 401. Read-only endpoints refuse the write methods with 405 once the caller may read.
    "api:artifacts": {
        "GET":                         row(401,         200,         200,         200,         200,         200,         403,         200,         200),
        "POST":                        row(401,         405,         405,         405,         405,         405,         403,         405,         405),
    },
    # One artifact of A's conversation: source B's key sees none of A's conversations, so for it the artifact
    # does not exist (404).
    "api:artifact-detail": {
        "GET":                         row(401,         200,         404,         200,         200,         200,         403,         200,         200),
        "POST":                        row(401,         405,         405,         405,         405,         405,         403,         405,         405),
    },
    # The artifact list as NDJSON (B's is scoped to B, see the tests below); audited.
    "api:artifacts-export": {
        "GET":                         row(401,         200,         200,         200,         200,         200,         403,         200,         200),
        "POST":                        row(401,         405,         405,         405,         405,         405,         403,         405,         405),
    },
    "api:labels": {
        "GET":                         row(401,         200,         200,         200,         200,         200,         403,         200,         200),
        "POST":                        row(401,         405,         405,         405,         405,         405,         403,         405,         405),
    },
    # Bulk export in every format and as training JSONL.
    "api:export": {
        "GET":                         row(401,         200,         200,         200,         200,         200,         403,         200,         200),
        "POST":                        row(401,         405,         405,         405,         405,         405,         403,         405,         405),
    },
    # Export jobs: whoever may export asks for one (202; a source's key over its own source) and lists their own.
    # The job in the URLs is the first reviewer's: to everyone else, whatever their role, it does not exist (404).
    "api:export-jobs": {
        "GET":                         row(401,         200,         200,         200,         200,         200,         403,         200,         200),
        "POST":                        row(401,         202,         202,         202,         202,         202,         403,         202,         202),
    },
    "api:export-job-detail": {
        "GET":                         row(401,         404,         404,         200,         404,         404,         403,         404,         404),
        "POST":                        row(401,         405,         405,         405,         405,         405,         403,         405,         405),
    },
    "api:export-job-download": {
        "GET":                         row(401,         404,         404,         200,         404,         404,         403,         404,         404),
        "POST":                        row(401,         405,         405,         405,         405,         405,         403,         405,         405),
    },
    # The OpenAPI schema and its docs describe the API and hold no data: public, as drf-spectacular serves them
    # by default (SERVE_PERMISSIONS: AllowAny).
    "api:schema": {
        "GET":                         row(200,         200,         200,         200,         200,         200,         200,         200,         200),
        "POST":                        row(405,         405,         405,         405,         405,         405,         405,         405,         405),
    },
    "api:docs": {
        "GET":                         row(200,         200,         200,         200,         200,         200,         200,         200,         200),
        "POST":                        row(405,         405,         405,         405,         405,         405,         405,         405,         405),
    },
    "api:conversation-list": {
        "GET":                         row(401,         200,         200,         200,         200,         200,         403,         200,         200),
        "POST":                        row(401,         405,         405,         405,         405,         405,         403,         405,         405),
    },
    # A's conversation: source B's key gets 404, as if it did not exist. The method check (405) comes after the
    # permission check and before the lookup, so B's key gets 405 on writes.
    "api:conversation-detail": {
        "GET":                         row(401,         200,         404,         200,         200,         200,         403,         200,         200),
        "PUT":                         row(401,         405,         405,         405,         405,         405,         403,         405,         405),
        "PATCH":                       row(401,         405,         405,         405,         405,         405,         403,         405,         405),
        "DELETE":                      row(401,         405,         405,         405,         405,         405,         403,         405,         405),
    },
    # The conversation's export in each of the six formats.
    "api:conversation-export": {
        "GET":                         row(401,         200,         404,         200,         200,         200,         403,         200,         200),
        "POST":                        row(401,         405,         405,         405,         405,         405,         403,         405,         405),
    },

    # ---- Feedback API: every reader reads (scoped for keys: B does not see feedback on A's conversation, 404);
    # writing needs Reviewers or a superuser, so keys, auditors, staff and no role get 403 before any lookup.
    # POST gives conversation-level feedback (the first reviewer has none yet): 201 for each writer.
    "api:feedback-list": {
        "GET":                         row(401,         200,         200,         200,         200,         200,         403,         200,         200),
        "POST":                        row(401,         403,         403,         201,         201,         403,         403,         403,         201),
    },
    # The first reviewer's feedback: the other reviewer may not change (403) or delete (403) it. PUT is not
    # offered (405) once the write permission passed. A superuser manages anyone's feedback, as on the pages and in
    # the admin.
    "api:feedback-detail": {
        "GET":                         row(401,         200,         404,         200,         200,         200,         403,         200,         200),
        "PUT":                         row(401,         403,         403,         405,         405,         403,         403,         403,         405),
        "PATCH":                       row(401,         403,         403,         200,         403,         403,         403,         403,         200),
        "DELETE":                      row(401,         403,         403,         204,         403,         403,         403,         403,         204),
    },

    # ---- Team review API: people only (a source's key: 403). Reading needs a reading role (no role: 403); a
    # reviewer sees the queues they work, auditors and staff (who audit) and superusers see all. Leads (here the
    # superuser) create queues, add conversations and resolve; members of the queue (the two reviewers) lease
    # items and submit reviews, and nobody else does (403), not even a lead who is not a member. A view without
    # GET answers 405 once the caller passed the role check.
    #                                      anonymous    source_a_key source_b_key reviewer     other_rev.   auditor      no_role      staff        superuser
    "api:queue-list": {
        "GET":                         row(401,         403,         403,         200,         200,         200,         403,         200,         200),
        "POST":                        row(401,         403,         403,         403,         403,         403,         403,         403,         201),
    },
    "api:queue-items": {
        "GET":                         row(401,         403,         403,         200,         200,         200,         403,         200,         200),
        "POST":                        row(401,         403,         403,         403,         403,         403,         403,         403,         200),
    },
    # Agreement figures would tell a reviewer the others' answers: leads and those who audit only.
    "api:queue-agreement": {
        "GET":                         row(401,         403,         403,         403,         403,         200,         403,         200,         200),
        "POST":                        row(401,         403,         403,         405,         405,         405,         403,         405,         405),
    },
    "api:queue-next": {
        "GET":                         row(401,         403,         403,         405,         405,         405,         403,         405,         405),
        "POST":                        row(401,         403,         403,         200,         200,         403,         403,         403,         403),
    },
    # Blind: the reviewers see only their own review until they submitted (still 200); see tests/api.
    "api:queue-item-reviews": {
        "GET":                         row(401,         403,         403,         200,         200,         200,         403,         200,         200),
        "POST":                        row(401,         403,         403,         201,         201,         403,         403,         403,         403),
    },
    # A queue's rules: leads and those who audit read them (reviewers, members or not, do not); only a lead
    # creates, changes, deletes or runs one.
    "api:queue-rules": {
        "GET":                         row(401,         403,         403,         403,         403,         200,         403,         200,         200),
        "POST":                        row(401,         403,         403,         403,         403,         403,         403,         403,         201),
    },
    "api:queue-rule": {
        "GET":                         row(401,         403,         403,         405,         405,         405,         403,         405,         405),
        "PATCH":                       row(401,         403,         403,         403,         403,         403,         403,         403,         200),
        "DELETE":                      row(401,         403,         403,         403,         403,         403,         403,         403,         204),
    },
    # A run is carried out by a worker: 202 with its record, read by those who read rules.
    "api:queue-rule-run": {
        "GET":                         row(401,         403,         403,         405,         405,         405,         403,         405,         405),
        "POST":                        row(401,         403,         403,         403,         403,         403,         403,         403,         202),
    },
    "api:queue-rule-run-detail": {
        "GET":                         row(401,         403,         403,         403,         403,         200,         403,         200,         200),
        "POST":                        row(401,         403,         403,         405,         405,         405,         403,         405,         405),
    },
    # The item is resolved: leads and those who audit read it; only a lead resolves it again.
    "api:queue-item-resolution": {
        "GET":                         row(401,         403,         403,         403,         403,         200,         403,         200,         200),
        "POST":                        row(401,         403,         403,         403,         403,         403,         403,         403,         200),
    },

    # ---- Datasets: people only, as team review. Everyone with a reading role lists and reads them; only leads
    # (the superuser) take a snapshot; the export holds the gold answers, so like a resolution it is for leads
    # and those who audit (auditors and staff). A view without POST answers 405 once the caller passed the role
    # check.
    #                                      anonymous    source_a_key source_b_key reviewer     other_rev.   auditor      no_role      staff        superuser
    "api:dataset-list": {
        "GET":                         row(401,         403,         403,         200,         200,         200,         403,         200,         200),
        "POST":                        row(401,         403,         403,         403,         403,         403,         403,         403,         201),
    },
    "api:dataset-detail": {
        "GET":                         row(401,         403,         403,         200,         200,         200,         403,         200,         200),
        "POST":                        row(401,         403,         403,         405,         405,         405,         403,         405,         405),
    },
    "api:dataset-export": {
        "GET":                         row(401,         403,         403,         403,         403,         200,         403,         200,         200),
        "POST":                        row(401,         403,         403,         405,         405,         405,         403,         405,         405),
    },

    # ---- Admin site. Only active staff get past admin_view: everyone else (an API key is anonymous here) is
    # sent to the admin's sign-in. Sign-in itself is open (a signed-in staff member is sent on to the index);
    # sign-out is a POST; without staff rights it redirects to the index (302), which then asks to sign in.
    # Plain staff without permissions see an empty index, 404 for an app's index and 403 for every model page.
    "admin:index":           {"GET":   row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 200,         ADMIN_LOGIN, 200,         200)},
    "admin:login": {
        "GET":                         row(200,         200,         200,         200,         200,         302,         200,         302,         302),
        "POST":                        row(200,         200,         200,         200,         200,         200,         200,         200,         200),
    },
    "admin:logout": {
        "GET":                         row(302,         302,         302,         302,         302,         405,         302,         405,         405),
        "POST":                        row(302,         302,         302,         302,         302,         LOGIN,       302,         LOGIN,       LOGIN),
    },
    # Changing one's own password needs the old one: a wrong one answers the form again.
    "admin:password_change": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 200,         ADMIN_LOGIN, 200,         200),
        "POST":                        row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 200,         ADMIN_LOGIN, 200,         200),
    },
    "admin:password_change_done": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 200,         ADMIN_LOGIN, 200,         200),
    },
    # No admin declares autocomplete fields: the view refuses every request (403).
    "admin:autocomplete":    {"GET":   row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         403)},
    "admin:jsi18n":          {"GET":   row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 200,         ADMIN_LOGIN, 200,         200)},
    # "View on site" of the conversation redirects to its thread, which every staff member may read.
    "admin:view_on_site":    {"GET":   row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 302,         ADMIN_LOGIN, 302,         302)},
    # /admin/chats/: shown when the user may view a model of the app.
    "admin:app_list":        {"GET":   row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 200,         ADMIN_LOGIN, 404,         200)},
    # An unknown admin URL asks to sign in first, so that it does not tell which URLs exist.
    "admin/(?P<url>.*)$":    {"GET":   row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 404,         ADMIN_LOGIN, 404,         404)},

    # ---- Admin: users and roles. Only superusers (auditors have no permission on them). The changelist POST
    # deletes a user who never wrote feedback (302), the add and change forms are complete (302), a user's
    # password is set from its own page (302). Deleting a user or a role shows its confirmation page (200) on GET.
    "admin:auth_user_changelist": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         200),
        "POST":                        row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         302),
    },
    "admin:auth_user_add": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         200),
        "POST":                        row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         302),
    },
    "admin:auth_user_change": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         200),
        "POST":                        row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         302),
    },
    "admin:auth_user_delete": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         200),
        "POST":                        row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         302),
    },
    "admin:auth_user_history": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         200),
    },
    "admin:auth_user_password_change": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         200),
        "POST":                        row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         302),
    },
    # The bare object URL redirects to its change page for every staff member; that page checks permissions.
    "admin/auth/user/<path:object_id>/": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 302,         ADMIN_LOGIN, 302,         302),
    },
    "admin:auth_group_changelist": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         200),
        "POST":                        row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         302),
    },
    "admin:auth_group_add": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         200),
        "POST":                        row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         302),
    },
    "admin:auth_group_change": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         200),
        "POST":                        row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         302),
    },
    "admin:auth_group_delete": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         200),
        "POST":                        row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         302),
    },
    "admin:auth_group_history": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         200),
    },
    "admin/auth/group/<path:object_id>/": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 302,         ADMIN_LOGIN, 302,         302),
    },

    # ---- Admin: sources. Auditors view them (their changelist offers them no action, so its POST shows the list
    # again: 200); superusers add and change them (through the services). A source with conversations cannot be
    # deleted (PROTECT): its delete page and the delete action answer 200 with the reasons and delete nothing.
    # Creating a key needs the view permission on the source and add_apikey: superusers only (the key is shown).
    "admin:chats_source_changelist": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 200,         ADMIN_LOGIN, 403,         200),
        "POST":                        row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 200,         ADMIN_LOGIN, 403,         200),
    },
    "admin:chats_source_add": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         200),
        "POST":                        row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         302),
    },
    "admin:chats_source_change": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 200,         ADMIN_LOGIN, 403,         200),
        "POST":                        row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         302),
    },
    "admin:chats_source_delete": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         200),
        "POST":                        row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         200),
    },
    "admin:chats_source_history": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 200,         ADMIN_LOGIN, 403,         200),
    },
    "admin/chats/source/<path:object_id>/": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 302,         ADMIN_LOGIN, 302,         302),
    },
    "admin:chats_source_create_key": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         200),
        "POST":                        row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         200),
    },

    # ---- Admin: API keys. Nobody views them but superusers (auditors have no permission on keys); they are
    # made from a source's page and revoked with the changelist action (302), never added, edited or deleted.
    "admin:chats_apikey_changelist": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         200),
        "POST":                        row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         302),
    },
    "admin:chats_apikey_add": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         403),
        "POST":                        row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         403),
    },
    "admin:chats_apikey_change": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         200),
        "POST":                        row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         403),
    },
    "admin:chats_apikey_delete": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         403),
        "POST":                        row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         403),
    },
    "admin:chats_apikey_history": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         200),
    },
    "admin/chats/apikey/<path:object_id>/": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 302,         ADMIN_LOGIN, 302,         302),
    },
    # What each key sent per day (the daily quota's counters): read-only, to those who see keys.
    "admin:chats_apikeydailyusage_changelist": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         200),
        "POST":                        row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         200),
    },
    "admin:chats_apikeydailyusage_add": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         403),
        "POST":                        row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         403),
    },
    "admin:chats_apikeydailyusage_change": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         200),
        "POST":                        row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         403),
    },
    "admin:chats_apikeydailyusage_delete": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         403),
        "POST":                        row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         403),
    },
    "admin:chats_apikeydailyusage_history": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         200),
    },
    "admin/chats/apikeydailyusage/<path:object_id>/": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 302,         ADMIN_LOGIN, 302,         302),
    },

    # ---- Admin: ingested data and the audit log are read-only for everyone, superusers included: add, change
    # (POST) and delete are 403, the change page is a view page (200), and the changelist offers no action, so
    # its POST shows the list again (200). Auditors view all of them.
    "admin:chats_conversation_changelist": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 200,         ADMIN_LOGIN, 403,         200),
        "POST":                        row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 200,         ADMIN_LOGIN, 403,         200),
    },
    "admin:chats_conversation_add": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         403),
        "POST":                        row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         403),
    },
    "admin:chats_conversation_change": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 200,         ADMIN_LOGIN, 403,         200),
        "POST":                        row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         403),
    },
    "admin:chats_conversation_delete": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         403),
        "POST":                        row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         403),
    },
    "admin:chats_conversation_history": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 200,         ADMIN_LOGIN, 403,         200),
    },
    "admin/chats/conversation/<path:object_id>/": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 302,         ADMIN_LOGIN, 302,         302),
    },
    "admin:chats_message_changelist": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 200,         ADMIN_LOGIN, 403,         200),
        "POST":                        row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 200,         ADMIN_LOGIN, 403,         200),
    },
    "admin:chats_message_add": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         403),
        "POST":                        row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         403),
    },
    "admin:chats_message_change": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 200,         ADMIN_LOGIN, 403,         200),
        "POST":                        row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         403),
    },
    "admin:chats_message_delete": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         403),
        "POST":                        row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         403),
    },
    "admin:chats_message_history": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 200,         ADMIN_LOGIN, 403,         200),
    },
    "admin/chats/message/<path:object_id>/": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 302,         ADMIN_LOGIN, 302,         302),
    },
    "admin:chats_toolcall_changelist": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 200,         ADMIN_LOGIN, 403,         200),
        "POST":                        row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 200,         ADMIN_LOGIN, 403,         200),
    },
    "admin:chats_toolcall_add": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         403),
        "POST":                        row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         403),
    },
    "admin:chats_toolcall_change": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 200,         ADMIN_LOGIN, 403,         200),
        "POST":                        row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         403),
    },
    "admin:chats_toolcall_delete": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         403),
        "POST":                        row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         403),
    },
    "admin:chats_toolcall_history": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 200,         ADMIN_LOGIN, 403,         200),
    },
    "admin/chats/toolcall/<path:object_id>/": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 302,         ADMIN_LOGIN, 302,         302),
    },
    "admin:chats_injectedartifact_changelist": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 200,         ADMIN_LOGIN, 403,         200),
        "POST":                        row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 200,         ADMIN_LOGIN, 403,         200),
    },
    "admin:chats_injectedartifact_add": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         403),
        "POST":                        row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         403),
    },
    "admin:chats_injectedartifact_change": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 200,         ADMIN_LOGIN, 403,         200),
        "POST":                        row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         403),
    },
    "admin:chats_injectedartifact_delete": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         403),
        "POST":                        row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         403),
    },
    "admin:chats_injectedartifact_history": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 200,         ADMIN_LOGIN, 403,         200),
    },
    "admin/chats/injectedartifact/<path:object_id>/": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 302,         ADMIN_LOGIN, 302,         302),
    },
    "admin:chats_contextartifactid_changelist": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 200,         ADMIN_LOGIN, 403,         200),
        "POST":                        row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 200,         ADMIN_LOGIN, 403,         200),
    },
    "admin:chats_contextartifactid_add": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         403),
        "POST":                        row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         403),
    },
    "admin:chats_contextartifactid_change": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 200,         ADMIN_LOGIN, 403,         200),
        "POST":                        row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         403),
    },
    "admin:chats_contextartifactid_delete": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         403),
        "POST":                        row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         403),
    },
    "admin:chats_contextartifactid_history": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 200,         ADMIN_LOGIN, 403,         200),
    },
    "admin/chats/contextartifactid/<path:object_id>/": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 302,         ADMIN_LOGIN, 302,         302),
    },
    # Receipts have one action, removing old payloads, for superusers only (it needs change_ingestionreceipt): its
    # POST answers the page that counts what would go, and removes nothing until that page is confirmed.
    "admin:chats_ingestionreceipt_changelist": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 200,         ADMIN_LOGIN, 403,         200),
        "POST":                        row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 200,         ADMIN_LOGIN, 403,         200),
    },
    "admin:chats_ingestionreceipt_add": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         403),
        "POST":                        row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         403),
    },
    "admin:chats_ingestionreceipt_change": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 200,         ADMIN_LOGIN, 403,         200),
        "POST":                        row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         403),
    },
    "admin:chats_ingestionreceipt_delete": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         403),
        "POST":                        row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         403),
    },
    "admin:chats_ingestionreceipt_history": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 200,         ADMIN_LOGIN, 403,         200),
    },
    "admin/chats/ingestionreceipt/<path:object_id>/": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 302,         ADMIN_LOGIN, 302,         302),
    },
    # A receipt's payload, as the exact bytes: to whoever may view receipts.
    "admin:chats_ingestionreceipt_payload": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 200,         ADMIN_LOGIN, 403,         200),
    },
    # The payloads receipts name: read-only like the receipts, which Auditors read.
    "admin:chats_receiptpayload_changelist": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 200,         ADMIN_LOGIN, 403,         200),
        "POST":                        row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 200,         ADMIN_LOGIN, 403,         200),
    },
    "admin:chats_receiptpayload_add": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         403),
        "POST":                        row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         403),
    },
    "admin:chats_receiptpayload_change": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 200,         ADMIN_LOGIN, 403,         200),
        "POST":                        row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         403),
    },
    "admin:chats_receiptpayload_delete": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         403),
        "POST":                        row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         403),
    },
    "admin:chats_receiptpayload_history": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 200,         ADMIN_LOGIN, 403,         200),
    },
    "admin/chats/receiptpayload/<path:object_id>/": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 302,         ADMIN_LOGIN, 302,         302),
    },
    "admin:chats_auditevent_changelist": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 200,         ADMIN_LOGIN, 403,         200),
        "POST":                        row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 200,         ADMIN_LOGIN, 403,         200),
    },
    "admin:chats_auditevent_add": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         403),
        "POST":                        row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         403),
    },
    "admin:chats_auditevent_change": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 200,         ADMIN_LOGIN, 403,         200),
        "POST":                        row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         403),
    },
    "admin:chats_auditevent_delete": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         403),
        "POST":                        row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         403),
    },
    "admin:chats_auditevent_history": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 200,         ADMIN_LOGIN, 403,         200),
    },
    "admin/chats/auditevent/<path:object_id>/": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 302,         ADMIN_LOGIN, 302,         302),
    },
    # The labels given in feedback are read-only too, and auditors have no permission on them.
    "admin:chats_feedbacklabel_changelist": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         200),
        "POST":                        row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         200),
    },
    "admin:chats_feedbacklabel_add": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         403),
        "POST":                        row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         403),
    },
    "admin:chats_feedbacklabel_change": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         200),
        "POST":                        row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         403),
    },
    "admin:chats_feedbacklabel_delete": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         403),
        "POST":                        row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         403),
    },
    "admin:chats_feedbacklabel_history": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         200),
    },
    "admin/chats/feedbacklabel/<path:object_id>/": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 302,         ADMIN_LOGIN, 302,         302),
    },

    # ---- Admin: labels. Auditors view them (no action for them: the changelist POST shows the list, 200);
    # superusers manage the taxonomy. A label given in feedback cannot be deleted (PROTECT): its delete page and
    # the delete action answer 200 with the reason and delete nothing.
    "admin:chats_label_changelist": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 200,         ADMIN_LOGIN, 403,         200),
        "POST":                        row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 200,         ADMIN_LOGIN, 403,         200),
    },
    "admin:chats_label_add": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         200),
        "POST":                        row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         302),
    },
    "admin:chats_label_change": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 200,         ADMIN_LOGIN, 403,         200),
        "POST":                        row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         302),
    },
    "admin:chats_label_delete": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         200),
        "POST":                        row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         200),
    },
    "admin:chats_label_history": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 200,         ADMIN_LOGIN, 403,         200),
    },
    "admin/chats/label/<path:object_id>/": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 302,         ADMIN_LOGIN, 302,         302),
    },

    # ---- Admin: feedback. Auditors view it (no action for them: the changelist POST shows the list, 200); only
    # superusers change or delete it here (through the services), with the change form or the delete action (302);
    # nobody adds it here.
    "admin:chats_feedback_changelist": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 200,         ADMIN_LOGIN, 403,         200),
        "POST":                        row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 200,         ADMIN_LOGIN, 403,         302),
    },
    "admin:chats_feedback_add": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         403),
        "POST":                        row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         403),
    },
    "admin:chats_feedback_change": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 200,         ADMIN_LOGIN, 403,         200),
        "POST":                        row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         302),
    },
    "admin:chats_feedback_delete": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         200),
        "POST":                        row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         302),
    },
    "admin:chats_feedback_history": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 200,         ADMIN_LOGIN, 403,         200),
    },
    "admin/chats/feedback/<path:object_id>/": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 302,         ADMIN_LOGIN, 302,         302),
    },

    # ---- Admin: failed sign-ins (django-axes' records). Only superusers see them (nobody else has a permission on
    # them, auditors included) and unlock with the changelist action (302, through the audited service); the rows
    # are read-only for everyone: add, change (POST) and delete are 403, the change page is a view page (200).
    "admin:axes_accessattempt_changelist": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         200),
        "POST":                        row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         302),
    },
    "admin:axes_accessattempt_add": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         403),
        "POST":                        row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         403),
    },
    "admin:axes_accessattempt_change": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         200),
        "POST":                        row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         403),
    },
    "admin:axes_accessattempt_delete": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         403),
        "POST":                        row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         403),
    },
    "admin:axes_accessattempt_history": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403,         ADMIN_LOGIN, 403,         200),
    },
    "admin/axes/accessattempt/<path:object_id>/": {
        "GET":                         row(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 302,         ADMIN_LOGIN, 302,         302),
    },
}
# fmt: on

# Team review (its rules and datasets too) in the admin: read-only like the audit log, and shown to auditors (who
# have its view permissions).
_TEAM_REVIEW_MODELS = ("queue", "queuerule", "rubricversion", "queueitem", "lease", "review", "resolution")
for _model in (*_TEAM_REVIEW_MODELS, "dataset", "datasetitem"):
    for _suffix in ("changelist", "add", "change", "delete", "history"):
        EXPECTED[f"admin:chats_{_model}_{_suffix}"] = EXPECTED[f"admin:chats_auditevent_{_suffix}"]
    EXPECTED[f"admin/chats/{_model}/<path:object_id>/"] = EXPECTED["admin/chats/auditevent/<path:object_id>/"]

# Who opened which conversation, and the background jobs (export jobs, their results' chunks, queue-rule runs), in
# the admin: read-only, and (like the labels given in feedback) no permission of the Auditors group's (auditors read
# views on a conversation's Activity panel; a job is its asker's, on the export jobs page).
for _model in ("conversationview", "exportjob", "exportjobpart", "queuerulerun"):
    for _suffix in ("changelist", "add", "change", "delete", "history"):
        EXPECTED[f"admin:chats_{_model}_{_suffix}"] = EXPECTED[f"admin:chats_feedbacklabel_{_suffix}"]
    EXPECTED[f"admin/chats/{_model}/<path:object_id>/"] = EXPECTED["admin/chats/feedbacklabel/<path:object_id>/"]

# --------------------------------------------------------------------------------------------------------------
# The URL configuration, enumerated


def _join_route(prefix: str, route: str) -> str:
    # As ResolverMatch.route joins them, so that an enumerated route and a resolved one compare equal.
    return prefix + route.removeprefix("^") if prefix else route


def url_patterns(patterns: list[Any] | None = None, prefix: str = "", namespace: str = "") -> Iterator[str]:
    """The key of every URL pattern, the admin's included: its namespaced name, or its full route if unnamed."""
    for pattern in get_resolver().url_patterns if patterns is None else patterns:
        route = _join_route(prefix, str(pattern.pattern))
        if isinstance(pattern, URLResolver):
            inner = ":".join(part for part in (namespace, pattern.namespace or "") if part)
            yield from url_patterns(pattern.url_patterns, route, inner)
        else:
            assert isinstance(pattern, URLPattern)
            yield f"{namespace}:{pattern.name}" if namespace and pattern.name else pattern.name or route


def pattern_key(path: str) -> str:
    match = resolve(path.split("?", 1)[0])
    return match.view_name if match.url_name else match.route


def group_of(key: str) -> str:
    if key.startswith("chats:"):
        return "pages"
    if key.startswith("api:"):
        return "api"
    if key.startswith("admin"):
        return "admin"
    return "accounts"


GROUPS = ("pages", "accounts", "api", "admin")

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
        "chats.conversationview": ConversationView.objects.create(
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
        "chats.exportjob": export_job,
        "chats.exportjobpart": ExportJobPart.objects.filter(job=export_job).first(),
        "chats.queuerulerun": rule_run,
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
    targets = {
        "chats:home": Target(("/",)),
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
                    "rubric-0-options": "yes, no",
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
        "chats:review_draft": Target((f"{item_page}draft/",), {"POST": {"q.correct": "no"}}),
        "chats:review_submit": Target((f"{item_page}submit/",), {"POST": {"q.correct": "no"}}),
        "login": Target(("/accounts/login/",), {"POST": {"username": "nobody-here", "password": "wrong"}}),
        "logout": Target(("/accounts/logout/",)),
        "api:ingest": Target(("/api/v1/ingest/",), {"POST": JsonBody(TINY_DOCUMENT)}),
        "api:ingest-bulk": Target(("/api/v1/ingest/bulk/",), {"POST": JsonBody([TINY_DOCUMENT])}),
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
        "queues": list(Queue.objects.order_by("pk").values_list("pk", "name", "reviews_per_item")),
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


def attempt(principal: Principal, method: str, path: str, body: Body | None, before: dict[str, Any]) -> str | None:
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
    expected = EXPECTED[pattern_key(path)][method][principal.name]
    problems = []
    if result != expected:
        problems.append(f"expected {expected}, got {result}")
    if changed:
        problems.append(f"refused with {result} but changed the database")
    return f"{method} {path} as {principal.name}: {'; '.join(problems)}" if problems else None


# --------------------------------------------------------------------------------------------------------------
# Tests


@pytest.fixture
def world() -> World:
    return build_world()


def test_every_url_pattern_has_an_expected_row() -> None:
    patterns = list(url_patterns())

    assert len(patterns) == len(set(patterns)), "two URL patterns share a key"
    assert set(patterns) - set(EXPECTED) == set(), "URL patterns without an expected row"
    assert set(EXPECTED) - set(patterns) == set(), "expected rows for URL patterns that do not exist"


def test_every_target_resolves_to_the_pattern_it_stands_for(world: World) -> None:
    targets = build_targets(world)

    assert set(targets) == set(EXPECTED)
    for key, target in targets.items():
        for path in target.paths:
            assert pattern_key(path) == key, path
        assert set(target.bodies) <= set(EXPECTED[key]) - {"GET"}, key


@pytest.mark.parametrize("group", GROUPS)
def test_each_principal_gets_the_expected_answer_and_a_refused_write_changes_nothing(world: World, group: str) -> None:
    targets = build_targets(world)
    before = state()

    problems = [
        problem
        for key, methods in EXPECTED.items()
        if group_of(key) == group
        for method in methods
        for path in targets[key].paths
        for principal in world.principals.values()
        if (problem := attempt(principal, method, path, targets[key].bodies.get(method), before))
    ]

    assert problems == [], "\n".join(problems)
    assert state() == before


# --------------------------------------------------------------------------------------------------------------
# What the matrix cannot see in a status code


def key_client(raw_key: str) -> Client:
    return Client(headers={"Authorization": f"Api-Key {raw_key}"})


def ndjson(client: Client, path: str) -> list[Any]:
    response = client.get(path)
    assert response.status_code == 200, path
    return [json.loads(line) for line in b"".join(response.streaming_content).splitlines()]  # type: ignore[attr-defined]


def test_a_session_write_without_a_csrf_token_is_refused(world: World) -> None:
    before = state()
    client = Client(enforce_csrf_checks=True)
    client.force_login(world.reviewer)
    superuser = Client(enforce_csrf_checks=True)
    superuser.force_login(User.objects.get(username="root"))

    page = client.post(f"/conversations/{world.conversation.uuid}/feedback/{world.feedback.uuid}/delete/")
    api = client.patch(
        f"/api/v1/feedback/{world.feedback.uuid}/", data=json.dumps({"comment": "x"}), content_type="application/json"
    )
    in_admin = superuser.post(f"/admin/chats/feedback/{world.feedback.pk}/delete/", {"post": "yes"})

    assert (page.status_code, api.status_code, in_admin.status_code) == (403, 403, 403)
    assert "CSRF" in api.json()["errors"][0]["message"]
    assert state() == before


def test_source_b_lists_and_exports_none_of_source_a(world: World) -> None:
    client = key_client(world.raw_key_b)
    mine, theirs = str(world.conversation_b.uuid), str(world.conversation.uuid)

    listed = [row["uuid"] for row in client.get("/api/v1/conversations/").json()["results"]]
    named_a = client.get(f"/api/v1/conversations/?source={world.source_a.name}")
    feedback = client.get("/api/v1/feedback/").json()["results"]
    artifact = world.admin_objects["chats.injectedartifact"]
    assert isinstance(artifact, InjectedArtifact)
    artifact_detail = client.get(f"/api/v1/artifacts/{artifact.artifact_id}/")
    artifacts = client.get("/api/v1/artifacts/").json()["results"]
    artifact_lines = ndjson(client, "/api/v1/export/artifacts/")
    exported = {fmt: ndjson(client, f"/api/v1/export/?format={fmt}&envelope=true") for fmt in EXPORT_FORMATS}
    training = ndjson(client, "/api/v1/export/?format=training")

    assert listed == [mine]
    # Source A's name answers as a name that does not exist would: nothing says that source is there.
    assert named_a.status_code == 400 and "Select a valid choice" in named_a.json()["errors"][0]["message"]
    assert feedback == [] and artifact_detail.status_code == 404
    # B's own conversation injects nothing: B sees no artifact of A's.
    assert artifacts == [] and artifact_lines == []
    assert {fmt: [line["conversation"] for line in lines] for fmt, lines in exported.items()} == {
        fmt: [mine] for fmt in EXPORT_FORMATS
    }
    assert [line["metadata"]["conversation"] for line in training] == [mine]
    assert theirs not in json.dumps(exported)


def test_source_a_lists_its_own_conversation_and_the_feedback_on_it(world: World) -> None:
    client = key_client(world.raw_key_a)

    listed = [row["uuid"] for row in client.get("/api/v1/conversations/").json()["results"]]
    feedback = [row["uuid"] for row in client.get("/api/v1/feedback/").json()["results"]]

    assert listed == [str(world.conversation.uuid)]
    assert feedback == [str(world.feedback.uuid)]


def test_a_source_reads_only_its_own_receipts(world: World) -> None:
    sent = key_client(world.raw_key_b).post(
        "/api/v1/ingest/", data=json.dumps(TINY_DOCUMENT), content_type="application/json"
    )
    receipt_b = sent.json()["receipt"]
    receipt_a = world.admin_objects["chats.ingestionreceipt"]
    assert isinstance(receipt_a, IngestionReceipt)

    assert sent.status_code == 201
    assert key_client(world.raw_key_b).get(f"/api/v1/receipts/{receipt_b}/").status_code == 200
    assert key_client(world.raw_key_a).get(f"/api/v1/receipts/{receipt_b}/").status_code == 404
    assert key_client(world.raw_key_a).get(f"/api/v1/receipts/{receipt_a.uuid}/").status_code == 200
    assert key_client(world.raw_key_b).get(f"/api/v1/receipts/{receipt_a.uuid}/").status_code == 404


def test_source_b_sending_source_a_s_conversation_makes_its_own(world: World) -> None:
    document = {"conversation_id": world.conversation.external_id, "chat_history": TINY_DOCUMENT["chat_history"]}
    before = Message.objects.filter(conversation=world.conversation).count()

    response = key_client(world.raw_key_b).post(
        "/api/v1/ingest/", data=json.dumps(document), content_type="application/json"
    )

    assert response.status_code == 201
    assert Conversation.objects.get(uuid=response.json()["conversation"]).source == world.source_b
    assert Message.objects.filter(conversation=world.conversation).count() == before


@pytest.mark.parametrize("path", ["/api/v1/ingest/", "/api/v1/ingest/bulk/"])
def test_ingest_answers_a_bad_document_with_400_to_a_source_and_403_to_a_person_s_token(
    world: World, path: str
) -> None:
    tokens = [
        api_key_create(user=User.objects.get(username=username), name="personal")[1] for username in ("rita", "root")
    ]
    bad = json.dumps({"chat_history": []} if path.endswith("ingest/") else "not an array")

    from_source = key_client(world.raw_key_a).post(path, data=bad, content_type="application/json")
    receipts = IngestionReceipt.objects.count()
    from_people = [
        key_client(token).post(path, data=json.dumps(TINY_DOCUMENT), content_type="application/json").status_code
        for token in tokens
    ]

    assert from_source.status_code == 400
    assert from_people == [403, 403]
    assert IngestionReceipt.objects.count() == receipts
