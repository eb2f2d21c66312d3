"""Reading the tensors of model checkpoints with numpy alone: safetensors files, and PyTorch's
zip checkpoints (``torch.save``, e.g. ``pytorch_model.bin``) without torch.

The PyTorch reader unpickles with a whitelist: only the classes a state dict of tensors needs
(tensor rebuilding, storages, OrderedDict) are resolved, and every other global is refused, so a
checkpoint cannot run code while being read (unlike ``torch.load`` without ``weights_only``).
"""

import collections
import json
import pickle
import struct
import types
import zipfile
from typing import Dict

import numpy as np

_SAFETENSORS_DTYPES = {"F32": np.float32, "F16": np.float16, "BF16": "bf16", "F64": np.float64,
                       "I64": np.int64, "I32": np.int32, "I8": np.int8, "U8": np.uint8, "BOOL": np.bool_}


class CheckpointError(ValueError):
    """A checkpoint that cannot be read: what is wrong and where."""


def _bf16_to_f32(raw: np.ndarray) -> np.ndarray:
    # bfloat16 is the high half of a float32.
    return (raw.astype(np.uint32) << 16).view(np.float32)


def read_safetensors(path) -> Dict[str, np.ndarray]:
    """Every tensor of a .safetensors file, float ones as float32 (fp16 and bf16 upcast)."""
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 8:
        raise CheckpointError(f"{path}: {len(data)} bytes, too short for a safetensors file")
    (header_size,) = struct.unpack("<Q", data[:8])
    if header_size > len(data) - 8:
        raise CheckpointError(f"{path}: header of {header_size} bytes runs past the end of the file")
    try:
        header = json.loads(data[8:8 + header_size])
    except ValueError as e:
        raise CheckpointError(f"{path}: the header is not JSON ({e})") from None
    base = 8 + header_size
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        dtype = _SAFETENSORS_DTYPES.get(info.get("dtype"))
        if dtype is None:
            raise CheckpointError(f"{path}: tensor '{name}' has dtype {info.get('dtype')}, which libmt does not read")
        begin, end = info["data_offsets"]
        if not 0 <= begin <= end <= len(data) - base:
            raise CheckpointError(f"{path}: tensor '{name}' lies outside the file")
        shape = tuple(info["shape"])
        if dtype == "bf16":
            raw = np.frombuffer(data, dtype="<u2", count=(end - begin) // 2, offset=base + begin)
            array = _bf16_to_f32(raw)
        else:
            itemsize = np.dtype(dtype).itemsize
            array = np.frombuffer(data, dtype=np.dtype(dtype).newbyteorder("<"), count=(end - begin) // itemsize,
                                  offset=base + begin)
        if array.size != int(np.prod(shape, dtype=np.int64)):
            raise CheckpointError(f"{path}: tensor '{name}' has {array.size} values for shape {list(shape)}")
        tensors[name] = _as_float32(array.reshape(shape))
    return tensors


def _as_float32(array: np.ndarray) -> np.ndarray:
    if array.dtype.kind == "f" or array.dtype == np.float32:
        return np.ascontiguousarray(array, dtype=np.float32)
    return array


# PyTorch storage class names -> numpy dtype (little-endian, as torch.save writes).
_TORCH_STORAGES = {"FloatStorage": "<f4", "HalfStorage": "<f2", "BFloat16Storage": "bf16", "DoubleStorage": "<f8",
                   "LongStorage": "<i8", "IntStorage": "<i4", "ShortStorage": "<i2", "CharStorage": "i1",
                   "ByteStorage": "u1", "BoolStorage": "?"}


class _StorageType:
    def __init__(self, dtype):
        self.dtype = dtype


def _rebuild_tensor(storage, offset, size, stride, *_):
    array, dtype = storage
    if not size:
        return _as_float32(array[offset:offset + 1].reshape(()))
    itemsize = 2 if dtype == "bf16" else np.dtype(dtype).itemsize
    view = np.lib.stride_tricks.as_strided(array[offset:], shape=tuple(size),
                                           strides=tuple(s * itemsize for s in stride), writeable=False)
    if dtype == "bf16":
        return _bf16_to_f32(np.ascontiguousarray(view))
    return _as_float32(np.ascontiguousarray(view))


class Namespace(types.SimpleNamespace):
    """What an argparse.Namespace in a checkpoint (OpenNMT-py's opt, fairseq's args) is read as:
    attributes only, no argparse."""


class _TorchUnpickler(pickle.Unpickler):
    def __init__(self, file, archive, prefix, namespaces=False):
        super().__init__(file)
        self._archive = archive
        self._prefix = prefix
        self._storages = {}
        self._namespaces = namespaces

    def find_class(self, module, name):
        if module == "collections" and name == "OrderedDict":
            return collections.OrderedDict
        if self._namespaces and module == "argparse" and name == "Namespace":
            return Namespace
        if self._namespaces and module in ("builtins", "__builtin__") and name in ("set", "frozenset"):
            return {"set": set, "frozenset": frozenset}[name]  # options held as sets
        if module == "torch._utils" and name in ("_rebuild_tensor_v2", "_rebuild_tensor"):
            return _rebuild_tensor
        if module == "torch" and name in _TORCH_STORAGES:
            return _StorageType(_TORCH_STORAGES[name])
        raise CheckpointError(f"the checkpoint holds a {module}.{name}, which a state dict of tensors does not: "
                              "refused (libmt reads tensors only, and runs no code from a checkpoint)")

    def persistent_load(self, pid):
        # ('storage', storage type, key, location, number of elements)
        if not isinstance(pid, tuple) or len(pid) < 5 or pid[0] != "storage":
            raise CheckpointError(f"unexpected persistent id {pid!r} in the checkpoint")
        storage_type, key = pid[1], str(pid[2])
        if key not in self._storages:
            dtype = storage_type.dtype if isinstance(storage_type, _StorageType) else None
            if dtype is None:
                raise CheckpointError(f"storage {key} has an unknown type")
            raw = self._archive.read(f"{self._prefix}/data/{key}")
            array = np.frombuffer(raw, dtype="<u2" if dtype == "bf16" else dtype)
            self._storages[key] = (array, dtype)
        return self._storages[key]


def load_torch_zip(path, namespaces: bool = False):
    """What torch.save wrote (zip format, PyTorch >= 1.6), with tensors as numpy arrays: dicts,
    lists, strings and numbers, and (namespaces=True) argparse.Namespace objects as Namespace.
    Any other class is refused."""
    if not zipfile.is_zipfile(path):
        raise CheckpointError(f"{path}: not a zip-format PyTorch checkpoint (legacy torch.save files are "
                              "not read: re-save it with PyTorch >= 1.6, or convert it to safetensors)")
    with zipfile.ZipFile(path) as archive:
        pickles = [n for n in archive.namelist() if n.endswith("/data.pkl")]
        if len(pickles) != 1:
            raise CheckpointError(f"{path}: expected one data.pkl in the archive, found {len(pickles)}")
        prefix = pickles[0][:-len("/data.pkl")]
        with archive.open(pickles[0]) as f:
            return _TorchUnpickler(f, archive, prefix, namespaces).load()


def read_torch_zip(path) -> Dict[str, np.ndarray]:
    """The tensors of a state dict saved by torch.save (zip format, PyTorch >= 1.6)."""
    state = load_torch_zip(path)
    if isinstance(state, dict) and "state_dict" in state and isinstance(state["state_dict"], dict):
        state = state["state_dict"]
    if not isinstance(state, dict):
        raise CheckpointError(f"{path}: holds a {type(state).__name__}, not a state dict")
    return {k: v for k, v in state.items() if isinstance(v, np.ndarray)}
