"""Turning what a caller passes to infer() into named arrays, the same way for both clients."""

from __future__ import annotations

from typing import Any, Dict, Mapping, Tuple, Union

import numpy as np

from .errors import InvalidRequest
from .metadata import ModelMetadata

Inputs = Union[np.ndarray, Mapping[str, Any], Any]


def refuse_strings(meta: ModelMetadata) -> None:
    """InvalidRequest naming the model's BYTES tensors, which this client does not carry."""
    strings = [t.name for t in list(meta.inputs) + list(meta.outputs) if t.datatype == "BYTES"]
    if strings:
        raise InvalidRequest("model %r: %s %s BYTES (string), which this client does not carry; send its "
                             "requests with tritonclient.http (inferd serves BYTES over HTTP)" % (
                                 meta.name, ", ".join(strings), "is" if len(strings) == 1 else "are"))


def name_inputs(meta: ModelMetadata, inputs: Inputs) -> Dict[str, Any]:
    """inputs as {input name: value}: a bare array goes to the model's only input.

    InvalidRequest when a bare array is given to a model with several inputs,
    or when a dict's names are not exactly the model's inputs, or when the
    model has BYTES tensors.
    """
    refuse_strings(meta)
    names = [s.name for s in meta.inputs]
    if not isinstance(inputs, Mapping):
        if len(names) != 1:
            raise InvalidRequest("model %r has %d inputs (%s): pass a dict of named arrays"
                                 % (meta.name, len(names), ", ".join(names)))
        return {names[0]: inputs}
    missing = [n for n in names if n not in inputs]
    unknown = [str(n) for n in inputs if n not in names]
    if missing or unknown:
        parts = []
        if missing:
            parts.append("missing input%s %s" % ("s" if len(missing) > 1 else "", ", ".join(missing)))
        if unknown:
            parts.append("no input%s called %s" % ("s" if len(unknown) > 1 else "", ", ".join(unknown)))
        raise InvalidRequest("model %r: %s (its inputs: %s)" % (meta.name, "; ".join(parts), ", ".join(names)))
    return {n: inputs[n] for n in names}


def check_shapes(meta: ModelMetadata, named: Dict[str, Any],
                 dims: bool = True) -> Tuple[Dict[str, np.ndarray], int]:
    """Arrays of the right rank for every input and their common row count.

    Values that are not ndarrays are converted to the input's dtype.  With
    dims, every fixed dim is checked too (the shared-memory client leaves that
    to libinferd, which names the dim and the model's size).  The message of
    an InvalidRequest names the input and the shape expected.
    """
    arrays: Dict[str, np.ndarray] = {}
    rows = -1
    for spec in meta.inputs:
        a = named[spec.name]
        if not isinstance(a, np.ndarray):
            try:
                a = np.asarray(a, dtype=spec.dtype)
            except (TypeError, ValueError) as e:
                raise InvalidRequest("input %r: cannot convert to %s: %s" % (spec.name, spec.datatype, e)) from None
        want = spec.dims
        if a.ndim != len(want) + 1 or (dims and any(w not in (-1, g) for w, g in zip(want, a.shape[1:]))):
            raise InvalidRequest("input %r: shape %s, the model expects [N, %s]" % (
                spec.name, list(a.shape), ", ".join(str(d) if d >= 0 else "?" for d in want)))
        if rows not in (-1, a.shape[0]):
            raise InvalidRequest("input %r has %d rows, the other inputs %d" % (spec.name, a.shape[0], rows))
        rows = a.shape[0]
        arrays[spec.name] = a
    if rows < 1 or (meta.max_batch_size is not None and rows > meta.max_batch_size):
        raise InvalidRequest("model %r: %d rows, it takes 1 .. %s" % (
            meta.name, rows, meta.max_batch_size if meta.max_batch_size is not None else "any"))
    return arrays, rows
