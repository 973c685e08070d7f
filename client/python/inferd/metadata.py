"""Model metadata, the same from the shared-memory and the HTTP clients."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

import numpy as np

# KServe v2 datatypes and their numpy dtypes (little-endian, as both doors carry them).
DTYPES: Dict[str, np.dtype] = {
    "FP32": np.dtype("<f4"), "FP16": np.dtype("<f2"), "FP64": np.dtype("<f8"),
    "INT8": np.dtype("i1"), "INT16": np.dtype("<i2"), "INT32": np.dtype("<i4"),
    "INT64": np.dtype("<i8"), "UINT8": np.dtype("u1"), "UINT16": np.dtype("<u2"),
    "UINT32": np.dtype("<u4"), "UINT64": np.dtype("<u8"), "BOOL": np.dtype("?"),
}


def dtype_of(datatype: str) -> np.dtype:
    """The numpy dtype of a KServe datatype name; ValueError for one without (BYTES)."""
    try:
        return DTYPES[datatype]
    except KeyError:
        raise ValueError("datatype %r has no fixed-size numpy dtype" % datatype) from None


def datatype_of(dtype: np.dtype) -> str:
    """The KServe datatype name of a numpy dtype; ValueError for one without."""
    d = np.dtype(dtype)
    for name, t in DTYPES.items():
        if t == d.newbyteorder("<") or t == d:
            return name
    raise ValueError("numpy dtype %s has no KServe datatype" % d)


@dataclass(frozen=True)
class TensorSpec:
    """One input or output of a model.  shape includes the batch dimension as -1."""

    name: str
    datatype: str
    shape: Tuple[int, ...]

    @property
    def dtype(self) -> np.dtype:
        """The numpy dtype of this tensor."""
        return dtype_of(self.datatype)

    @property
    def dims(self) -> Tuple[int, ...]:
        """The shape without the batch dimension."""
        return self.shape[1:]


@dataclass(frozen=True)
class ModelMetadata:
    """What a model takes and gives.

    max_batch_size and labels come over shared memory; over HTTP (KServe v2
    metadata) they are None and [].
    """

    name: str
    inputs: List[TensorSpec]
    outputs: List[TensorSpec]
    max_batch_size: Optional[int] = None
    labels: List[str] = field(default_factory=list)
    platform: Optional[str] = None

    def input(self, name: Optional[str] = None) -> TensorSpec:
        """The input called name, or the only input when name is None."""
        return _pick(self.inputs, name, self.name, "input")

    def output(self, name: Optional[str] = None) -> TensorSpec:
        """The output called name, or the only output when name is None."""
        return _pick(self.outputs, name, self.name, "output")


def _pick(specs: List[TensorSpec], name: Optional[str], model: str, what: str) -> TensorSpec:
    """One spec by name (or the only one); ValueError naming the choices."""
    if name is None:
        if len(specs) != 1:
            raise ValueError("model %r has %d %ss (%s): name one" % (
                model, len(specs), what, ", ".join(s.name for s in specs)))
        return specs[0]
    for s in specs:
        if s.name == name:
            return s
    raise ValueError("model %r has no %s %r (it has %s)" % (
        model, what, name, ", ".join(s.name for s in specs)))
