"""The ctypes binding of libinferd: the one module that knows its C layout.

Everything that mirrors ``include/inferd.h`` lives here: the struct
definitions, the function prototypes, the error codes.  When the header
changes, this file changes, and nothing else in the package does.  The test
suite compares every struct below with the C compiler's ``sizeof`` and
``offsetof`` (``tests/helpers/inferd_abi.c``), so a drift fails a test
instead of corrupting memory.

The library is found, in order, at ``$INFERD_LIB`` (a path), through
``ctypes.util.find_library("inferd")`` (ldconfig's cache), in the libdir
pkg-config gives for ``inferd`` (a ``make install`` to another prefix, with
that prefix's ``lib/pkgconfig`` on ``PKG_CONFIG_PATH``), in this Python's
own prefix (a venv or ``--prefix`` install beside ``make install
prefix=...``), then in the usual install directories.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import shutil
import subprocess
import sys
import threading
from typing import Dict, List, NamedTuple, Optional, Tuple, Type

# The libinferd releases this layout was written for: major must match, and
# the minor must be at least this (newer minors only add at the ends of the
# structs, as inferd.h promises).
LIB_MAJOR = 0
LIB_MINOR = 2

c_size_t = ctypes.c_size_t


# --- structs (include/inferd.h) ---------------------------------------------

class Options(ctypes.Structure):
    """struct inferd_options: connection settings; zeros mean the defaults."""

    _fields_ = [
        ("size", c_size_t),
        ("region_bytes", c_size_t),
        ("sq_entries", ctypes.c_uint),
        ("cq_entries", ctypes.c_uint),
        ("timeout_ms", ctypes.c_int),
        ("reconnect", ctypes.c_int),
        ("reconnect_max_ms", ctypes.c_int),
        ("spin_us", ctypes.c_int),
    ]


class TensorInfo(ctypes.Structure):
    """struct inferd_tensor_info: one input or output of a model."""

    _fields_ = [
        ("name", ctypes.c_char * 128),
        ("datatype", ctypes.c_char_p),
        ("elem_bytes", c_size_t),
        ("ndims", ctypes.c_int),
        ("dims", ctypes.c_int64 * 8),
        ("max_dims", ctypes.c_int64 * 8),
        ("follows_input", ctypes.c_int * 8),
        ("follows_dim", ctypes.c_int * 8),
    ]


class Model(ctypes.Structure):
    """struct inferd_model: a model's metadata, owned by the connection."""

    _fields_ = [
        ("id", ctypes.c_uint32),
        ("name", ctypes.c_char * 128),
        ("max_batch_size", ctypes.c_int),
        ("input_name", ctypes.c_char * 128),
        ("output_name", ctypes.c_char * 128),
        ("datatype", ctypes.c_char_p),
        ("input_ndims", ctypes.c_int),
        ("output_ndims", ctypes.c_int),
        ("input_dims", ctypes.c_int64 * 8),
        ("output_dims", ctypes.c_int64 * 8),
        ("input_row_bytes", c_size_t),
        ("output_row_bytes", c_size_t),
        ("nlabels", c_size_t),
        ("labels", ctypes.POINTER(ctypes.c_char_p)),
        ("ninputs", ctypes.c_int),
        ("noutputs", ctypes.c_int),
        ("inputs", ctypes.POINTER(TensorInfo)),
        ("outputs", ctypes.POINTER(TensorInfo)),
        ("version", ctypes.c_int64),
    ]


class Tensor(ctypes.Structure):
    """struct inferd_tensor: a block of the shared region."""

    _fields_ = [
        ("data", ctypes.c_void_p),
        ("offset", ctypes.c_uint64),
        ("bytes", c_size_t),
        ("reserved", ctypes.c_uint64 * 2),
    ]


class IoStruct(ctypes.Structure):
    """struct inferd_io: one tensor of a request's list form, named as the model names it."""

    _fields_ = [
        ("name", ctypes.c_char_p),
        ("tensor", ctypes.POINTER(Tensor)),
        ("ndims", ctypes.c_int),
        ("dims", ctypes.c_int64 * 8),
        ("reserved", ctypes.c_uint64 * 2),
    ]


class Request(ctypes.Structure):
    """struct inferd_request: one asynchronous request."""

    _fields_ = [
        ("size", c_size_t),
        ("model", ctypes.POINTER(Model)),
        ("rows", ctypes.c_int),
        ("input", ctypes.POINTER(Tensor)),
        ("output", ctypes.POINTER(Tensor)),
        ("timeout_us", ctypes.c_uint64),
        ("user_data", ctypes.c_uint64),
        ("ninputs", ctypes.c_int),
        ("noutputs", ctypes.c_int),
        ("inputs", ctypes.POINTER(IoStruct)),
        ("outputs", ctypes.POINTER(IoStruct)),
        ("id", ctypes.c_char_p),
    ]


class Completion(ctypes.Structure):
    """struct inferd_completion: the outcome of an asynchronous request."""

    _fields_ = [
        ("user_data", ctypes.c_uint64),
        ("status", ctypes.c_int),
        ("reserved0", ctypes.c_uint32),
        ("id", ctypes.c_char_p),
    ]


# The structs the ABI test compares with the C compiler's view, by C name.
ABI_STRUCTS: Dict[str, Type[ctypes.Structure]] = {
    "inferd_options": Options,
    "inferd_tensor_info": TensorInfo,
    "inferd_model": Model,
    "inferd_io": IoStruct,
    "inferd_tensor": Tensor,
    "inferd_request": Request,
    "inferd_completion": Completion,
}


# --- error codes (include/inferd.h, include/inferd_outcome.h) ----------------

EINVAL = -1
ENOMEM = -2
ESYS = -3
ECONNECT = -4
EPROTO = -5
EDENIED = -6
EREFUSED = -7
ECLOSED = -8
ENOMODEL = -9
ENOSPACE = -10
EAGAIN = -11


def _outcome_error(code: int) -> int:
    """INFERD_OUTCOME_ERROR: libinferd's code for a request outcome."""
    return 0 if code == 0 else -(11 + code)


EBUSY = _outcome_error(1)
ETIMEDOUT = _outcome_error(2)
EREQUEST = _outcome_error(3)
ECANCELLED = _outcome_error(4)
ESHUTDOWN = _outcome_error(5)
EINTERNAL = _outcome_error(6)
ENOPENDING = -101  # inferd_wait with nothing of inferd_submit outstanding
ESHAPE = -102  # the model cannot take these input dims (the daemon's reason in inferd_last_error)

# The C names of the codes, for the ABI test and for messages.
ERROR_NAMES: Dict[int, str] = {
    EINVAL: "INFERD_EINVAL", ENOMEM: "INFERD_ENOMEM", ESYS: "INFERD_ESYS",
    ECONNECT: "INFERD_ECONNECT", EPROTO: "INFERD_EPROTO", EDENIED: "INFERD_EDENIED",
    EREFUSED: "INFERD_EREFUSED", ECLOSED: "INFERD_ECLOSED", ENOMODEL: "INFERD_ENOMODEL",
    ENOSPACE: "INFERD_ENOSPACE", EAGAIN: "INFERD_EAGAIN", EBUSY: "INFERD_EBUSY",
    ETIMEDOUT: "INFERD_ETIMEDOUT", EREQUEST: "INFERD_EREQUEST",
    ECANCELLED: "INFERD_ECANCELLED", ESHUTDOWN: "INFERD_ESHUTDOWN",
    EINTERNAL: "INFERD_EINTERNAL", ENOPENDING: "INFERD_ENOPENDING", ESHAPE: "INFERD_ESHAPE",
}

DEFAULT_SOCKET = "/run/inferd/inferd.sock"


# --- views of the structs the rest of the package uses -----------------------

class Desc(NamedTuple):
    """One input or output of a model, as the rest of the package sees it.

    dims exclude the batch dimension; -1 is a variable dim (at most
    max_dims[d]).  follows[d] is (input index, input dim) when an output's
    variable dim d equals that input's, else None.
    """

    name: str
    datatype: str
    dims: Tuple[int, ...]
    max_dims: Tuple[int, ...]
    follows: Tuple[Optional[Tuple[int, int]], ...]


def _descs(infos: "ctypes._Pointer[TensorInfo]", n: int) -> List[Desc]:
    """Descriptions of n tensor infos."""
    out = []
    for i in range(n):
        t = infos[i]
        nd = t.ndims
        follows = tuple((int(t.follows_input[d]), int(t.follows_dim[d])) if t.follows_input[d] >= 0 else None
                        for d in range(nd))
        out.append(Desc(t.name.decode(), t.datatype.decode(), tuple(int(t.dims[d]) for d in range(nd)),
                        tuple(int(t.max_dims[d]) for d in range(nd)), follows))
    return out


def model_inputs(m: Model) -> List[Desc]:
    """The model's inputs, in its order."""
    return _descs(m.inputs, m.ninputs)


def model_outputs(m: Model) -> List[Desc]:
    """The model's outputs, in its order."""
    return _descs(m.outputs, m.noutputs)


def model_labels(m: Model) -> List[str]:
    """The model's class names ([] when it has none)."""
    return [m.labels[i].decode() for i in range(m.nlabels)]


# A request's tensor: (name, block, non-batch dims); no block for inferd_output_dims's inputs.
Io = Tuple[str, Optional[Tensor], Tuple[int, ...]]


def _io_array(ios: List[Io]) -> "ctypes.Array[IoStruct]":
    """The list form's tensors: name, block and dims of each."""
    arr = (IoStruct * len(ios))()
    for i, (name, tensor, dims) in enumerate(ios):
        arr[i].name = name.encode()
        if tensor is not None:
            arr[i].tensor = ctypes.pointer(tensor)
        arr[i].ndims = len(dims)
        for d, size in enumerate(dims):
            arr[i].dims[d] = size
    return arr


def output_dims(lib: ctypes.CDLL, conn: ctypes.c_void_p, model: "ctypes._Pointer[Model]", rows: int,
                inputs: List[Tuple[str, Tuple[int, ...]]], outputs: List[str]) -> Tuple[int, List[Tuple[int, ...]]]:
    """inferd_output_dims: (its code, and when 0 the dims of each output named) for rows and the inputs' dims."""
    ins = _io_array([(name, None, dims) for name, dims in inputs])
    outs = (IoStruct * len(outputs))()
    for i, name in enumerate(outputs):
        outs[i].name = name.encode()
    rc = lib.inferd_output_dims(conn, model, rows, ins, len(inputs), outs, len(outputs))
    if rc != 0:
        return rc, []
    return 0, [tuple(int(o.dims[d]) for d in range(o.ndims)) for o in outs]


def fill_request(req: Request, model: "ctypes._Pointer[Model]", rows: int, inputs: List[Io],
                 outputs: List[Io], timeout_us: int, user_data: int) -> None:
    """Fill req in the tensor-list form: every input and the outputs wanted, by name, with their dims."""
    req.size = ctypes.sizeof(Request)
    req.model = model
    req.rows = rows
    req.timeout_us = timeout_us
    req.user_data = user_data
    req.ninputs, req.inputs = len(inputs), _io_array(inputs)
    req.noutputs, req.outputs = len(outputs), _io_array(outputs)


# --- loading the library -----------------------------------------------------

class LibraryNotFound(OSError):
    """libinferd.so could not be found or loaded."""


_SEARCH_DIRS = (
    "/usr/local/lib", "/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu",
    "/usr/lib64", "/usr/lib",
)
_NAMES = ("libinferd.so.0", "libinferd.so")


def _pkg_config_libdir() -> List[str]:
    """The libdir pkg-config knows for inferd (inferd.pc is installed beside the library), or none."""
    exe = shutil.which("pkg-config")
    if exe is None:
        return []
    try:
        r = subprocess.run([exe, "--variable=libdir", "inferd"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return []
    libdir = r.stdout.strip()
    return [libdir] if r.returncode == 0 and libdir else []


def _candidates() -> List[str]:
    """Where to look for the library, in order."""
    env = os.environ.get("INFERD_LIB")
    if env:
        return [env]
    found = ctypes.util.find_library("inferd")
    paths = [found] if found else []
    dirs = _pkg_config_libdir() + [os.path.join(sys.prefix, "lib")] + list(_SEARCH_DIRS)
    for d in dirs:
        for n in _NAMES:
            p = os.path.join(d, n)
            if p not in paths:
                paths.append(p)
    return paths


def _prototype(lib: ctypes.CDLL) -> None:
    """Declare the argument and result types of every function used."""
    P, c_int, c_uint = ctypes.c_void_p, ctypes.c_int, ctypes.c_uint
    protos = {
        "inferd_connect": (c_int, [ctypes.c_char_p, ctypes.POINTER(Options), ctypes.POINTER(P)]),
        "inferd_close": (None, [P]),
        "inferd_model_count": (c_uint, [P]),
        "inferd_model_get": (c_int, [P, ctypes.c_char_p, ctypes.POINTER(ctypes.POINTER(Model))]),
        "inferd_model_get_id": (c_int, [P, c_uint, ctypes.POINTER(ctypes.POINTER(Model))]),
        "inferd_tensor_alloc": (c_int, [P, c_size_t, ctypes.POINTER(Tensor)]),
        "inferd_tensor_free": (None, [P, ctypes.POINTER(Tensor)]),
        "inferd_output_dims": (c_int, [P, ctypes.POINTER(Model), c_int, ctypes.POINTER(IoStruct), c_int,
                                       ctypes.POINTER(IoStruct), c_int]),
        "inferd_submit": (c_int, [P, ctypes.POINTER(Request)]),
        "inferd_wait": (c_int, [P, ctypes.POINTER(Completion), c_uint, c_int]),
        "inferd_outstanding": (c_uint, [P]),
        "inferd_fd": (c_int, [P]),
        "inferd_strerror": (ctypes.c_char_p, [c_int]),
        "inferd_last_error": (ctypes.c_char_p, []),
        "inferd_version": (ctypes.c_char_p, []),
    }
    for name, (restype, argtypes) in protos.items():
        fn = getattr(lib, name)
        fn.restype = restype
        fn.argtypes = argtypes


def _check_version(lib: ctypes.CDLL, path: str) -> None:
    """Refuse a libinferd whose struct layout or functions this module does not know (AttributeError: not libinferd)."""
    lib.inferd_version.restype = ctypes.c_char_p
    lib.inferd_version.argtypes = []
    if not hasattr(lib, "inferd_run"):
        raise LibraryNotFound("%s is a libinferd without the tensor-list form of requests: "
                              "install a newer one" % path)
    text = lib.inferd_version().decode()
    try:
        major, minor = (int(x) for x in text.split(".")[:2])
    except ValueError:
        raise LibraryNotFound("%s: unreadable version %r" % (path, text)) from None
    if major != LIB_MAJOR or minor < LIB_MINOR:
        raise LibraryNotFound(
            "%s is libinferd %s; this Python package needs %d.%d or a later %d.x"
            % (path, text, LIB_MAJOR, LIB_MINOR, LIB_MAJOR))


_lib: Optional[ctypes.CDLL] = None
_lib_path = ""
_lib_lock = threading.Lock()


def load() -> ctypes.CDLL:
    """libinferd, loaded and declared once; LibraryNotFound says where it looked."""
    global _lib, _lib_path
    with _lib_lock:
        if _lib is not None:
            return _lib
        tried = []
        for path in _candidates():
            try:
                lib = ctypes.CDLL(path)
            except OSError as e:
                tried.append("%s (%s)" % (path, e))
                continue
            try:
                _check_version(lib, path)
                _prototype(lib)
            except AttributeError as e:
                tried.append("%s (not libinferd: %s)" % (path, e))
                continue
            _lib, _lib_path = lib, path
            return lib
        raise LibraryNotFound(
            "libinferd.so not found; install libinferd0 (Debian) or `make install` inferd "
            "(for another prefix, put PREFIX/lib/pkgconfig on PKG_CONFIG_PATH), "
            "or set INFERD_LIB to the library's path. Tried: " + "; ".join(tried))


def path() -> str:
    """The path the library was loaded from ("" before load())."""
    return _lib_path
