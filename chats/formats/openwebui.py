"""What Open WebUI's parser and exporter both know of its documents: the message keys the format defines, where a
rating and the chat's other keys go, and its inline reasoning blocks, read and written.

Reasoning is inlined in an assistant's content as ``<details type="reasoning" ...>`` blocks, a ``<summary>`` line
and the reasoning quoted with ``> `` (HTML-escaped by newer versions).
"""

from __future__ import annotations

import html

# The message keys read into fields (an `annotation` that is no rating stays in extra).
MESSAGE_KEYS = frozenset({"id", "parentId", "childrenIds", "role", "content", "timestamp", "files"})
ANNOTATION_KEY = "annotation"
METADATA_CHAT_KEY = "chat"
RATINGS = (1, -1)

REASONING_OPEN = '<details type="reasoning"'
_CLOSE = "</details>"
_LINE_CLOSE = "\n" + _CLOSE
_SUMMARY_OPEN = "<summary>"
_SUMMARY_CLOSE = "</summary>"
_ESCAPED_QUOTE = "&gt;"


def split_reasoning(text: str) -> tuple[str, str]:
    """Split Open WebUI's ``<details type="reasoning">`` blocks from an answer: (answer, reasoning).

    A block closes at the first ``</details>`` that starts a line (its quoted lines start with ``>``, so none
    can), else at the first ``</details>``; a block never closed (a reply cut off while thinking) runs to the
    end. The newline after a block goes with it. Linear time: each search starts where the last one ended,
    and a search that found nothing is not repeated.
    """
    if REASONING_OPEN not in text:
        return text, ""
    answer: list[str] = []
    reasoning: list[str] = []
    position = 0
    line_close = plain_close = 0  # where the next closing tag is (-1: there is none), from earlier searches
    while True:
        start = text.find(REASONING_OPEN, position)
        if start < 0:
            answer.append(text[position:])
            break
        tag_end = text.find(">", start + len(REASONING_OPEN))
        if tag_end < 0:  # an opening tag cut off: not a block
            answer.append(text[position:])
            break
        answer.append(text[position:start])
        body_start = tag_end + 1
        if 0 <= line_close < body_start:
            line_close = text.find(_LINE_CLOSE, body_start)
        if line_close >= 0:
            body_end, after = line_close, line_close + len(_LINE_CLOSE)
        else:
            if 0 <= plain_close < body_start:
                plain_close = text.find(_CLOSE, body_start)
            body_end = plain_close if plain_close >= 0 else len(text)
            after = body_end + len(_CLOSE) if plain_close >= 0 else len(text)
        body = text[body_start:body_end]
        thought = _unquote(body if body_end < len(text) else body.rstrip("\n"))
        if thought:
            reasoning.append(thought)
        position = after + 1 if text.startswith("\n", after) else after
    return "".join(answer), "\n\n".join(reasoning)


def _unquote(body: str) -> str:
    """The reasoning inside a block: the ``<summary>`` line dropped, ``> `` taken off each line."""
    body = body.removeprefix("\n")
    if body.startswith(_SUMMARY_OPEN):
        summary_end = body.find(_SUMMARY_CLOSE)
        if summary_end >= 0:
            body = body[summary_end + len(_SUMMARY_CLOSE) :].removeprefix("\n")
    lines = body.split("\n")
    if not any(line.startswith(">") for line in lines) and any(line.startswith(_ESCAPED_QUOTE) for line in lines):
        lines = html.unescape(body).split("\n")  # newer versions escape the quoted reasoning
    return "\n".join(
        line[2:] if line.startswith("> ") else line[1:] if line.startswith(">") else line for line in lines
    )


def quote_reasoning(reasoning: str) -> str:
    """A reasoning block as Open WebUI writes one (without a duration, which the canonical form does not keep)."""
    quoted = "\n".join(f"> {line}" for line in reasoning.split("\n"))
    return f'{REASONING_OPEN} done="true">\n{_SUMMARY_OPEN}Thought{_SUMMARY_CLOSE}\n{quoted}{_LINE_CLOSE}\n'
