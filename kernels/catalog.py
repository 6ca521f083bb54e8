"""What the window shows about the bundled kernels, without importing them (and so without numba).

Importing a kernel module compiles nothing but imports numba, which takes most of a second: the window's
kernel list, a kernel's teaching note and its frame notes must not wait for that. ``catalog.json`` (next
to this file) holds those plain facts, written from the kernels themselves by::

    python -m gpuviz.kernels.catalog

It also keeps a digest of every kernel module's source: when a module was edited after the catalog was
written, :func:`kernel_catalog` reads the kernels themselves instead (slower, never wrong), and
``tests/test_startup.py`` fails until the catalog is written again.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, fields
from pathlib import Path

CATALOG_PATH = Path(__file__).with_name("catalog.json")
CATALOG_VERSION = 1


@dataclass(frozen=True)
class KernelInfo:
    """A bundled kernel's facts that need no numba: :class:`gpuviz.kernels.KernelSpec` less its callables."""

    name: str
    description: str
    note: str
    default_size: int
    small_size: int
    default_block: tuple
    size_label: str = "elements"
    group: str = ""
    rank: int = 0
    uses_warp_shuffle: bool = False
    tile: int = 0
    items_per_thread: int = 1
    has_race: bool = False
    frame_notes: tuple = ()


_FIELDS = tuple(f.name for f in fields(KernelInfo))


def source_digest() -> str:
    """SHA-256 of the kernel modules' sources (this file and the catalog aside), in file-name order."""
    h = hashlib.sha256()
    for path in sorted(Path(__file__).parent.glob("*.py")):
        if path.name == Path(__file__).name:
            continue
        h.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()


def info_of(spec) -> KernelInfo:
    """The plain facts of a :class:`gpuviz.kernels.KernelSpec`."""
    values = {name: getattr(spec, name) for name in _FIELDS}
    values["default_block"] = tuple(int(b) for b in spec.default_block)
    values["frame_notes"] = tuple((str(stop), str(note)) for stop, note in spec.frame_notes)
    return KernelInfo(**values)


def _from_kernels() -> dict[str, KernelInfo]:
    from . import all_kernels

    return {name: info_of(spec) for name, spec in all_kernels().items()}


def _from_json(entries) -> dict[str, KernelInfo]:
    out = {}
    for entry in entries:
        values = {name: entry[name] for name in _FIELDS if name in entry}
        values["default_block"] = tuple(int(b) for b in values["default_block"])
        values["frame_notes"] = tuple((str(stop), str(note)) for stop, note in values.get("frame_notes", ()))
        info = KernelInfo(**values)
        out[info.name] = info
    return out


def read_catalog(path: Path = CATALOG_PATH) -> dict | None:
    """The stored catalog's JSON, or None when it is missing or unreadable."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and data.get("version") == CATALOG_VERSION else None


_CATALOG: dict[str, KernelInfo] | None = None


def kernel_catalog() -> dict[str, KernelInfo]:
    """Every bundled kernel's facts by name, in teaching order: from ``catalog.json`` when it was written from
    the kernel sources as they are now, else from the kernels themselves (which imports numba)."""
    global _CATALOG
    if _CATALOG is None:
        data = read_catalog()
        catalog = None
        if data is not None and data.get("source_sha256") == source_digest():
            try:
                catalog = _from_json(data["kernels"])
            except (KeyError, TypeError, ValueError):
                catalog = None
        _CATALOG = catalog if catalog is not None else _from_kernels()
    return dict(_CATALOG)


def kernel_info(name: str) -> KernelInfo:
    """One bundled kernel's facts; KeyError naming the known kernels when there is none of that name."""
    catalog = kernel_catalog()
    try:
        return catalog[name]
    except KeyError:
        raise KeyError(f"no bundled kernel named {name!r}; known kernels: {', '.join(catalog)}") from None


def catalog_json() -> dict:
    """The catalog as ``catalog.json`` stores it, worked out from the kernels now."""
    kernels = []
    for info in _from_kernels().values():
        entry = asdict(info)
        entry["default_block"] = list(info.default_block)
        entry["frame_notes"] = [list(pair) for pair in info.frame_notes]
        kernels.append(entry)
    return {"version": CATALOG_VERSION, "source_sha256": source_digest(), "kernels": kernels}


def write_catalog(path: Path = CATALOG_PATH) -> Path:
    path.write_text(json.dumps(catalog_json(), indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


if __name__ == "__main__":
    print(f"wrote {write_catalog()}")
