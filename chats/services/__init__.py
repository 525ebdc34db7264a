"""Every write with side effects, one module per concern. Views, serializers, forms, commands and the admin
translate input and output and call these functions; nothing else writes conversations, feedback, keys or
audit events, and every write here is audited (see `audit`).

- `audit`: the trail itself, and `audited`/`audited_delete`, the one way to change a row outside a service;
- `sources`: sources and API keys; `labels`: feedback labels;
- `documents` -> `ingestion` -> `plan_writer` / `bulk_writer`, with `receipts`: a document in, a conversation out;
  `ingest_queue`: the same, later, by a worker (an asynchronous bulk request);
- `branches`: the active branch; `search`: the search index;
- `feedback`: reviewers' feedback; `review`: a conversation's review status; `exports`: recorded exports;
- `signin`: unlocking a user name locked out of sign-in.

Domain errors are in `chats.errors`; reads are in `chats.selectors`.
"""
