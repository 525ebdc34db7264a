"""The conversation filters on the export endpoint (``ExportFilter``)."""

from __future__ import annotations

import django_filters

from chats.filters.conversations import ConversationFilter


class ExportFilter(ConversationFilter):
    """The conversation filters on the export endpoint, where `format` names the output: the filter on the format
    a conversation arrived in is spelled `input_format` there."""

    @classmethod
    def get_filters(cls) -> dict[str, django_filters.Filter]:
        renamed = {"format": "input_format"}
        return {renamed.get(name, name): filter_ for name, filter_ in super().get_filters().items()}
