"""Artifacts on the API: their list, one artifact with its payload versions and uses, and the query parameters of
the list, a detail and an export."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from chats.api.serializers.common import WrapperSerializer
from chats.api.serializers.conversations import ConversationListSerializer
from chats.models import ArtifactKind, Verdict
from chats.selectors.artifacts import ARTIFACT_SORTS, DEFAULT_ARTIFACT_SORT, MAX_ARTIFACT_PAGE


class InjectionSerializer(serializers.Serializer[Any]):
    kind = serializers.CharField()
    tool_name = serializers.CharField()
    tool_call_id = serializers.CharField()
    message_key = serializers.CharField()
    requested = serializers.BooleanField()
    resolved = serializers.BooleanField()


class ArtifactUseSerializer(WrapperSerializer, ConversationListSerializer):
    wraps, own_fields = "conversation", frozenset({"injections", "labels"})

    injections = InjectionSerializer(many=True)
    labels = serializers.DictField(
        child=serializers.IntegerField(), source="label_counts", help_text="Feedback label name -> count."
    )

    class Meta(ConversationListSerializer.Meta):
        fields = [*ConversationListSerializer.Meta.fields, "injections", "labels"]
        read_only_fields = fields


class ScoreCountsSerializer(serializers.Serializer[Any]):
    up = serializers.IntegerField(help_text="Feedback scoring +1.")
    neutral = serializers.IntegerField(help_text="Feedback scoring 0.")
    down = serializers.IntegerField(help_text="Feedback scoring -1.")


class ArtifactSummarySerializer(serializers.Serializer[Any]):
    kind = serializers.ChoiceField(choices=ArtifactKind.values)
    artifact_id = serializers.CharField(help_text="As injected or listed, never cut short.")
    injected_conversations = serializers.IntegerField(help_text="Conversations it was injected into.")
    permitted_only = serializers.IntegerField(
        help_text="Conversations whose injection context lists it (kind and id) but that did not inject it."
    )
    violations = serializers.IntegerField(
        help_text="Injections whose policy verdict is not permitted (kind_not_enabled, not_listed)."
    )
    first_injected_at = serializers.DateTimeField(
        allow_null=True,
        help_text="When the model was first given it, in the conversations' own times (a message's time, else the "
        "conversation's start). Null when only ever listed, or when no input gave a time.",
    )
    last_injected_at = serializers.DateTimeField(allow_null=True, help_text="The latest such time.")
    last_received_at = serializers.DateTimeField(
        allow_null=True, help_text="When its newest injection was received. Null when only ever listed."
    )
    scores = ScoreCountsSerializer(help_text="The feedback scores on the conversations that injected it.")
    labels = serializers.DictField(
        child=serializers.IntegerField(), help_text="Feedback label name -> count, on those conversations."
    )


class ArtifactListSerializer(serializers.Serializer[Any]):
    next = serializers.URLField(allow_null=True)
    previous = serializers.URLField(allow_null=True)
    results = ArtifactSummarySerializer(many=True)


class VersionConversationSerializer(serializers.Serializer[Any]):
    uuid = serializers.UUIDField()
    title = serializers.CharField(help_text="The title, else the first user message, else the external id.")
    source = serializers.CharField()  # type: ignore[assignment]  # a field named like Field.source
    verdict = serializers.ChoiceField(choices=Verdict.values, allow_null=True)


class PayloadVersionSerializer(serializers.Serializer[Any]):
    digest = serializers.CharField(
        allow_blank=True,
        help_text="sha256 of the payload's canonical JSON (sorted keys, no spaces): equal payloads, equal digests. "
        "Empty for injections that were requested but never resolved (no payload).",
    )
    payload = serializers.JSONField(allow_null=True)
    conversation_count = serializers.IntegerField()
    injection_count = serializers.IntegerField()
    first_injected_at = serializers.DateTimeField(allow_null=True)
    last_injected_at = serializers.DateTimeField(allow_null=True)
    conversations = VersionConversationSerializer(
        many=True, help_text="The newest conversations that got this version (at most 20; the count says how many)."
    )


class ArtifactDetailSerializer(serializers.Serializer[Any]):
    artifact_id = serializers.CharField()
    kinds = ArtifactSummarySerializer(many=True, help_text="The figures, one per kind the id was seen as.")
    versions = PayloadVersionSerializer(many=True, help_text="The distinct payloads, oldest first (at most 50).")
    next = serializers.URLField(allow_null=True, help_text="The next page of `results`.")
    previous = serializers.URLField(allow_null=True)
    results = ArtifactUseSerializer(
        many=True, help_text="The conversations that injected it, newest first, a page at a time."
    )


class ArtifactQuery(serializers.Serializer[Any]):
    artifact_id = serializers.CharField(help_text="The artifact id exactly as injected.")


class ArtifactExportQuery(serializers.Serializer[Any]):
    kind = serializers.ChoiceField(choices=ArtifactKind.values, required=False, help_text="Only this kind.")
    source = serializers.CharField(  # type: ignore[assignment]  # a field named like Field.source
        required=False, help_text="Only the conversations of this source (its name)."
    )


class ArtifactListQuery(ArtifactExportQuery):
    sort = serializers.ChoiceField(
        choices=list(ARTIFACT_SORTS), default=DEFAULT_ARTIFACT_SORT, help_text="The order of the list."
    )
    page = serializers.IntegerField(default=1, min_value=1, max_value=MAX_ARTIFACT_PAGE)
    artifact_id = serializers.CharField(
        required=False,
        help_text="Deprecated: answered by a redirect (308) to /api/v1/artifacts/{artifact_id}/, whose `results` "
        "are the conversations this parameter used to list here.",
    )
