"""The vocabulary both directions share: the canonical dataclasses, OpenAI-style messages, timestamps, format keys."""
