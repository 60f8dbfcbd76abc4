"""Server settings (YAML < environment < command line) and the client's retry rules (mock transport)."""

import httpx
import pytest
from pydantic import ValidationError

from serving.client import RewardClient, RewardServerError
from serving.settings import ServerSettings

SCORED = {"groups": [{"id": "g", "rewards": [1.0], "records": [], "error": None, "line": None}]}


def test_precedence_yaml_env_overrides(tmp_path, monkeypatch):
    config = tmp_path / "serve.yaml"
    config.write_text("port: 9001\nexposure: vlm\nmax_groups: 10\n")
    monkeypatch.setenv("GENRM_EXPOSURE", "unlimited")
    settings = ServerSettings.load(config, max_groups=20, port=None)
    assert (settings.port, settings.exposure, settings.max_groups) == (9001, "unlimited", 20)
    assert ServerSettings.load(None).port == 8000


def test_invalid_settings_name_the_field(tmp_path):
    config = tmp_path / "serve.yaml"
    config.write_text("prot: 9001\n")
    with pytest.raises(ValidationError, match="prot"):
        ServerSettings.load(config)
    with pytest.raises(ValidationError, match="port"):
        ServerSettings(port=70000)
    with pytest.raises(ValueError, match="config file not found"):
        ServerSettings.load(tmp_path / "absent.yaml")


def test_open_binding_needs_a_key():
    with pytest.raises(ValidationError, match="needs an api_key"):
        ServerSettings(host="0.0.0.0")
    assert ServerSettings(host="0.0.0.0", api_key="k").host == "0.0.0.0"
    assert ServerSettings(host="::1").host == "::1" and ServerSettings(host="localhost").host == "localhost"


def _client(handler, **kwargs):
    return RewardClient("http://judge", transport=httpx.MockTransport(handler), backoff_s=0.001, **kwargs)


def test_client_retries_5xx_then_succeeds():
    calls = []

    def handler(request):
        calls.append(request)
        if len(calls) < 3:
            return httpx.Response(503, json={"detail": "warming up"}, headers={"Retry-After": "0"})
        return httpx.Response(200, json=SCORED)

    with _client(handler) as client:
        assert client.score([{"id": "g"}])[0].rewards == [1.0]
    assert len(calls) == 3


def test_client_retries_connection_errors_and_gives_up():
    calls = []

    def handler(request):
        calls.append(request)
        raise httpx.ConnectError("refused", request=request)

    with _client(handler, retries=2) as client, pytest.raises(RewardServerError, match="after 3 attempts"):
        client.score([{"id": "g"}])
    assert len(calls) == 3


def test_client_does_not_retry_a_bad_request():
    calls = []

    def handler(request):
        calls.append(request)
        return httpx.Response(422, json={"detail": [{"loc": ["body", "groups", 0, "id"], "msg": "bad"}]})

    with _client(handler) as client, pytest.raises(RewardServerError) as caught:
        client.score([{"id": "g"}])
    assert len(calls) == 1 and caught.value.status == 422 and caught.value.detail[0]["loc"][-1] == "id"


def test_client_reports_a_persistent_503_and_sends_the_token():
    seen = []

    def handler(request):
        seen.append(request.headers.get("authorization"))
        return httpx.Response(503, json={"detail": "down"}, headers={"Retry-After": "0"})

    with _client(handler, retries=1, api_key="k") as client:
        with pytest.raises(RewardServerError) as caught:
            client.score([{"id": "g"}])
        assert caught.value.status == 503 and seen == ["Bearer k", "Bearer k"]


def test_health_503_is_an_answer_not_retried():
    calls = []

    def handler(request):
        calls.append(request)
        body = {"status": "unavailable", "backend": "sglang", "backend_reachable": False, "detail": "refused"}
        return httpx.Response(503, json=body)

    with _client(handler) as client:
        health = client.health()
    assert health.backend_reachable is False and len(calls) == 1
