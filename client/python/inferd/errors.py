"""The exceptions of the inferd client: one class per way a call can end badly.

Every error is an :class:`InferdError` carrying the daemon's (or the
library's) message, the libinferd code (``code``, shared memory) or the HTTP
status (``status``, HTTP) it came from.  Catch the subclass for one outcome,
or InferdError for all of them.
"""

from __future__ import annotations

from typing import Dict, Optional, Type

from . import _lib


class InferdError(Exception):
    """A call to the daemon or to libinferd failed; str() is the message."""

    def __init__(self, message: str, code: Optional[int] = None,
                 status: Optional[int] = None) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.status = status


class Busy(InferdError):
    """The model's queue or the HTTP staging memory is full (shm INFERD_EBUSY, HTTP 503): retry later or elsewhere."""


class Timeout(InferdError):
    """The request's timeout expired before it ran (INFERD_ETIMEDOUT, HTTP 503)."""


class InvalidRequest(InferdError):
    """The request is wrong: shape, datatype, rows, arguments (INFERD_EREQUEST, INFERD_EINVAL, INFERD_ESHAPE, 400)."""


class ModelNotFound(InferdError):
    """The daemon serves no model of that name (INFERD_ENOMODEL, HTTP 404)."""


class Cancelled(InferdError):
    """The request was cancelled (INFERD_ECANCELLED)."""


class ShuttingDown(InferdError):
    """The daemon is shutting down (INFERD_ESHUTDOWN, HTTP 503)."""


class InternalError(InferdError):
    """The daemon failed to run a valid request: a device failure (INFERD_EINTERNAL, HTTP 500)."""


class ConnectFailed(InferdError):
    """Cannot reach the daemon, or it refused this client (INFERD_ECONNECT, INFERD_EDENIED, INFERD_EREFUSED)."""


class PermissionDenied(ConnectFailed):
    """The daemon does not allow this user to connect (INFERD_EDENIED)."""


class Closed(InferdError):
    """The connection is closed: by the daemon (INFERD_ECLOSED) or by close()."""


class NoSpace(InferdError):
    """No block of the shared region is large enough (INFERD_ENOSPACE): free arrays or connect with a larger region_bytes."""


class ProtocolError(InferdError):
    """The daemon and the client do not understand each other (INFERD_EPROTO, an unexpected HTTP answer)."""


_BY_CODE: Dict[int, Type[InferdError]] = {
    _lib.EINVAL: InvalidRequest,
    _lib.EREQUEST: InvalidRequest,
    _lib.ESHAPE: InvalidRequest,
    _lib.EBUSY: Busy,
    _lib.EAGAIN: Busy,
    _lib.ETIMEDOUT: Timeout,
    _lib.ENOMODEL: ModelNotFound,
    _lib.ECANCELLED: Cancelled,
    _lib.ESHUTDOWN: ShuttingDown,
    _lib.EINTERNAL: InternalError,
    _lib.ECONNECT: ConnectFailed,
    _lib.EREFUSED: ConnectFailed,
    _lib.EDENIED: PermissionDenied,
    _lib.ECLOSED: Closed,
    _lib.ENOSPACE: NoSpace,
    _lib.EPROTO: ProtocolError,
}


def from_code(code: int, message: str) -> InferdError:
    """The exception for a libinferd code, carrying message."""
    return _BY_CODE.get(code, InferdError)(message, code=code)


def from_http(status: int, message: str) -> InferdError:
    """The exception for an HTTP error answer, carrying the daemon's message."""
    if status == 404:
        cls: Type[InferdError] = ModelNotFound if "model" in message else InferdError
    elif status in (400, 413):
        cls = InvalidRequest
    elif status == 503:
        # The daemon's busy answers: a full queue ("busy: ...") and staging memory that stayed in use
        # ("server busy: ... pinned_pool_bytes ..."); the latter names its timeout, so busy is looked for first.
        low = message.lower()
        if "shutting down" in low:
            cls = ShuttingDown
        elif "busy" in low:
            cls = Busy
        elif "timed out" in low or "timeout" in low:
            cls = Timeout
        else:
            cls = InferdError
    elif status == 500:
        cls = InternalError
    else:
        cls = InferdError
    return cls(message, status=status)
