"""The reward server's routes, one module per concern; each gets the server's state through ``serving.state.State``.

- :mod:`.score`: ``POST /v1/score`` (groups in the reward method's instance model);
- :mod:`.verify`: ``POST /v1/verify`` (one verifier call pair);
- :mod:`.reward`: ``POST /get_reward`` (OpenRLHF's remote reward protocol);
- :mod:`.health`: ``GET /health`` and ``GET /metrics``.
"""
