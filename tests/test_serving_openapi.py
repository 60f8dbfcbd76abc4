"""Property-based requests generated from the server's own OpenAPI schema (schemathesis): never a 5xx."""

import schemathesis
from hypothesis import HealthCheck, settings

from serving.app import create_app
from serving.settings import ServerSettings

schema = schemathesis.openapi.from_asgi("/openapi.json", create_app(ServerSettings()))


@schema.parametrize()
@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
def test_no_server_errors(case):
    response = case.call()
    assert response.status_code < 500, (case.method, case.path, response.text[:500])
    # Whatever was sent, a 4xx names what was wrong.
    if 400 <= response.status_code < 500:
        assert response.json()["detail"]
