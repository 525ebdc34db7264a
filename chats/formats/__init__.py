"""The vocabulary the parsers (`chats.ingest`) and the exporters (`chats.export`) share, so that neither imports
the other: the canonical dataclasses (``canonical``), OpenAI-style messages built from them (``openai_messages``),
timestamps as the formats write them (``times``), and the keys and syntax of a format that both directions read
and write (``chat_graph``, ``openwebui``).

Pure Python: no Django, no database.
"""
