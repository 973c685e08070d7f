#!/usr/bin/env python3
"""A stand-in for inferd's repository endpoints, for testing what inferctl sends.

Usage: fake_repository_server.py PORT_FILE LOG_FILE.  Listens on 127.0.0.1, port 0,
writes the port to PORT_FILE, and appends one JSON line per request to LOG_FILE:
{"method", "path", "body"}.  Answers: POST /v2/repository/index a fixed index;
POST /v2/repository/models/bad/load 400 with an error; other loads 200 with an
empty body (as Triton answers); unloads 200 {}; anything else 404.
"""

import http.server
import json
import sys

INDEX = [{"name": "fashion-mlp", "version": "2", "state": "READY", "reason": ""},
         {"name": "broken", "state": "UNAVAILABLE", "reason": "model.onnx: truncated"}]


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def reply(self, status, body):
        data = body.encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self):
        n = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(n).decode()
        with open(sys.argv[2], "a") as f:
            f.write(json.dumps({"method": "POST", "path": self.path, "body": body}) + "\n")
        if self.path == "/v2/repository/index":
            self.reply(200, json.dumps(INDEX))
        elif self.path == "/v2/repository/models/bad/load":
            self.reply(400, json.dumps({"error": "failed to load 'bad': bad/1/model.onnx: truncated"}))
        elif self.path.startswith("/v2/repository/models/") and self.path.endswith("/load"):
            self.reply(200, "")
        elif self.path.startswith("/v2/repository/models/") and self.path.endswith("/unload"):
            self.reply(200, "{}")
        else:
            self.reply(404, json.dumps({"error": "no route " + self.path}))

    do_GET = do_POST


def main():
    srv = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    with open(sys.argv[1] + ".tmp", "w") as f:
        f.write(str(srv.server_address[1]))
    import os
    os.rename(sys.argv[1] + ".tmp", sys.argv[1])
    srv.serve_forever()


if __name__ == "__main__":
    main()
