"""Team review's answers on the API: reviews and drafts, a lead's resolution, and a queue's agreement figures."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from chats.models import ReviewState


class AnswersSerializer(serializers.Serializer[Any]):
    answers = serializers.JSONField(help_text="Question key to answer, as the rubric says.")


class ResolutionInputSerializer(AnswersSerializer):
    correction = serializers.CharField(allow_blank=True, required=False, default="")


class ReviewSerializer(serializers.Serializer[Any]):
    id = serializers.IntegerField()
    reviewer = serializers.CharField(source="reviewer.username")
    rubric_version = serializers.IntegerField(source="rubric_version.version")
    answers = serializers.JSONField()
    state = serializers.ChoiceField(choices=ReviewState.values)
    submitted_at = serializers.DateTimeField(allow_null=True)
    pinned_leaf_key = serializers.CharField(
        allow_blank=True, help_text="The last message of the path judged (the lease's, when the review began)."
    )
    pinned_path_sha256 = serializers.CharField(allow_blank=True, help_text="SHA-256 of that path's messages.")


class ItemReviewsSerializer(serializers.Serializer[Any]):
    reviews = ReviewSerializer(many=True)
    hidden = serializers.IntegerField(
        help_text="Others' submitted reviews not shown until the caller has submitted their own."
    )


class ResolutionSerializer(serializers.Serializer[Any]):
    item = serializers.IntegerField(source="item_id")
    lead = serializers.CharField(source="lead.username")
    rubric_version = serializers.IntegerField(source="rubric_version.version")
    answers = serializers.JSONField()
    correction = serializers.CharField(allow_blank=True)
    pinned_leaf_key = serializers.CharField(
        allow_blank=True, help_text="The last message of the path the gold answer is about (the reviewed one)."
    )
    pinned_path_sha256 = serializers.CharField(allow_blank=True, help_text="SHA-256 of that path's messages.")
    created_at = serializers.DateTimeField()


class PairAgreementSerializer(serializers.Serializer[Any]):
    reviewers = serializers.ListField(child=serializers.CharField(), help_text="The two reviewers' user names.")
    n_items = serializers.IntegerField(help_text="Units both answered.")
    kappa = serializers.FloatField(allow_null=True, help_text="Cohen's kappa; null when undefined (see `reason`).")
    kappa_linear = serializers.FloatField(
        allow_null=True, help_text="Ordinal questions: Cohen's kappa with linear weights (null otherwise)."
    )
    kappa_quadratic = serializers.FloatField(
        allow_null=True, help_text="Ordinal questions: Cohen's kappa with quadratic weights (null otherwise)."
    )
    percent_agreement = serializers.FloatField(allow_null=True)
    meaningful = serializers.BooleanField(help_text="False when the figure rests on fewer than `min_items` units.")
    reason = serializers.CharField(allow_null=True)


class LabelAgreementSerializer(serializers.Serializer[Any]):
    label = serializers.CharField()  # type: ignore[assignment]  # a field named like Field.label
    alpha = serializers.FloatField(allow_null=True)
    alpha_reason = serializers.CharField(allow_null=True)
    n_items = serializers.IntegerField()
    n_answers = serializers.IntegerField()
    meaningful = serializers.BooleanField()
    pairs = PairAgreementSerializer(many=True)


class QuestionAgreementSerializer(serializers.Serializer[Any]):
    key = serializers.CharField()
    prompt = serializers.CharField(allow_blank=True)
    versions = serializers.ListField(
        child=serializers.IntegerField(),
        help_text="The rubric versions whose answers these figures compare: those in which the question is the "
        "same (key, prompt, type, target, options or scale). A question that changed has one entry per form.",
    )
    current = serializers.BooleanField(help_text="Whether the current rubric version asks this question so.")
    kind = serializers.CharField(help_text="categorical, multi_label, ordinal or boolean (text has no agreement).")
    level_of_measurement = serializers.CharField(help_text="The distance alpha uses: nominal or ordinal.")
    alpha = serializers.FloatField(
        allow_null=True, help_text="Krippendorff's alpha; null when undefined, and for multi-label (see per_label)."
    )
    alpha_reason = serializers.CharField(allow_null=True)
    alpha_interval = serializers.FloatField(
        allow_null=True,
        help_text="Ordinal questions: Krippendorff's alpha with the interval distance (null otherwise).",
    )
    n_items = serializers.IntegerField(help_text="Units answered by at least two reviewers.")
    n_answers = serializers.IntegerField()
    n_reviewers = serializers.IntegerField()
    meaningful = serializers.BooleanField()
    pairs = PairAgreementSerializer(many=True)
    per_label = LabelAgreementSerializer(many=True)


class AgreementSerializer(serializers.Serializer[Any]):
    queue = serializers.IntegerField()
    rubric_version = serializers.IntegerField(help_text="The current rubric version.")
    min_items = serializers.IntegerField(help_text="Below this many units a figure is marked not meaningful.")
    questions = QuestionAgreementSerializer(
        many=True, help_text="The current version's questions in order, then the older forms of changed questions."
    )
