#!/usr/bin/env python3
"""torch_http_server.py: the do-it-yourself alternative to inferd — PyTorch behind http.server.

A ThreadingHTTPServer (HTTP/1.1, keep-alive) around the demo model run by PyTorch, taking
the same KServe v2 JSON body inferd takes:

    POST /v2/models/<model>/infer   {"inputs":[{"name":..,"shape":[R,784],"datatype":"FP32","data":[..]}]}
    GET  /v2/models/<model>         metadata, so inferd-bench --protocol=http can load it
    GET  /v2/health/ready

    torch_http_server.py --port 0 --port-file /tmp/port [--device cuda]

Each request runs alone (no batching across requests), as a hand-rolled server would.
"""

import argparse
import json
import os
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_peer  # noqa: E402  (the model loader lives there)

MAX_BODY = 16 * 1024 * 1024


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "torch_http_server"
    # Headers and body go out in two writes: without this, Nagle meets delayed ACK (40 ms).
    disable_nagle_algorithm = True

    def log_message(self, fmt, *args):
        pass

    def reply(self, status, obj):
        body = json.dumps(obj, separators=(",", ":")).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        srv = self.server
        if self.path == "/v2/health/ready" or self.path == "/v2/health/live":
            return self.reply(200, {"ready": True})
        if self.path == f"/v2/models/{srv.name}":
            return self.reply(200, {
                "name": srv.name, "versions": ["1"], "platform": "pytorch",
                "inputs": [{"name": srv.input_name, "datatype": "FP32", "shape": [-1, srv.width]}],
                "outputs": [{"name": srv.output_name, "datatype": "FP32",
                             "shape": [-1, srv.out_width]}]})
        return self.reply(404, {"error": "not found"})

    def do_POST(self):
        srv = self.server
        try:
            length = int(self.headers.get("Content-Length", ""))
        except ValueError:
            return self.reply(411, {"error": "Content-Length required"})
        if length < 0 or length > MAX_BODY:
            self.close_connection = True
            return self.reply(413, {"error": "body too large"})
        raw = self.rfile.read(length)
        if self.path != f"/v2/models/{srv.name}/infer":
            return self.reply(404, {"error": "not found"})
        try:
            inp = json.loads(raw)["inputs"][0]
            x = srv.torch.tensor(inp["data"], dtype=srv.torch.float32).reshape(inp["shape"])
            if x.dim() != 2 or x.shape[1] != srv.width:
                raise ValueError(f"shape must be [rows, {srv.width}]")
        except (ValueError, KeyError, IndexError, TypeError, RuntimeError) as e:
            return self.reply(400, {"error": str(e)})
        with srv.torch.inference_mode():
            y = srv.model(x.to(srv.device)).cpu()
        self.reply(200, {"model_name": srv.name, "model_version": "1", "outputs": [{
            "name": srv.output_name, "datatype": "FP32", "shape": list(y.shape),
            "data": y.flatten().tolist()}]})


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model-dir", default=torch_peer.DEFAULT_MODEL)
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    ap.add_argument("--threads", type=int, default=os.cpu_count(), help="torch.set_num_threads")
    ap.add_argument("--port", type=int, default=8002, help="0: any free port")
    ap.add_argument("--port-file", help="write the bound port here once listening")
    args = ap.parse_args()
    try:
        import torch
    except ImportError:
        print("torch_http_server.py: PyTorch is not installed (Debian: python3-torch)", file=sys.stderr)
        return 77
    torch.set_num_threads(max(1, args.threads))
    model, desc, width = torch_peer.load_model(args.model_dir, args.device)
    srv = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    srv.daemon_threads = True
    srv.torch, srv.model, srv.device, srv.width = torch, model, args.device, width
    srv.name = desc["name"]
    srv.input_name = desc["inputs"][0]["name"]
    srv.output_name = desc["outputs"][0]["name"]
    with torch.inference_mode():
        srv.out_width = int(model(torch.zeros(1, width, device=args.device)).shape[1])
    port = srv.server_address[1]
    if args.port_file:
        tmp = args.port_file + ".tmp"
        with open(tmp, "w") as f:
            f.write(f"{port}\n")
        os.replace(tmp, args.port_file)
    print(f"torch_http_server.py: serving {srv.name} on 127.0.0.1:{port} ({args.device})",
          file=sys.stderr, flush=True)
    try:
        srv.serve_forever()
    except KeyboardInterrupt:
        pass
    srv.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
