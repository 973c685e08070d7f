"""The shared-memory client: numpy arrays inside the region the daemon reads and writes.

A :class:`Client` owns one libinferd connection and its shared region.
Arrays from :meth:`Client.empty`, :meth:`Client.empty_like` and
:meth:`Client.array`, and the outputs :meth:`Client.infer` returns, live
inside that region: the daemon reads inputs from them and writes outputs
into them in place (on a GPU, the device copies straight from and to them).
An array that is not in the region is copied into a region block first.

Threads: libinferd's connection is used by one thread at a time.  This
class serializes every call on it with a lock, and one completion thread
per client reaps finished requests and resolves their futures, so a Client
may be shared by any number of threads and asyncio tasks.  A thread waiting
in infer() reaps for itself (and for everyone) while no other does: the
common case, one caller at a time, then needs no hand-over between threads.

Lifetime: a region array keeps its block (and the region) alive; a block is
returned when the last array using it is collected.  close() ends the
client; the region itself is unmapped once no array from it is left.
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import ctypes
import math
import os
import select
import socket
import threading
import weakref
from typing import Any, Deque, Dict, List, Optional, Tuple, Union

import numpy as np

from . import _lib
from ._inputs import Inputs, check_shapes, name_inputs
from .errors import Closed, InferdError, InvalidRequest, from_code
from .metadata import ModelMetadata, TensorSpec

Result = Union[np.ndarray, Dict[str, np.ndarray]]

DEFAULT_REGION_BYTES = 64 << 20


class _Region:
    """The libinferd connection and its lock; released when closed and no block is left.

    Blocks are freed by finalizers that may run on any thread at any time,
    so they are only queued here and given back by the next holder of the lock.
    """

    def __init__(self, lib: ctypes.CDLL, conn: ctypes.c_void_p, region_bytes: int) -> None:
        self.lib = lib
        self.conn = conn
        self.lock = threading.RLock()
        self.region_bytes = region_bytes
        self.base = 0                # the region's address, known from the first block
        self.blocks = 0              # blocks handed out and not yet freed
        self.allocations = 0         # blocks ever handed out
        self.to_free: Deque[_lib.Tensor] = collections.deque()
        self.released = False        # close() was called
        self.gone = False            # inferd_close() was called

    def fail(self, rc: int, what: str) -> InferdError:
        """The exception for code rc; call with the lock held, right after the failing call."""
        detail = self.lib.inferd_last_error().decode(errors="replace")
        return from_code(rc, "%s: %s" % (what, detail or self.lib.inferd_strerror(rc).decode()))

    def drain(self) -> None:
        """Give back queued blocks; close the connection after the last one once released."""
        while self.to_free:
            t = self.to_free.popleft()
            if not self.gone:
                self.lib.inferd_tensor_free(self.conn, ctypes.byref(t))
            self.blocks -= 1
        if self.released and self.blocks == 0 and not self.gone:
            self.gone = True
            self.lib.inferd_close(self.conn)

    def free_later(self, t: _lib.Tensor) -> None:
        """Finalizer of a block: queue it, give it back now if the lock is free."""
        self.to_free.append(t)
        if self.lock.acquire(blocking=False):
            try:
                self.drain()
            finally:
                self.lock.release()

    def alloc(self, nbytes: int) -> _lib.Tensor:
        """A block of at least nbytes (lock held); NoSpace when the region is full."""
        self.drain()
        t = _lib.Tensor()
        rc = self.lib.inferd_tensor_alloc(self.conn, max(nbytes, 1), ctypes.byref(t))
        if rc != 0:
            raise self.fail(rc, "allocating %d bytes in the shared region of %d bytes" % (nbytes, self.region_bytes))
        self.blocks += 1
        self.allocations += 1
        if not self.base:
            self.base = t.data - t.offset
        return t

    def array(self, shape: tuple, dtype: np.dtype) -> np.ndarray:
        """An uninitialized array of shape and dtype in a new block (lock held)."""
        return self.block(shape, dtype)[0]

    def block(self, shape: tuple, dtype: np.dtype) -> Tuple[np.ndarray, _lib.Tensor]:
        """array(), and the tensor describing it (lock held)."""
        dtype = np.dtype(dtype)
        count = math.prod(shape)
        nbytes = count * dtype.itemsize
        t = self.alloc(nbytes)
        buf = (ctypes.c_char * t.bytes).from_address(t.data)
        buf._inferd_block = (t, nbytes)  # lets tensor_of() know a whole block without asking numpy
        weakref.finalize(buf, self.free_later, t)
        a = np.frombuffer(buf, dtype=dtype, count=count).reshape(shape)
        t = _lib.Tensor(data=t.data, offset=t.offset, bytes=nbytes)
        return a, t

    def tensor_of(self, a: np.ndarray) -> Optional[_lib.Tensor]:
        """The tensor describing a if it is a contiguous array inside this region, else None."""
        b = a.base  # a region array's base is the flat array over the block, whose base is the block
        whole = getattr(b.base if type(b) is np.ndarray else b, "_inferd_block", None)
        if whole is not None and a.nbytes == whole[1] and a.flags.c_contiguous:
            # All of a block, contiguous: it starts where the block does.
            if whole[0].data - whole[0].offset != self.base:
                return None  # another client's block
            return _lib.Tensor(data=whole[0].data, offset=whole[0].offset, bytes=whole[1])
        if not self.base or not a.flags.c_contiguous:
            return None
        addr = a.__array_interface__["data"][0]
        off = addr - self.base
        if off < 0 or off + a.nbytes > self.region_bytes or addr % 4 != 0:
            return None
        t = _lib.Tensor()
        t.data, t.offset, t.bytes = addr, off, a.nbytes
        return t


class _Model:
    """A model of this connection: libinferd's pointer and the metadata."""

    def __init__(self, ptr: "ctypes._Pointer[_lib.Model]") -> None:
        m = ptr.contents
        self.ptr = ptr
        self.ins, self.outs = _lib.model_inputs(m), _lib.model_outputs(m)
        ins = [TensorSpec(d.name, d.datatype, (-1,) + d.dims) for d in self.ins]
        outs = [TensorSpec(d.name, d.datatype, (-1,) + d.dims) for d in self.outs]
        self.meta = ModelMetadata(name=m.name.decode(), inputs=ins, outputs=outs,
                                  max_batch_size=int(m.max_batch_size), labels=_lib.model_labels(m))


class _Pending:
    """A request between submit and its completion: what it holds alive and where its answer goes."""

    __slots__ = ("future", "keep", "outputs", "copy_to", "request", "tensors")

    def __init__(self, future: concurrent.futures.Future, keep: List[np.ndarray],
                 outputs: Dict[str, np.ndarray], copy_to: Dict[str, np.ndarray]) -> None:
        self.future = future
        self.keep = keep           # input arrays (the caller's or copies) the daemon reads
        self.outputs = outputs     # region arrays the daemon writes
        self.copy_to = copy_to     # caller's out= arrays outside the region
        self.request: Optional[_lib.Request] = None
        self.tensors: List[_lib.Io] = []

    def result(self) -> Result:
        """The outputs, as one array for a one-output model or a dict by name."""
        for name, dst in self.copy_to.items():
            np.copyto(dst, self.outputs[name])
            self.outputs[name] = dst
        if len(self.outputs) == 1:
            return next(iter(self.outputs.values()))
        return dict(self.outputs)


class Client:
    """A connection to inferd over shared memory; see :func:`inferd.connect`."""

    def __init__(self, socket_path: Optional[str] = None, *, region_bytes: int = DEFAULT_REGION_BYTES,
                 queue_depth: int = 0, timeout_ms: int = 0) -> None:
        """Connect to the daemon at socket_path (None: /run/inferd/inferd.sock).

        region_bytes sizes the shared region (arrays and outputs live there);
        queue_depth is the submission ring's length (a power of two, 0: the
        library's default, 256); timeout_ms bounds control replies.
        Raises ConnectFailed, PermissionDenied or InvalidRequest with the
        daemon's or the library's reason.
        """
        lib = _lib.load()
        opts = _lib.Options(size=ctypes.sizeof(_lib.Options), region_bytes=region_bytes,
                            sq_entries=queue_depth, timeout_ms=timeout_ms)
        conn = ctypes.c_void_p()
        path = socket_path.encode() if socket_path is not None else None
        rc = lib.inferd_connect(path, ctypes.byref(opts), ctypes.byref(conn))
        if rc != 0:
            detail = lib.inferd_last_error().decode(errors="replace")
            where = socket_path or _lib.DEFAULT_SOCKET
            # libinferd's message usually names the socket already: say it once.
            raise from_code(rc, detail if where in detail else "connecting to %s: %s" % (where, detail))
        self.socket_path = socket_path or _lib.DEFAULT_SOCKET
        self._r = _Region(lib, conn, region_bytes)
        self._models: Dict[str, _Model] = {}
        self._pending: Dict[int, _Pending] = {}
        self._backlog: Deque[_Pending] = collections.deque()   # waiting for room in the rings
        self._next_id = 1
        self._closing = False
        self._abandon = False      # close() stopped waiting for the requests in flight
        self._comps = (_lib.Completion * 64)()
        self._dead: Optional[InferdError] = None  # set when the daemon went away
        self._wake_r, self._wake_w = os.pipe()
        self._doorbell = socket.socket(fileno=os.dup(lib.inferd_fd(conn)))
        self._cv = threading.Condition(self._r.lock)  # the completion thread waits for work on it
        self._leader = False       # a thread in infer() is reaping; the completion thread rests
        self._leader_poll = select.poll()
        self._leader_poll.register(self._doorbell.fileno(), select.POLLIN)
        self._thread = threading.Thread(target=self._complete_loop, name="inferd-completions", daemon=True)
        self._thread.start()

    # --- context manager and closing ---

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self, timeout: Optional[float] = 30.0) -> None:
        """Finish the requests in flight (waiting up to timeout seconds), then end the connection.

        Requests still unanswered after timeout fail with Closed.  The region
        stays mapped while arrays from it exist; it is released after the last.
        """
        with self._r.lock:
            if self._closing:
                return
            self._closing = True
            self._cv.notify_all()
        os.write(self._wake_w, b"x")
        if threading.current_thread() is not self._thread:
            self._thread.join(timeout)
            if self._thread.is_alive():
                with self._r.lock:
                    self._abandon = True
                    self._cv.notify_all()
                os.write(self._wake_w, b"x")
                self._thread.join()
        with self._r.lock:
            self._fail_all(Closed("the client was closed before the daemon answered"))
            self._r.released = True
            self._r.drain()
            self._doorbell.close()
        os.close(self._wake_r)
        os.close(self._wake_w)

    @property
    def closed(self) -> bool:
        """True after close() or once the daemon went away."""
        return self._closing or self._dead is not None

    def _check_open(self) -> None:
        """Raise Closed unless requests may be made (lock held)."""
        if self._dead is not None:
            raise Closed(str(self._dead))
        if self._closing:
            raise Closed("the client is closed")

    # --- models ---

    def _model(self, name: str) -> _Model:
        """The model called name (lock held); ModelNotFound with the library's message."""
        m = self._models.get(name)
        if m is None:
            ptr = ctypes.POINTER(_lib.Model)()
            rc = self._r.lib.inferd_model_get(self._r.conn, name.encode(), ctypes.byref(ptr))
            if rc != 0:
                raise self._r.fail(rc, "model %r" % name)
            m = self._models[name] = _Model(ptr)
        return m

    def models(self) -> List[str]:
        """The names of the models the daemon serves (ready ones, as the HTTP client's models())."""
        lib, conn = self._r.lib, self._r.conn
        with self._r.lock:
            self._check_open()
            names = []
            for i in range(lib.inferd_model_count(conn)):
                ptr = ctypes.POINTER(_lib.Model)()
                rc = lib.inferd_model_get_id(conn, i, ctypes.byref(ptr))
                if rc == _lib.ENOMODEL:
                    continue  # a name the repository knows but does not serve: failed to load, or unloaded
                if rc != 0:
                    raise self._r.fail(rc, "model %d" % i)
                names.append(ptr.contents.name.decode())
            return names

    def metadata(self, model: str) -> ModelMetadata:
        """The model's inputs, outputs, max_batch_size and labels; ModelNotFound if it has none."""
        with self._r.lock:
            self._check_open()
            return self._model(model).meta

    # --- region arrays ---

    def empty(self, model: str, batch: int = 1, name: Optional[str] = None) -> Result:
        """Uninitialized input arrays for batch rows of model, inside the region (zero copy).

        One array for a one-input model (or the input called name), else a
        dict by input name: fill them and pass them to infer().
        """
        with self._r.lock:
            self._check_open()
            meta = self._model(model).meta
            specs = [meta.input(name)] if name is not None else meta.inputs
            for s in specs:
                if -1 in s.dims:
                    raise InvalidRequest("input %r of %r has variable dims %s: make it with empty_like() or "
                                         "array()" % (s.name, model, list(s.shape)))
            out = {s.name: self._r.array((batch,) + s.dims, s.dtype) for s in specs}
        return next(iter(out.values())) if len(out) == 1 else out

    def empty_like(self, a: np.ndarray, dtype: Any = None) -> np.ndarray:
        """An uninitialized region array of a's shape (and dtype, unless given)."""
        with self._r.lock:
            self._check_open()
            return self._r.array(tuple(np.shape(a)), np.dtype(dtype) if dtype is not None else np.asarray(a).dtype)

    def array(self, obj: Any, dtype: Any = None) -> np.ndarray:
        """A copy of obj (any array-like) inside the region."""
        src = np.asarray(obj, dtype=dtype)
        dst = self.empty_like(src)
        np.copyto(dst, src)
        return dst

    def in_region(self, a: np.ndarray) -> bool:
        """True when a is a contiguous array inside this client's region (infer uses it in place)."""
        return self._r.tensor_of(a) is not None

    # --- inference ---

    def infer(self, model: str, inputs: Inputs, *, out: Optional[Result] = None,
              timeout_us: int = 0) -> Result:
        """Run inputs through model and wait; the outputs (one array, or a dict by name).

        inputs is one array (for a one-input model) or a dict of named
        arrays, each of shape [rows, *dims]; arrays in the region are used in
        place, others are copied into it.  The outputs are region arrays
        unless out gives arrays to write them into.  timeout_us: the daemon's
        deadline for this request (0: the model's default).
        """
        fut, leading = self._submit(model, inputs, out, timeout_us, lead=True)
        if leading:
            self._lead(fut)
        return fut.result()

    async def infer_async(self, model: str, inputs: Inputs, *, out: Optional[Result] = None,
                          timeout_us: int = 0) -> Result:
        """infer() for asyncio: await the outputs without blocking the event loop."""
        return await asyncio.wrap_future(self.submit(model, inputs, out=out, timeout_us=timeout_us))

    def submit(self, model: str, inputs: Inputs, *, out: Optional[Result] = None,
               timeout_us: int = 0) -> "concurrent.futures.Future[Result]":
        """Queue a request; a Future of infer()'s result (or of its InferdError).

        Any number may be in flight: beyond the rings' room they wait here
        and go out as earlier ones complete.  Arrays given must not be
        changed until the future is done.
        """
        return self._submit(model, inputs, out, timeout_us, lead=False)[0]

    def _submit(self, model: str, inputs: Inputs, out: Optional[Result], timeout_us: int,
                lead: bool) -> "Tuple[concurrent.futures.Future, bool]":
        """submit(); with lead, the caller becomes the reaper if none is (then True)."""
        fut: concurrent.futures.Future = concurrent.futures.Future()
        fut.set_running_or_notify_cancel()
        with self._r.lock:
            self._check_open()
            m = self._model(model)
            arrays, rows = check_shapes(m.meta, name_inputs(m.meta, inputs), dims=False)
            p = self._prepare(m, arrays, rows, out, fut)
            p.request = _lib.Request()
            _lib.fill_request(p.request, m.ptr, rows, p.tensors[:len(arrays)], p.tensors[len(arrays):],
                              timeout_us, self._next_id)
            p.tensors = []
            self._pending[self._next_id] = p
            self._next_id += 1
            if self._backlog or not self._push(p):
                self._backlog.append(p)
            leading = lead and not self._leader
            if leading:
                self._leader = True
            elif not self._leader:
                self._cv.notify()
        return fut, leading

    def _lead(self, fut: concurrent.futures.Future) -> None:
        """Reap on this thread until fut is done, then hand reaping back to the completion thread."""
        try:
            while not fut.done():
                with self._r.lock:
                    if self._r.released:  # close() failed fut, and the doorbell is gone
                        break
                events = dict(self._leader_poll.poll(100))
                hung_up = self._drain_doorbell(events)
                self._reap()
                if hung_up:
                    self._hang_up()
        finally:
            with self._r.lock:
                self._leader = False
                self._cv.notify_all()

    def _prepare(self, m: _Model, arrays: Dict[str, np.ndarray], rows: int,
                 out: Optional[Result], fut: concurrent.futures.Future) -> _Pending:
        """The request's tensors: inputs in place or copied in, outputs in the region (lock held)."""
        keep, ios = [], []
        for spec in m.meta.inputs:
            a = arrays[spec.name]
            t = self._r.tensor_of(a) if a.dtype == spec.dtype else None
            if t is None:
                dst, t = self._r.block(a.shape, spec.dtype)
                try:
                    np.copyto(dst, a, casting="same_kind")
                except TypeError as e:
                    raise InvalidRequest("input %r: %s" % (spec.name, e)) from None
                a = dst
            keep.append(a)
            ios.append((spec.name, t, tuple(a.shape[1:])))
        outputs, copy_to = {}, {}
        given = self._outs_by_name(m.meta, out)
        computed = self._computed_dims(m, arrays, rows)
        for spec, desc in zip(m.meta.outputs, m.outs):
            dst = given.get(spec.name)
            shape = (rows,) + (computed[spec.name] if computed else self._output_dims(m, desc, arrays))
            t = None
            if dst is not None:
                if tuple(dst.shape) != shape or dst.dtype != spec.dtype:
                    raise InvalidRequest("out %r: shape %s %s, the answer is %s %s" % (
                        spec.name, list(dst.shape), dst.dtype, list(shape), spec.dtype))
                t = self._r.tensor_of(dst)
                if t is None:
                    copy_to[spec.name] = dst
            if t is None:
                dst, t = self._r.block(shape, spec.dtype)
            outputs[spec.name] = dst
            ios.append((spec.name, t, shape[1:]))
        p = _Pending(fut, keep, outputs, copy_to)
        p.tensors = ios
        return p

    @staticmethod
    def _output_dims(m: _Model, desc: "_lib.Desc", arrays: Dict[str, np.ndarray]) -> tuple:
        """An output's non-batch dims when each is fixed or follows an input dim."""
        dims = []
        for d, size in enumerate(desc.dims):
            if size >= 0:
                dims.append(size)
            else:
                i, k = desc.follows[d]
                dims.append(arrays[m.ins[i].name].shape[1 + k])
        return tuple(dims)

    def _computed_dims(self, m: _Model, arrays: Dict[str, np.ndarray], rows: int) -> Dict[str, tuple]:
        """Every output's dims from the daemon (lock held) when one is computed otherwise than by following an input.

        A strided convolution's ceil(T/2), say: libinferd asks the daemon
        (inferd_output_dims, cached for the connection's last shapes); {}
        when the metadata tells every dim.  InvalidRequest with the daemon's
        reason when the model cannot take the inputs' dims.
        """
        if not any(size < 0 and f is None for desc in m.outs for size, f in zip(desc.dims, desc.follows)):
            return {}
        names = [desc.name for desc in m.outs]
        rc, dims = _lib.output_dims(self._r.lib, self._r.conn, m.ptr, rows,
                                    [(d.name, tuple(arrays[d.name].shape[1:])) for d in m.ins], names)
        if rc != 0:
            raise self._r.fail(rc, "output dims of %r" % m.meta.name)
        return dict(zip(names, dims))

    @staticmethod
    def _outs_by_name(meta: ModelMetadata, out: Optional[Result]) -> Dict[str, np.ndarray]:
        """out= as {output name: array}."""
        if out is None:
            return {}
        if isinstance(out, np.ndarray):
            return {meta.output().name: out}
        unknown = [n for n in out if n not in {s.name for s in meta.outputs}]
        if unknown:
            raise InvalidRequest("out: model %r has no output %s" % (meta.name, ", ".join(unknown)))
        return dict(out)

    def _push(self, p: _Pending) -> bool:
        """Submit p (lock held); False when the rings are full (the caller keeps it in the backlog)."""
        rc = self._r.lib.inferd_submit(self._r.conn, ctypes.byref(p.request))
        if rc == _lib.EAGAIN:
            return False
        if rc != 0:
            err = self._r.fail(rc, "submitting to %r" % p.request.model.contents.name.decode())
            del self._pending[p.request.user_data]
            raise err
        return True

    # --- completions ---

    def _fail_all(self, err: InferdError) -> None:
        """Fail every request not yet answered with err (lock held)."""
        for p in self._pending.values():
            if not p.future.done():
                p.future.set_exception(type(err)(str(err), code=err.code, status=err.status))
        self._pending.clear()
        self._backlog.clear()
        self._cv.notify_all()

    def _hang_up(self) -> None:
        """The daemon went away: fail everything, refuse what comes."""
        with self._r.lock:
            if self._dead is None:
                self._dead = Closed("the daemon closed the connection")
            self._fail_all(self._dead)
            self._cv.notify_all()

    def _rest(self) -> bool:
        """Wait until there is reaping to do (lock held); False when the thread should end."""
        while True:
            if self._dead is not None or (self._closing and (self._abandon or not self._pending)):
                return False
            if self._pending and not self._leader:
                return True
            self._cv.wait()

    def _complete_loop(self) -> None:
        """The completion thread: while requests are out and no infer() reaps, sleep on the doorbell and reap."""
        poller = select.poll()
        poller.register(self._doorbell.fileno(), select.POLLIN)
        poller.register(self._wake_r, select.POLLIN)
        try:
            while True:
                with self._cv:
                    if not self._rest():
                        return
                events = dict(poller.poll(100))
                if self._wake_r in events:
                    os.read(self._wake_r, 64)
                hung_up = self._drain_doorbell(events)
                self._reap()
                if hung_up:
                    self._hang_up()
                    return
        except BaseException as e:  # never leave futures waiting on a dead thread
            with self._r.lock:
                self._dead = InferdError("the completion thread failed: %r" % (e,))
                self._fail_all(self._dead)
            raise

    def _drain_doorbell(self, events: Dict[int, int]) -> bool:
        """Empty the doorbell (before reaping, so a later ring wakes us); True if the daemon hung up."""
        if self._doorbell.fileno() not in events:
            return False
        if events[self._doorbell.fileno()] & (select.POLLHUP | select.POLLERR):
            return True
        while True:
            try:
                if not self._doorbell.recv(4096, socket.MSG_DONTWAIT):
                    return True
            except BlockingIOError:
                return False

    def _reap(self) -> None:
        """Collect every completion, resolve its future, then submit from the backlog."""
        lib, r = self._r.lib, self._r
        comps = self._comps
        done = []
        with r.lock:
            if r.gone:  # close() gave up on the requests in flight and ended the connection
                return
            while True:
                n = lib.inferd_wait(r.conn, comps, 64, 0)
                if n < 0:
                    err = r.fail(n, "waiting for completions")
                    self._dead = err
                    self._fail_all(err)
                    return
                for i in range(n):
                    p = self._pending.pop(comps[i].user_data, None)
                    if p is not None:
                        done.append((p, comps[i].status))
                if n < 64:
                    break
            while self._backlog:
                p = self._backlog[0]
                try:
                    if not self._push(p):
                        break
                except InferdError as e:
                    p.future.set_exception(e)
                self._backlog.popleft()
        while done:
            p, status = done.pop(0)
            name = p.request.model.contents.name.decode()
            fut, res = p.future, p.result() if status == 0 else None
            del p  # the inputs' copies go back before the caller wakes
            if status == 0:
                fut.set_result(res)
            else:
                fut.set_exception(from_code(status, "%s: the daemon answered: %s" % (
                    name, lib.inferd_strerror(status).decode())))
