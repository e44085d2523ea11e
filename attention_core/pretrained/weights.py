"""Safetensors weights: find the files, read their headers, check them against the config, map them into memory.

Nothing is read beyond the headers until every check has passed (tensor names, shapes, dtypes, the memory the model
will take), so a refused model leaves nothing half-loaded. Tensors come from ``safetensors.safe_open``, which maps
the file into memory: a tensor whose dtype is already the one asked for is used in place (no copy; pages are read
as the forward pass touches them), others are converted once. Pickle checkpoints (``.bin``, ``.pt``) are refused,
never opened: unpickling runs arbitrary code.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from .errors import PretrainedError
from .memory import DTYPE_BYTES

INDEX = "model.safetensors.index.json"
SINGLE = "model.safetensors"
PICKLE_SUFFIXES = (".bin", ".pt", ".pth", ".ckpt", ".pkl", ".pickle")
TORCH_DTYPES = {"F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16, "F64": torch.float64}


def pickle_refusal(path: Path) -> PretrainedError:
    return PretrainedError(
        f"{path}: a pickle checkpoint (torch.save / pytorch_model.bin); it is never unpickled here, since "
        "unpickling can run arbitrary code. Convert it to safetensors first (e.g. in transformers: "
        "model.save_pretrained(folder, safe_serialization=True)) and load that folder")


def sniff_pickle(path: Path) -> bool:
    """Does the file start like a torch.save zip archive or a raw pickle (whatever its name)?"""
    try:
        with path.open("rb") as fh:
            head = fh.read(4)
    except OSError:
        return False
    return head.startswith(b"PK\x03\x04") or (len(head) >= 2 and head[0] == 0x80 and 2 <= head[1] <= 5)


@dataclass(frozen=True)
class Entry:
    """One tensor as a header describes it."""

    name: str
    file: Path
    dtype: str
    shape: tuple[int, ...]

    @property
    def numel(self) -> int:
        n = 1
        for s in self.shape:
            n *= s
        return n


def weight_files(folder: Path) -> tuple[list[Path], dict[str, str] | None]:
    """The safetensors files of a folder (one, or the shards of an index) and the index's weight map."""
    index = folder / INDEX
    if index.is_file():
        try:
            data = json.loads(index.read_text(encoding="utf-8"))
            weight_map = data["weight_map"]
            if not isinstance(weight_map, dict) or not all(isinstance(v, str) for v in weight_map.values()):
                raise ValueError("weight_map must map tensor names to file names")
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise PretrainedError(f"{index}: not a valid safetensors index ({exc})") from None
        shards = sorted(set(weight_map.values()))
        for shard in shards:
            p = folder / shard
            if Path(shard).name != shard or not p.is_file():
                raise PretrainedError(f"{index}: names the shard {shard!r}, which is missing from {folder}")
        return [folder / s for s in shards], weight_map
    if (folder / SINGLE).is_file():
        return [folder / SINGLE], None
    pickles = sorted(p for p in folder.iterdir() if p.suffix in PICKLE_SUFFIXES)
    if pickles:
        raise pickle_refusal(pickles[0])
    others = sorted(folder.glob("*.safetensors"))
    if len(others) == 1:
        return others, None
    raise PretrainedError(f"{folder}: no {SINGLE} (nor {INDEX}) in the folder")


class WeightSet:
    """Open safetensors files (memory-mapped) and their headers: ``entries`` name → Entry."""

    def __init__(self, files: list[Path], weight_map: dict[str, str] | None) -> None:
        from safetensors import safe_open

        self.handles: dict[Path, Any] = {}
        self.entries: dict[str, Entry] = {}
        for path in files:
            if sniff_pickle(path):
                raise pickle_refusal(path)
            try:
                handle = safe_open(str(path), framework="pt")
                names = list(handle.keys())
                for name in names:
                    sl = handle.get_slice(name)
                    entry = Entry(name, path, str(sl.get_dtype()), tuple(int(s) for s in sl.get_shape()))
                    if weight_map is None or weight_map.get(name) == path.name:
                        self.entries[name] = entry
            except PretrainedError:
                raise
            except Exception as exc:  # safetensors raises its own error type (and OSError) for damaged files
                raise PretrainedError(f"{path}: not a complete safetensors file (truncated or another format: "
                                      f"{exc})") from None
            self.handles[path] = handle
        if weight_map is not None:
            missing = sorted(set(weight_map) - set(self.entries))
            if missing:
                raise PretrainedError(f"{files[0].parent / INDEX}: tensor {missing[0]} is listed in "
                                      f"{weight_map[missing[0]]} but that shard does not hold it")

    def tensor(self, entry: Entry, dtype: torch.dtype, device: str) -> torch.Tensor:
        t = self.handles[entry.file].get_tensor(entry.name)
        if t.dtype != dtype:
            t = t.to(dtype)
        return t if device == "cpu" else t.to(device)


def match(entries: dict[str, Entry], shapes: dict[str, tuple[int, ...]], family_canonical: Any, ignored: Any,
          head_name: str, head_optional: bool, where: Path, config: Path) -> dict[str, Entry]:
    """Canonical name → entry for every expected tensor; refuses a missing, misshapen, non-float or unknown tensor
    with the tensor's name and both shapes."""
    found: dict[str, Entry] = {}
    unknown = []
    for name, entry in entries.items():
        key = family_canonical(name)
        if key in shapes:
            found[key] = entry
        elif not ignored.search(name):
            unknown.append(name)
    for key, shape in shapes.items():
        got = found.get(key)
        if got is None:
            if key == head_name and head_optional:
                continue
            raise PretrainedError(f"{where}: lacks tensor {key} (shape {shape}), which {config.name} implies")
        entry = got
        if entry.shape != shape:
            raise PretrainedError(f"{where}: tensor {entry.name} has shape {entry.shape} but {config.name} implies "
                                  f"{shape}; the config does not match the weights")
        if entry.dtype not in TORCH_DTYPES:
            raise PretrainedError(f"{entry.file}: tensor {entry.name} has dtype {entry.dtype}; expected a float "
                                  f"type ({', '.join(TORCH_DTYPES)})")
    if unknown:
        raise PretrainedError(f"{where}: tensor {unknown[0]} is not part of the model {config.name} describes "
                              f"({len(unknown)} unexpected tensor(s); the config does not match the weights)")
    return found


def weight_bytes(found: dict[str, Entry], dtype: torch.dtype, tied_head: str | None) -> tuple[int, int]:
    """(parameters, bytes in ``dtype``) of the tensors that will be kept (a tied head's copy not counted)."""
    size = torch.empty((), dtype=dtype).element_size()
    params = sum(e.numel for k, e in found.items() if k != tied_head)
    return params, params * size


def file_bytes(found: dict[str, Entry]) -> int:
    return sum(e.numel * DTYPE_BYTES.get(e.dtype, 4) for e in found.values())
