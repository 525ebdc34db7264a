"""Export a filtered set of conversations as NDJSON in any format, or as training JSONL, with a progress bar.

The filters are the API's and the review pages' (`chats.filters.conversations.ConversationFilter`);
`--input-format` filters on the format a conversation came in, since `--format` names the output.
"""

from __future__ import annotations

import sys
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.http import QueryDict
from tqdm import tqdm

from chats.export import FORMATS
from chats.filters.conversations import ConversationFilter
from chats.models import Conversation
from chats.selectors.exports import TRAINING
from chats.services.audit import CommandActor
from chats.services.exports import conversations_export_stream

RENAMED = {"format": "input_format"}


def _option(name: str) -> str:
    return RENAMED.get(name, name)


class Command(BaseCommand):
    help = "Export conversations (NDJSON in a format, or training JSONL) selected by the list filters."

    def add_arguments(self, parser: CommandParser) -> None:
        what = parser.add_mutually_exclusive_group(required=True)
        what.add_argument("--format", choices=FORMATS, help="Export each conversation in this format.")
        what.add_argument("--training", action="store_true", help="Training JSONL (OpenAI chat fine-tuning).")
        parser.add_argument("--output", "-o", help="The file to write (default: standard output).")
        parser.add_argument(
            "--envelope",
            action="store_true",
            help="Wrap each document with its uuid, omissions and injection policy verdicts.",
        )
        filters = parser.add_argument_group("filters")
        for name, filter_ in ConversationFilter.base_filters.items():
            option = _option(name)
            filters.add_argument(f"--{option.replace('_', '-')}", dest=f"filter_{option}", help=str(filter_.label))

    def handle(self, *args: Any, **options: Any) -> None:
        fmt = TRAINING if options["training"] else options["format"]
        data = QueryDict(mutable=True)
        for name in ConversationFilter.base_filters:
            value = options.get(f"filter_{_option(name)}")
            if value is not None:
                data[name] = value
        filterset = ConversationFilter(data, queryset=Conversation.objects.all())
        if not filterset.is_valid():
            problems = "; ".join(
                f"--{_option(key).replace('_', '-')}: {' '.join(messages)}"
                for key, messages in filterset.errors.items()
            )
            raise CommandError(f"invalid filters: {problems}")
        queryset = filterset.qs
        count = queryset.count()
        lines = conversations_export_stream(
            actor=CommandActor("export_conversations"),
            queryset=queryset,
            format=fmt,
            filters={_option(key): value for key, value in data.items()},
            count=count,
            envelope=options["envelope"],
        )
        progress = tqdm(total=count, unit="conv", file=sys.stderr, disable=None)
        output = open(options["output"], "wb") if options["output"] else sys.stdout.buffer  # noqa: SIM115
        try:
            for line in lines:
                output.write(line)
                progress.update(1)
        finally:
            progress.close()
            if options["output"]:
                output.close()
            else:
                output.flush()
        if options["output"]:
            self.stderr.write(f"{count} conversations written to {options['output']}")
