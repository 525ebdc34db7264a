"""The peer comparison's tasks: P5's documents as Label Studio tasks, built without Label Studio or a network."""

from __future__ import annotations

import json
import re

import pytest

from bench.peers import (
    LABEL_CONFIG,
    PER_REQUEST,
    import_bodies,
    message_count,
    p5_documents,
    per_request_for,
    task_of,
)


def test_a_p5_document_becomes_a_task_whose_chat_reads_its_messages():
    document = p5_documents(1, 0)[0]

    task = task_of(document)

    chat = re.search(r'<Chat name="(\w+)" value="\$(\w+)"', LABEL_CONFIG)
    assert chat is not None
    assert task == {"data": document}
    assert task["data"][chat.group(2)] == document["messages"]  # tool calls and tool results included
    assert {"tool"} <= {message["role"] for message in task["data"][chat.group(2)]}
    assert re.search(rf'toName="{chat.group(1)}"', LABEL_CONFIG)


def test_a_document_without_messages_is_refused():
    with pytest.raises(ValueError, match="messages"):
        task_of({"chat_id": "x", "main_messages": []})


def test_import_bodies_hold_every_document_once_in_order():
    documents = p5_documents(7, 1)

    bodies = import_bodies(documents, per_request=3)

    tasks = [task for body in bodies for task in json.loads(body)]
    assert [len(json.loads(body)) for body in bodies] == [3, 3, 1]
    assert [task["data"]["chat_id"] for task in tasks] == [d["chat_id"] for d in documents]
    assert message_count(documents) == sum(len(task["data"]["messages"]) for task in tasks)


def test_the_same_run_gives_both_sides_the_same_documents_and_runs_differ():
    assert p5_documents(3, 0) == p5_documents(3, 0)
    assert p5_documents(3, 0) != p5_documents(3, 1)


def test_bodies_are_p5s_500_documents_and_smaller_only_when_a_client_would_have_none():
    assert per_request_for(2000, [1, 4]) == PER_REQUEST == 500
    assert per_request_for(200, [1, 4]) == 50
    assert per_request_for(3, [1, 4]) == 1
