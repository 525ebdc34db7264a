"""Every read the pages and the API share, one module per concern, each a fixed number of queries whatever the
size of the data. Selectors return typed objects (dataclasses, or querysets of models), never models with
attributes attached.

- `conversations`: the list's keyset pages and the review queue, and one conversation as the API shows it;
- `threads`: a conversation's thread as the review page shows it; `dashboard`: the home page's counts;
- `feedback`: feedback lists and what a feedback request names; `artifacts`: where an artifact was injected;
- `exports`: from the database back to the canonical form, for the exporters and the training JSONL.

Writes are in `chats.services`.
"""
