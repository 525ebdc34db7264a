import pytest
from tests import factories

@pytest.mark.django_db
def test_smoke(client, reviewer, source):
    c = factories.make_conversation(source, n_messages=8, branches=2)
    r = factories.make_record_qa(source)
    g = factories.make_chatgpt_branches(source)
    h = factories.make_hostile_conversation(source)
    factories.make_labels()
    client.force_login(reviewer)
    for url in ["/", "/conversations/", "/conversations/?q=PCR&has_tool_calls=true", c.get_absolute_url(), r.get_absolute_url(), g.get_absolute_url(), h.get_absolute_url(), "/conversations/next/"]:
        resp = client.get(url)
        print(url, resp.status_code, len(resp.content))
        assert resp.status_code in (200, 302), resp.content[:3000]
    open("/tmp/hostile.html","wb").write(client.get(h.get_absolute_url()).content)
    open("/tmp/record.html","wb").write(client.get(r.get_absolute_url()).content)
