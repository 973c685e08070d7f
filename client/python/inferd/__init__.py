"""inferd: the Python client of the inferd inference daemon.

Over shared memory (the fast door, on the daemon's machine), through the
installed libinferd::

    import inferd
    with inferd.connect("/run/inferd/inferd.sock") as c:
        x = c.empty("fashion-mlp", 1)        # a numpy array inside the shared region
        x[:] = image                         # no copy on the way to the daemon
        logits = c.infer("fashion-mlp", x)   # the output lives in the region too

Over HTTP (KServe v2, JSON or binary tensors), with the same methods::

    c = inferd.http.Client("http://127.0.0.1:8000")

Both clients are safe to share between threads; both have submit() (a
concurrent.futures.Future) and infer_async() (asyncio).  Failures raise
InferdError subclasses carrying the daemon's message.
"""

from __future__ import annotations

from typing import Optional

from . import http
from ._lib import LibraryNotFound
from .errors import (Busy, Cancelled, Closed, ConnectFailed, InferdError, InternalError,
                     InvalidRequest, ModelNotFound, NoSpace, PermissionDenied, ProtocolError,
                     ShuttingDown, Timeout)
from .metadata import ModelMetadata, TensorSpec
from .shm import DEFAULT_REGION_BYTES, Client

__version__ = "0.1.0"

__all__ = [
    "connect", "Client", "http", "ModelMetadata", "TensorSpec", "DEFAULT_REGION_BYTES",
    "InferdError", "Busy", "Timeout", "InvalidRequest", "ModelNotFound", "Cancelled",
    "ShuttingDown", "InternalError", "ConnectFailed", "PermissionDenied", "Closed", "NoSpace",
    "ProtocolError", "LibraryNotFound",
]


def connect(socket_path: Optional[str] = None, *, region_bytes: int = DEFAULT_REGION_BYTES,
            queue_depth: int = 0, timeout_ms: int = 0) -> Client:
    """Connect to inferd over shared memory at socket_path (None: /run/inferd/inferd.sock).

    Returns a :class:`Client` (also a context manager).  region_bytes sizes
    the shared region every array and output lives in.  Raises
    LibraryNotFound when libinferd.so is missing, ConnectFailed or
    PermissionDenied with the daemon's reason.
    """
    return Client(socket_path, region_bytes=region_bytes, queue_depth=queue_depth, timeout_ms=timeout_ms)
