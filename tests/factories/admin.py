"""Rows for the admin tests, made the way production makes them: through the services."""

from __future__ import annotations

import json
from typing import Any

from django.contrib.auth.models import Group, User

from chats.models import Conversation, Label, ModelCall, Source, ViewedVia
from chats.roles import LEADS
from chats.services.audit import CommandActor
from chats.services.audit_verification import audit_chain_verify
from chats.services.datasets import dataset_snapshot_create
from chats.services.export_jobs import export_job_create
from chats.services.feedback import feedback_submit
from chats.services.ingestion import conversation_ingest
from chats.services.queue_rules import rule_create, rule_run_request
from chats.services.reads import read_event_record
from chats.services.review import (
    item_lease_next,
    item_resolve,
    queue_add_conversations,
    queue_create,
    review_save_draft,
)
from chats.services.saved_views import saved_view_create
from chats.services.sources import api_key_create, source_get_or_create
from chats.services.trend_rollups import trends_rollup_all
from chats.throttling import ingest_quota_charge

PROTOCOL_ID = "airalogy.id.lab.demo.project.pcr.protocol.pcr_basics.v.0.0.1"


def openai_document(n: int, *, turns: int = 1) -> list[dict[str, Any]]:
    """A user question, an injection call and its result, and an answer; `turns` times over.

    Each turn also carries an unanswered call with arguments that are not JSON, and untrusted markup.
    """
    messages: list[dict[str, Any]] = []
    for turn in range(turns):
        call_id, broken_id = f"call_{n}_{turn}", f"broken_{n}_{turn}"
        messages += [
            {"role": "user", "content": f"<script>alert({n})</script> Why PCR bands? (turn {turn})"},
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {
                        "id": call_id,
                        "type": "function",
                        "function": {
                            "name": "inject_airalogy_protocols",
                            "arguments": json.dumps({"airalogy_protocol_ids": [PROTOCOL_ID, "not-an-id"]}),
                        },
                    },
                    {
                        "id": broken_id,
                        "type": "function",
                        "function": {"name": "search", "arguments": "{oops"},
                    },
                ],
            },
            {
                "role": "tool",
                "tool_call_id": call_id,
                "content": json.dumps({"airalogy_protocols": [{"airalogy_protocol_id": PROTOCOL_ID, "markdown": "#"}]}),
            },
            {"role": "assistant", "content": f"Primer dimers <b>{n}</b>."},
        ]
    return messages


def conversation(source: Source, n: int = 0, *, turns: int = 1) -> Conversation:
    result = conversation_ingest(
        source=source, document=openai_document(n, turns=turns), format="openai", external_id=f"chat-{n}"
    )
    assert result.conversation is not None, result.errors
    return result.conversation


def record_qa_conversation(source: Source, n: int = 0) -> Conversation:
    """The same turn as a Record QA document whose context lists the protocol and a record never injected."""
    context = {
        "inject_airalogy_protocols": {"enabled": True, "airalogy_protocol_ids": [PROTOCOL_ID]},
        "inject_airalogy_records": {"enabled": True, "airalogy_record_ids": [f"airalogy.id.record.{n}"]},
    }
    result = conversation_ingest(
        source=source,
        document={"context": context, "main_messages": openai_document(n)},
        format="record_qa",
        external_id=f"record-{n}",
    )
    assert result.conversation is not None, result.errors
    return result.conversation


REVIEW_QUESTIONS = [{"key": "correct", "prompt": "Correct?", "type": "categorical", "options": ["yes", "no"]}]


def world(count: int, reviewer: User) -> dict[str, Any]:
    """`count` of everything the admin lists: sources, keys (with a day's usage), conversations (Record QA
    documents: with messages, tool calls, artifacts, the ids their contexts list, receipts and their payloads),
    labels, feedback with labels, review queues (each with its conversation leased and reviewed in draft by the
    reviewer, and resolved, then taken into a dataset by a lead, and a lead's rule on its source), the reviewer's
    view of each conversation, and audit events with a checkpoint of their chain each round."""
    made: dict[str, Any] = {"sources": [], "conversations": [], "feedback": []}
    lead, _ = User.objects.get_or_create(username="builder-lead")
    lead.groups.add(Group.objects.get_or_create(name=LEADS)[0])
    for n in range(count):
        source, _ = source_get_or_create(name=f"source-{n}")
        key, _ = api_key_create(source=source, name=f"key-{n}")
        ingest_quota_charge(key, 1000 + n)  # what the key's requests count against its daily quota
        chat = record_qa_conversation(source, n)
        label = Label.objects.create(name=f"label-{n}", description="<i>untrusted</i>")
        feedback, _ = feedback_submit(
            author=reviewer, conversation=chat, score=1, labels=[label], comment=f"<script>{n}</script>"
        )
        queue = queue_create(actor=lead, name=f"queue-{n}", questions=REVIEW_QUESTIONS, members=[reviewer])
        queue_add_conversations(actor=lead, queue=queue, conversations=Conversation.objects.filter(pk=chat.pk))
        item = item_lease_next(queue=queue, reviewer=reviewer)
        assert item is not None
        review_save_draft(reviewer=reviewer, item=item, answers={"correct": "no"})
        item_resolve(actor=lead, item=item, answers={"correct": "yes"}, correction="<b>gold</b>")
        rule = rule_create(
            actor=lead, queue=queue, name=f"rule-{n}", filters={"source": source.name}, sample_rate="0.5"
        )
        rule_run_request(actor=lead, rule=rule)
        export_job_create(actor=reviewer, requested_by=reviewer, format="openai", filters={"source": [source.name]})
        dataset_snapshot_create(actor=lead, name=f"dataset-{n}", queues=[queue], description="<i>untrusted</i>")
        read_event_record(viewer=reviewer, conversation_uuid=chat.uuid, via=ViewedVia.PAGE)
        saved_view_create(actor=lead, name=f"view-{n}", query=f"source={source.name}", shared=True)
        ModelCall.objects.create(conversation=chat, form="genai", provider=f"provider-{n}", input_tokens=n)
        trends_rollup_all()  # the Trends rollups, as the ingestions' post-commit step would have kept them
        audit_chain_verify(actor=CommandActor("verify_audit"))  # and a checkpoint of the chain so far
        made["sources"].append(source)
        made["conversations"].append(chat)
        made["feedback"].append(feedback)
    return made
