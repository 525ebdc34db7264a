"""The FilterSets, one module each: the conversations' (``conversations``, and the export endpoint's variant in
``exports``), the API's feedback filters (``feedback``) and the audit log's (``audit``); the fields they share
(``fields``), the model-setting parameter (``model_setting``) and the model-call filters (``model_calls``).

The list page's cached filter choices are a selector (``chats.selectors.filter_choices``); full-text search is in
``chats.selectors.search``.
"""
