"""What keeps one client from slowing another, or the server: the outer guard before any route (token, body size and
time, request rate; ``guard``), the HTTP head's time limit (``http_protocol``), bodies read off the event loop
(``bodies``), a client's leaving noticed (``disconnect``), slots shared fairly between requests (``fair_slots``), the
judge's cost known before a call is sent (``judge_cost``), an answer bounded by its request (``answers``), and work
in worker processes that can be stopped at a deadline (``worker_processes``: images in ``image_workers``, large
``/v1/score`` requests in ``score_workers``).
"""
