"""A review page for an index: look at its clusters, judge pairs, tune the thresholds, try a search.

Layers: above `esdedup.api` and `esdedup.quality`; it reads through the `Store` protocol and the
library's public functions, and writes only its labels file (`esdedup.review.labels`, the format the
evaluation reads). Start it with `Review` (what the pages show), `create_app` (the ASGI app) and `Server`
(uvicorn, on the loopback address unless a token guards it).
"""
from esdedup.review.app import create_app
from esdedup.review.pages import Review
from esdedup.review.serve import Server, check_listen, new_token

__all__ = ["Review", "Server", "check_listen", "create_app", "new_token"]
