"""Team review API: a queue's rules and their runs. Leads (and superusers) manage and run them; auditors read them,
reviewers do not see them. Writes go through `chats.services.queue_rules`, which audits them.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response

from chats.api.errors import first_or_404
from chats.api.review_access import (
    ERRORS,
    PersonView,
    lead_roles,
    overseer_roles,
    person_of,
    valid_input,
    visible_queue,
)
from chats.api.schema import BAD_REQUEST, NOT_FOUND
from chats.api.serializers.queue_rules import (
    QueueRuleInputSerializer,
    QueueRulePatchSerializer,
    QueueRuleRunSerializer,
    QueueRuleSerializer,
)
from chats.models import Queue, QueueRule, QueueRuleRun
from chats.services import queue_rules as rule_services


def _rule_reader(request: Request) -> None:
    overseer_roles(request, "Only leads and auditors read a queue's rules.")


def _rule(queue: Queue, pk: int) -> QueueRule:
    rules = QueueRule.objects.select_related("queue", "created_by").filter(queue=queue, pk=pk)
    return first_or_404(rules, "No such rule in this queue.")


def _rule_out(rule: QueueRule) -> dict[str, Any]:
    return dict(QueueRuleSerializer(_rule(rule.queue, rule.pk)).data)


class QueueRuleListView(PersonView):
    @extend_schema(
        operation_id="queue_rules_list",
        summary="List a queue's rules (leads and auditors)",
        description="Each rule: the conversation list's filters and a sampling rate. Enabled rules add the "
        "matching conversations they sample as they are ingested.",
        responses={200: QueueRuleSerializer(many=True), **ERRORS, **NOT_FOUND},
    )
    def get(self, request: Request, pk: int) -> Response:
        _rule_reader(request)
        rules = (
            QueueRule.objects.filter(queue=visible_queue(request, pk))
            .select_related("created_by")
            .order_by("name", "id")
        )
        return Response(QueueRuleSerializer(rules, many=True).data)

    @extend_schema(
        operation_id="queue_rules_create",
        summary="Create a queue rule (leads)",
        description="Filters invalid for the conversation list answer 400, naming the parameter "
        "(`/filters/<name>`). The rule applies to conversations ingested from now on; run it to apply it to what "
        "is stored.",
        request=QueueRuleInputSerializer,
        responses={201: QueueRuleSerializer, **BAD_REQUEST, **ERRORS, **NOT_FOUND},
    )
    def post(self, request: Request, pk: int) -> Response:
        lead_roles(request)
        queue = visible_queue(request, pk)
        data = valid_input(QueueRuleInputSerializer, request.data)
        rule = rule_services.rule_create(actor=person_of(request), queue=queue, **data)
        return Response(_rule_out(rule), status=status.HTTP_201_CREATED)


class QueueRuleDetailView(PersonView):
    @extend_schema(
        operation_id="queue_rules_update",
        summary="Change a queue rule (leads)",
        description="Only the fields given change; filters are checked as on creation.",
        request=QueueRulePatchSerializer,
        responses={200: QueueRuleSerializer, **BAD_REQUEST, **ERRORS, **NOT_FOUND},
    )
    def patch(self, request: Request, pk: int, rule: int) -> Response:
        lead_roles(request)
        found = _rule(visible_queue(request, pk), rule)
        data = valid_input(QueueRulePatchSerializer, request.data)
        rule_services.rule_update(actor=person_of(request), rule=found, **data)
        return Response(_rule_out(found))

    @extend_schema(
        operation_id="queue_rules_delete",
        summary="Delete a queue rule (leads)",
        description="The conversations it added stay in the queue.",
        responses={204: OpenApiResponse(description="Deleted."), **ERRORS, **NOT_FOUND},
    )
    def delete(self, request: Request, pk: int, rule: int) -> Response:
        lead_roles(request)
        found = _rule(visible_queue(request, pk), rule)
        rule_services.rule_delete(actor=person_of(request), rule=found)
        return Response(status=status.HTTP_204_NO_CONTENT)


class QueueRuleRunView(PersonView):
    @extend_schema(
        operation_id="queue_rules_run",
        summary="Run a queue rule over what is stored (leads)",
        description="Queues a run of the rule, carried out by a worker, and answers 202 with its record (poll its "
        "`url`). The run adds the stored conversations the rule matches and samples that the queue lacks; running "
        "it again adds none (the sample is a stable hash). A rule whose filters no longer validate answers 400.",
        request=None,
        responses={202: QueueRuleRunSerializer, **BAD_REQUEST, **ERRORS, **NOT_FOUND},
    )
    def post(self, request: Request, pk: int, rule: int) -> Response:
        lead_roles(request)
        found = _rule(visible_queue(request, pk), rule)
        run = rule_services.rule_run_request(actor=person_of(request), rule=found)
        body = QueueRuleRunSerializer(_rule_run(found, run.pk)).data
        return Response(body, status=status.HTTP_202_ACCEPTED, headers={"Location": body["url"]})


def _rule_run(rule: QueueRule, pk: int) -> QueueRuleRun:
    runs = QueueRuleRun.objects.select_related("rule", "requested_by").filter(rule=rule, pk=pk)
    return first_or_404(runs, "No such run of this rule.")


class QueueRuleRunDetailView(PersonView):
    @extend_schema(
        operation_id="queue_rules_run_retrieve",
        summary="A run of a queue rule (leads and auditors)",
        description="Its state (queued, running, done, failed), how many conversations it added once done, and "
        "why it failed.",
        responses={200: QueueRuleRunSerializer, **ERRORS, **NOT_FOUND},
    )
    def get(self, request: Request, pk: int, rule: int, run: int) -> Response:
        _rule_reader(request)
        return Response(QueueRuleRunSerializer(_rule_run(_rule(visible_queue(request, pk), rule), run)).data)
