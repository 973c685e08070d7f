"""The repository API of the HTTP client: load (with a config), unload, index.

What the client sends is checked against a stand-in server in this process; the
daemon tests run against the daemon test_python_client.sh started, and skip
when it has no load endpoint (a daemon built before model control).
"""

import http.server
import json
import threading

import numpy as np
import pytest

import inferd
from conftest import MODEL, close_to


class _Recorder(http.server.BaseHTTPRequestHandler):
    """Records (method, path, body) and answers like inferd's repository endpoints."""

    protocol_version = "HTTP/1.1"
    requests = []

    def log_message(self, *args):
        pass

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self.requests.append(("POST", self.path, json.loads(body) if body else None))
        if self.path == "/v2/repository/index":
            status, out = 200, json.dumps([{"name": "a", "version": "3", "state": "READY", "reason": ""},
                                           {"name": "b", "state": "UNAVAILABLE", "reason": "truncated"}])
        elif self.path.endswith("/bad/load"):
            status, out = 400, json.dumps({"error": "failed to load 'bad': truncated weights"})
        elif self.path.endswith("/missing/unload"):
            status, out = 404, json.dumps({"error": "unknown model 'missing'"})
        else:
            status, out = 200, ""
        data = out.encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture
def fake():
    _Recorder.requests = []
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    with inferd.http.Client("http://127.0.0.1:%d" % srv.server_address[1]) as c:
        yield c, _Recorder.requests
    srv.shutdown()
    srv.server_close()


def test_requests_sent(fake):
    c, seen = fake
    c.load("m")
    c.load("m", config={"max_batch_size": 8})
    c.load("m", config='{"dynamic_batching": {"max_queue_delay_us": 5}}')
    c.unload("m")
    assert seen[0] == ("POST", "/v2/repository/models/m/load", {})
    assert seen[1][:2] == ("POST", "/v2/repository/models/m/load")
    assert json.loads(seen[1][2]["parameters"]["config"]) == {"max_batch_size": 8}
    assert seen[2][2] == {"parameters": {"config": '{"dynamic_batching": {"max_queue_delay_us": 5}}'}}
    assert seen[3] == ("POST", "/v2/repository/models/m/unload", {})


def test_index_and_errors(fake):
    c, seen = fake
    assert c.index() == [{"name": "a", "version": "3", "state": "READY", "reason": ""},
                         {"name": "b", "version": "", "state": "UNAVAILABLE", "reason": "truncated"}]
    assert seen[-1] == ("POST", "/v2/repository/index", {})
    with pytest.raises(inferd.InvalidRequest, match="truncated weights"):
        c.load("bad")
    with pytest.raises(inferd.ModelNotFound, match="missing"):
        c.unload("missing")
    n = len(seen)
    with pytest.raises(inferd.InvalidRequest, match="JSON object"):
        c.load("m", config="[1]")
    with pytest.raises(inferd.InvalidRequest, match="not JSON"):
        c.load("m", config="{")
    with pytest.raises(TypeError):
        c.load("m", config=3)
    assert len(seen) == n, "a refused config was sent"


def test_daemon_index(http_client):
    entries = {e["name"]: e for e in http_client.index()}
    assert entries[MODEL]["state"] == "READY", entries


def test_daemon_reload_unload(http_client, rng, reference):
    try:
        http_client.load(MODEL)          # a load of a loaded model reloads it
    except inferd.InferdError as e:
        if e.status in (404, 405):
            pytest.skip("the daemon has no repository load endpoint: %s" % e)
        raise
    x = rng.random((2, 784), dtype=np.float32)
    assert close_to(http_client.infer(MODEL, x), reference(x))
    try:
        http_client.unload(MODEL)
        state = {e["name"]: e for e in http_client.index()}.get(MODEL, {}).get("state")
        assert state != "READY"
        with pytest.raises(inferd.InferdError):
            http_client.infer(MODEL, x)
    finally:
        http_client.load(MODEL)
    assert close_to(http_client.infer(MODEL, x), reference(x))
