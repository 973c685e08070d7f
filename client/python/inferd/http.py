"""The HTTP client: the shared-memory client's methods over KServe v2 (JSON or binary tensors).

For callers on another machine, or where libinferd is not installed.  Only
the standard library (http.client, one keep-alive connection per thread)
and numpy.  Binary tensors (the "binary_tensor_data" extension) are the
default: raw little-endian bytes after a JSON header, no number formatting.

Threads: a Client may be shared; each thread uses its own connection.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import http.client
import json
import threading
import urllib.parse
from typing import Any, Dict, List, Optional, Tuple, Union

import numpy as np

from ._inputs import Inputs, name_inputs
from .errors import ConnectFailed, InferdError, InvalidRequest, ProtocolError, from_http
from .metadata import ModelMetadata, TensorSpec, datatype_of, dtype_of

Result = Union[np.ndarray, Dict[str, np.ndarray]]

HEADER_LENGTH = "Inference-Header-Content-Length"


class Client:
    """An inferd (or any KServe v2) server over HTTP."""

    def __init__(self, url: str = "http://127.0.0.1:8000", *, binary: bool = True,
                 timeout: float = 60.0, max_workers: int = 8) -> None:
        """url: http://host[:port][/prefix]; binary: send and ask for binary tensors
        (False: JSON numbers); timeout: seconds per HTTP exchange; max_workers:
        threads (each with its own connection) that run submit()'s requests.
        """
        u = urllib.parse.urlsplit(url if "://" in url else "http://" + url)
        if u.scheme != "http" or not u.hostname:
            raise ValueError("url %r: expected http://host[:port]" % url)
        self.url = url
        self.binary = binary
        self.timeout = timeout
        self._host, self._port = u.hostname, u.port or 80
        self._prefix = u.path.rstrip("/")
        self._local = threading.local()
        self._conns: List[http.client.HTTPConnection] = []
        self._lock = threading.Lock()
        self._meta: Dict[str, ModelMetadata] = {}
        self._max_workers = max_workers
        self._pool: Optional[concurrent.futures.ThreadPoolExecutor] = None
        self._closed = False

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        """Wait for submitted requests, then close every connection."""
        with self._lock:
            self._closed = True
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True)
        with self._lock:
            for c in self._conns:
                c.close()
            self._conns.clear()

    # --- one exchange ---

    def _conn(self) -> http.client.HTTPConnection:
        """This thread's keep-alive connection."""
        c = getattr(self._local, "conn", None)
        if c is None:
            c = http.client.HTTPConnection(self._host, self._port, timeout=self.timeout)
            with self._lock:
                if self._closed:
                    raise InferdError("the client is closed")
                self._conns.append(c)
            self._local.conn = c
        return c

    def _exchange(self, method: str, path: str, body: Optional[bytes] = None,
                  headers: Optional[Dict[str, str]] = None) -> Tuple[int, http.client.HTTPResponse, bytes]:
        """Send one request on this thread's connection; (status, response, body).

        A kept-alive connection the server closed meanwhile is reopened once
        (every request here is idempotent, inference included).
        """
        for attempt in (0, 1):
            c = self._conn()
            try:
                c.request(method, self._prefix + path, body=body, headers=headers or {})
                r = c.getresponse()
                data = r.read()
                if r.getheader("Connection", "").lower() == "close":
                    c.close()
                return r.status, r, data
            except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError) as e:
                c.close()
                if attempt == 1:
                    raise ConnectFailed("%s %s: %s" % (method, self.url + path, e)) from None
            except (OSError, http.client.HTTPException) as e:
                c.close()
                raise ConnectFailed("%s %s: %s" % (method, self.url + path, e)) from None
        raise AssertionError("unreachable")

    def _json(self, method: str, path: str) -> Any:
        """GET/POST path and decode its JSON answer; InferdError with the server's message."""
        status, _, data = self._exchange(method, path)
        if status != 200:
            raise from_http(status, _error_text(data, status))
        try:
            return json.loads(data)
        except ValueError as e:
            raise ProtocolError("%s: not JSON: %s" % (path, e)) from None

    # --- models ---

    def ready(self) -> bool:
        """True when the server answers 200 to /v2/health/ready."""
        return self._exchange("GET", "/v2/health/ready")[0] == 200

    def models(self) -> List[str]:
        """The names of the models the server serves (ready ones; the index also lists models that failed to load)."""
        return [m["name"] for m in self._json("GET", "/v2/models") if m.get("state", "READY") == "READY"]

    def metadata(self, model: str) -> ModelMetadata:
        """The model's inputs and outputs (max_batch_size and labels are not in KServe's metadata)."""
        d = self._json("GET", "/v2/models/" + urllib.parse.quote(model, safe=""))
        try:
            spec = lambda t: TensorSpec(t["name"], t["datatype"], tuple(int(x) for x in t["shape"]))
            meta = ModelMetadata(name=d["name"], inputs=[spec(t) for t in d["inputs"]],
                                 outputs=[spec(t) for t in d["outputs"]], platform=d.get("platform"))
        except (KeyError, TypeError, ValueError) as e:
            raise ProtocolError("model metadata of %r: unexpected answer (%r)" % (model, e)) from None
        with self._lock:
            self._meta[model] = meta
        return meta

    def _metadata(self, model: str) -> ModelMetadata:
        """The metadata, fetched once."""
        with self._lock:
            meta = self._meta.get(model)
        return meta if meta is not None else self.metadata(model)

    # --- the model repository (Triton's repository extension) ---

    def _post(self, path: str, doc: Any) -> bytes:
        """POST doc as JSON; the answer's body, or InferdError with the server's message."""
        body = json.dumps(doc, separators=(",", ":")).encode()
        status, _, data = self._exchange("POST", path, body, {"Content-Type": "application/json"})
        if not 200 <= status < 300:
            raise from_http(status, _error_text(data, status))
        return data

    def _forget(self, model: str) -> None:
        """Drop the cached metadata of model (a load or unload may change it)."""
        with self._lock:
            self._meta.pop(model, None)

    def load(self, model: str, config: Union[None, str, Dict[str, Any]] = None) -> None:
        """Load model from the server's repository, or reload it when it is loaded.

        config: None, or a JSON object (a dict, or its text) whose keys replace
        the model's model.json keys for this load, as Triton's load with a
        config does.  Raises InferdError with the server's reason when the
        load fails (the version that served before, if any, serves on).
        """
        doc: Dict[str, Any] = {}
        if config is not None:
            if isinstance(config, dict):
                text = json.dumps(config)
            elif isinstance(config, str):
                try:
                    parsed = json.loads(config)
                except ValueError as e:
                    raise InvalidRequest("config: not JSON: %s" % e) from None
                if not isinstance(parsed, dict):
                    raise InvalidRequest("config: must be a JSON object")
                text = config
            else:
                raise TypeError("config must be None, a dict or a JSON object text")
            doc = {"parameters": {"config": text}}
        self._forget(model)
        self._post("/v2/repository/models/%s/load" % urllib.parse.quote(model, safe=""), doc)

    def unload(self, model: str) -> None:
        """Unload model; requests already queued finish, later ones are refused."""
        self._forget(model)
        self._post("/v2/repository/models/%s/unload" % urllib.parse.quote(model, safe=""), {})

    def index(self) -> List[Dict[str, str]]:
        """The repository index: a dict per model (version) with "name", "version", "state", "reason"."""
        data = self._post("/v2/repository/index", {})
        try:
            doc = json.loads(data)
        except ValueError as e:
            raise ProtocolError("/v2/repository/index: not JSON: %s" % e) from None
        if not isinstance(doc, list) or not all(isinstance(e, dict) and "name" in e for e in doc):
            raise ProtocolError("/v2/repository/index: not a list of models")
        return [{"name": str(e["name"]), "version": str(e.get("version", "")),
                 "state": str(e.get("state", "")), "reason": str(e.get("reason", ""))} for e in doc]

    # --- arrays (plain numpy here: HTTP has no shared region) ---

    def empty(self, model: str, batch: int = 1, name: Optional[str] = None) -> Result:
        """Uninitialized input arrays for batch rows of model (one, or a dict by input name)."""
        meta = self._metadata(model)
        specs = [meta.input(name)] if name is not None else meta.inputs
        for s in specs:
            if -1 in s.dims:
                raise InvalidRequest("input %r of %r has variable dims %s: make it with empty_like() or "
                                     "array()" % (s.name, model, list(s.shape)))
        out = {s.name: np.empty((batch,) + s.dims, s.dtype) for s in specs}
        return next(iter(out.values())) if len(out) == 1 else out

    def empty_like(self, a: np.ndarray, dtype: Any = None) -> np.ndarray:
        """numpy.empty_like, for the same code on both clients."""
        return np.empty_like(a, dtype=dtype)

    def array(self, obj: Any, dtype: Any = None) -> np.ndarray:
        """numpy.array, for the same code on both clients."""
        return np.array(obj, dtype=dtype)

    # --- inference ---

    def infer(self, model: str, inputs: Inputs, *, out: Optional[Result] = None,
              binary: Optional[bool] = None, timeout_us: int = 0) -> Result:
        """Run inputs (one array, or a dict of named arrays) through model; the outputs.

        out gives arrays to copy the outputs into (one, or a dict by name), as
        the shared-memory client's out= does.  binary overrides the client's
        choice of binary tensors for this request.  Errors raise InferdError
        subclasses with the server's message.
        """
        meta = self._metadata(model)
        named = name_inputs(meta, inputs)
        use_binary = self.binary if binary is None else binary
        body, headers = _encode(meta, named, use_binary, timeout_us)
        path = "/v2/models/%s/infer" % urllib.parse.quote(model, safe="")
        status, r, data = self._exchange("POST", path, body, headers)
        if status != 200:
            raise from_http(status, _error_text(data, status))
        return _copy_out(_decode(r, data), out)

    def submit(self, model: str, inputs: Inputs, *, out: Optional[Result] = None,
               binary: Optional[bool] = None, timeout_us: int = 0) -> "concurrent.futures.Future[Result]":
        """infer() on one of max_workers threads; a Future of its result."""
        with self._lock:
            if self._closed:
                raise InferdError("the client is closed")
            if self._pool is None:
                self._pool = concurrent.futures.ThreadPoolExecutor(self._max_workers, "inferd-http")
            pool = self._pool
        return pool.submit(self.infer, model, inputs, out=out, binary=binary, timeout_us=timeout_us)

    async def infer_async(self, model: str, inputs: Inputs, *, out: Optional[Result] = None,
                          binary: Optional[bool] = None, timeout_us: int = 0) -> Result:
        """infer() for asyncio (on the submit() threads)."""
        return await asyncio.wrap_future(self.submit(model, inputs, out=out, binary=binary,
                                                     timeout_us=timeout_us))


def _copy_out(outs: Dict[str, np.ndarray], out: Optional[Result]) -> Result:
    """The outputs (one array, or a dict by name), written into out's arrays when given."""
    if out is not None:
        if isinstance(out, np.ndarray):
            if len(outs) != 1:
                raise InvalidRequest("out: the model has %d outputs (%s): pass a dict" % (
                    len(outs), ", ".join(outs)))
            out = {next(iter(outs)): out}
        unknown = [n for n in out if n not in outs]
        if unknown:
            raise InvalidRequest("out: no output %s in the answer" % ", ".join(unknown))
        for name, dst in out.items():
            src = outs[name]
            if dst.shape != src.shape or dst.dtype != src.dtype:
                raise InvalidRequest("out %r: shape %s %s, the answer is %s %s" % (
                    name, list(dst.shape), dst.dtype, list(src.shape), src.dtype))
            np.copyto(dst, src)
            outs[name] = dst
    return next(iter(outs.values())) if len(outs) == 1 else outs


def _error_text(data: bytes, status: int) -> str:
    """The server's {"error": ...} message, or the body itself."""
    try:
        return str(json.loads(data)["error"])
    except (ValueError, KeyError, TypeError):
        return data.decode(errors="replace").strip() or "HTTP status %d" % status


def _encode(meta: ModelMetadata, named: Dict[str, Any], binary: bool,
            timeout_us: int) -> Tuple[bytes, Dict[str, str]]:
    """The request body and headers: a JSON header, then (binary) the raw tensors."""
    tensors, raw = [], []
    for spec in meta.inputs:
        a = named[spec.name]
        if not isinstance(a, np.ndarray):
            a = np.asarray(a, dtype=spec.dtype)
        elif a.dtype != spec.dtype:
            try:
                a = a.astype(spec.dtype, casting="same_kind")
            except TypeError as e:
                raise InvalidRequest("input %r: %s" % (spec.name, e)) from None
        t: Dict[str, Any] = {"name": spec.name, "shape": list(a.shape), "datatype": datatype_of(a.dtype)}
        if binary:
            b = np.ascontiguousarray(a, dtype=a.dtype.newbyteorder("<")).tobytes()
            t["parameters"] = {"binary_data_size": len(b)}
            raw.append(b)
        else:
            t["data"] = a.ravel().tolist()
        tensors.append(t)
    req: Dict[str, Any] = {"inputs": tensors}
    params: Dict[str, Any] = {"binary_data_output": bool(binary)}
    if timeout_us:
        params["timeout_us"] = int(timeout_us)
    req["parameters"] = params
    header = json.dumps(req, separators=(",", ":")).encode()
    headers = {"Content-Type": "application/json"}
    if not binary:
        return header, headers
    headers = {"Content-Type": "application/octet-stream", HEADER_LENGTH: str(len(header))}
    return b"".join([header] + raw), headers


def _decode(r: http.client.HTTPResponse, data: bytes) -> Dict[str, np.ndarray]:
    """The outputs of an answer by name: JSON "data", or slices of the binary section."""
    hlen = r.getheader(HEADER_LENGTH)
    try:
        n = int(hlen) if hlen is not None else len(data)
        doc = json.loads(data[:n])
        outs: Dict[str, np.ndarray] = {}
        pos = n
        buf = bytearray(data) if len(data) > n else data  # writable arrays, as the JSON branch gives
        for t in doc["outputs"]:
            dtype = dtype_of(t["datatype"])
            shape = tuple(int(x) for x in t["shape"])
            size = (t.get("parameters") or {}).get("binary_data_size")
            if size is not None:
                if pos + size > len(data):
                    raise ValueError("output %r: %d binary bytes announced, %d left" % (t["name"], size, len(data) - pos))
                a = np.frombuffer(buf, dtype=dtype, count=size // dtype.itemsize, offset=pos).reshape(shape)
                pos += size
            else:
                a = np.array(t["data"], dtype=dtype).reshape(shape)
            outs[t["name"]] = a
    except (ValueError, KeyError, TypeError) as e:
        raise ProtocolError("unexpected inference answer: %s" % e) from None
    return outs
