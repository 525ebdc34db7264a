"""python manage.py seed_demo: about fifty varied demo conversations and some reviewer feedback.

Everything goes through the ingest and feedback services, so running it twice changes nothing.
"""

from __future__ import annotations

from django.contrib.auth.models import Group, User
from django.core.management.base import BaseCommand, CommandParser
from django.db import transaction

from chats.demo import example_documents, generator
from chats.ingest.files import iter_items
from chats.models import Conversation, FeedbackOrigin, Label, Message
from chats.services.audit import CommandActor, audited
from chats.services.feedback import feedback_submit
from chats.services.ingestion import conversation_ingest
from chats.services.labels import label_create
from chats.services.review import conversation_set_review_status
from chats.services.sources import source_get_or_create

DEMO_SOURCE = "demo"
LABELS = {
    "helpful": "The answer solved the user's problem.",
    "hallucination": "States facts that are not supported by the injected artifacts or tools.",
    "wrong-tool": "Called a tool that does not fit the question.",
    "unsafe-advice": "Advice that could harm people, samples or equipment.",
    "formatting": "Hard to read: structure, units or tables.",
    "outdated-protocol": "Relies on an old version of a protocol.",
}


class Command(BaseCommand):
    help = "Load demo conversations (every format, tools, injections, branches, feedback). Idempotent."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--count", type=int, default=34, help="Generated conversations (the example documents come on top)."
        )

    def handle(self, *args: object, count: int, **options: object) -> None:
        actor = CommandActor("seed_demo")
        source, _ = source_get_or_create(name=DEMO_SOURCE, actor=actor)
        existing = set(Label.objects.values_list("name", flat=True))
        for name, description in LABELS.items():
            if name not in existing:
                label_create(name=name, description=description, actor=actor)
        outcomes: dict[str, int] = {}
        for _, document in generator.generate(count, seed=2026):
            result = conversation_ingest(source=source, document=document, actor=actor)
            outcomes[result.outcome] = outcomes.get(result.outcome, 0) + 1
        for path in example_documents():
            for item in iter_items(path):
                result = conversation_ingest(source=source, document=item.document, actor=actor)
                outcomes[result.outcome] = outcomes.get(result.outcome, 0) + 1
        self._demo_feedback()
        summary = ", ".join(f"{n} {outcome}" for outcome, n in sorted(outcomes.items()))
        self.stdout.write(f"Demo data in source {DEMO_SOURCE!r}: {summary}.")

    @transaction.atomic
    def _demo_feedback(self) -> None:
        stored = User.objects.filter(username="demo-reviewer").first()
        with audited(
            stored or User(username="demo-reviewer", first_name="Demo"), actor=CommandActor("seed_demo")
        ) as reviewer:
            if stored is None:
                reviewer.set_unusable_password()
                reviewer.save()
            reviewer.groups.add(Group.objects.get(name="Reviewers"))
        labels = {label.name: label for label in Label.objects.all()}
        conversations = list(Conversation.objects.filter(source__name=DEMO_SOURCE).order_by("id")[:12])
        for number, conversation in enumerate(conversations):
            answer = (
                Message.objects.filter(conversation=conversation, role="assistant", on_active_path=True)
                .exclude(text="")
                .order_by("-depth")
                .first()
            )
            if answer is None or conversation.feedback.filter(origin=FeedbackOrigin.REVIEWER).exists():
                continue
            good = number % 3 != 1
            feedback_submit(
                author=reviewer,
                conversation=conversation,
                message=answer,
                score=1 if good else -1,
                labels=[labels["helpful"]] if good else [labels["hallucination"]],
                comment="Clear and grounded in the protocol." if good else "Cites a step the protocol does not have.",
                correction=""
                if good
                else "Step 4 of the injected protocol does not mention an extension time; "
                "check the protocol's current version before changing it.",
            )
            if number % 4 == 0:
                conversation_set_review_status(actor=reviewer, conversation=conversation, status="reviewed")
