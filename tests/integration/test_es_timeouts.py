"""A request that outlasts its timeout on a reachable node is one error that says so and names the longer
timeout (not "cannot reach Elasticsearch"), and the aggregations that read a whole index wait longer than a
bulk request does."""
from __future__ import annotations

import elasticsearch
import pytest
from elastic_transport import ApiResponseMeta, HttpHeaders, NodeConfig
from esdedup_cli.common import error_line

from esdedup.errors import ConnectionFailed, RequestTimedOut
from esdedup.es.connect import AGGREGATION_TIMEOUT, aggregation_timeout
from esdedup.es.errors import es_errors


def test_a_request_that_outlasts_its_timeout_is_request_timed_out_naming_the_longer_timeout(es_client) -> None:
    """The node answers a health request that waits for nodes it does not have only after its own 3 s: the
    client's 0.5 s run out while the node is there."""
    slow = es_client.options(request_timeout=0.5, max_retries=1, retry_on_timeout=True)
    with pytest.raises(RequestTimedOut) as err, es_errors("waiting for fifty nodes"):
        slow.cluster.health(wait_for_nodes="50", timeout="3s")
    assert not isinstance(err.value, ConnectionFailed) and err.value.exit_code == 3
    line = error_line(err.value)
    assert line.startswith("Error: waiting for fifty nodes: no answer within the request timeout")
    assert "cannot reach" not in line and "--es-timeout" in line and "ESDEDUP_ES_TIMEOUT" in line


def test_the_node_cancelling_a_request_whose_connection_closed_is_the_same_error() -> None:
    """What an 8.19 node answered a `dups --partition` of ten million documents, whose aggregation's first
    attempt outlasted the 30 s default: the retry waited on the same field's ordinals, which the first
    attempt's cancellation failed."""
    reason = ("task cancelled [http channel [Netty4HttpChannel{localAddress=/127.0.0.1:9700, "
              "remoteAddress=/127.0.0.1:56822}] closed]")
    body = {"error": {"root_cause": [{"type": "task_cancelled_exception", "reason": reason}],
                      "type": "task_cancelled_exception", "reason": reason}, "status": 400}
    meta = ApiResponseMeta(status=400, http_version="1.1", headers=HttpHeaders(), duration=31.0,
                           node=NodeConfig("http", "127.0.0.1", 9700))
    with pytest.raises(RequestTimedOut, match="band aggregation: no answer within the request timeout"), \
            es_errors("band aggregation"):
        raise elasticsearch.BadRequestError(message=reason, meta=meta, body=body)
    other = {"error": {"type": "illegal_argument_exception", "reason": "unknown field [x]"}, "status": 400}
    with pytest.raises(Exception, match="answered 400: unknown field") as err, es_errors("search"):
        raise elasticsearch.BadRequestError(message="unknown field", meta=meta, body=other)
    assert not isinstance(err.value, RequestTimedOut)


def test_whole_index_aggregations_wait_at_least_ten_minutes_and_a_longer_setting() -> None:
    assert AGGREGATION_TIMEOUT == 600.0
    assert aggregation_timeout(30.0) == 600.0 and aggregation_timeout(None) == 600.0
    assert aggregation_timeout(1800.0) == 1800.0
