"""The review pages. Views translate requests into selector reads and service calls, and nothing more.

Every page needs a signed-in reviewer, auditor or staff member; only reviewers (and superusers) write. Writes
answer an htmx request with the re-rendered partial, and a plain form post with a redirect back to the same
place (the page's query string, so the list filters, and the message's anchor).

One module per family of pages; `common` holds what they share.
"""
