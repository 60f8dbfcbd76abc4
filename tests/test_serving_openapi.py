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


def test_bodies_read_off_the_event_loop_are_still_in_the_schema_and_every_reference_resolves():
    import json
    import re

    document = create_app(ServerSettings()).openapi()
    bodies = {path: document["paths"][path]["post"]["requestBody"]["content"]["application/json"]["schema"]["$ref"]
              for path in ("/v1/score", "/get_reward")}  # fmt: skip
    assert bodies == {"/v1/score": "#/components/schemas/ScoreRequest",
                      "/get_reward": "#/components/schemas/RewardRequest"}  # fmt: skip
    schemas = document["components"]["schemas"]
    assert "rubric" in schemas["Instance"]["properties"]
    assert set(re.findall(r"#/components/schemas/([\w-]+)", json.dumps(document))) <= set(schemas)
