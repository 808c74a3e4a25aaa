"""Deep-merge of located documents (the `extends:` and defaults rules).

Maps merge key by key, lists and scalars replace, and `null` deletes the key. The
positions of whatever wins travel with it, so `assay explain` can name the file and
line a resolved value came from, across an `extends:` chain.
"""

from __future__ import annotations

import copy
from typing import Any

from compiler.errors import Loc
from compiler.yamlio import Doc, Path_


def _under(table: dict[Path_, Loc], path: Path_) -> list[Path_]:
    n = len(path)
    return [p for p in table if p[:n] == path]


def _drop(doc: Doc, path: Path_) -> None:
    for table in (doc.values, doc.keys):
        for p in _under(table, path):
            del table[p]


def _copy_locs(dst: Doc, src: Doc, src_path: Path_, dst_path: Path_) -> None:
    n = len(src_path)
    for s_table, d_table in ((src.values, dst.values), (src.keys, dst.keys)):
        for p in _under(s_table, src_path):
            d_table[(*dst_path, *p[n:])] = s_table[p]


def overlay(base: Doc, top: Doc, *, drop: tuple[str, ...] = ()) -> Doc:
    """A new Doc: `top` merged over `base` (positions kept); keys in `drop` are not inherited."""
    out = Doc(top.file, copy.deepcopy(base.data), dict(base.values), dict(base.keys))
    if isinstance(out.data, dict):
        for key in drop:
            out.data.pop(key, None)
            _drop(out, (key,))
    _merge_into(out, out.data, top, top.data, (), ())
    out.values[()] = top.values.get((), Loc(top.file, 1, 1))
    return out


def _merge_into(out: Doc, dst: Any, top: Doc, src: Any, src_path: Path_, dst_path: Path_) -> None:
    for key, value in src.items():
        sp, dp = (*src_path, key), (*dst_path, key)
        if value is None:
            dst.pop(key, None)
            _drop(out, dp)
            continue
        if isinstance(value, dict) and isinstance(dst.get(key), dict):
            out.keys[dp] = top.keys.get(sp, out.keys.get(dp, Loc(top.file, 1, 1)))
            _merge_into(out, dst[key], top, value, sp, dp)
            continue
        _drop(out, dp)
        dst[key] = copy.deepcopy(value)
        _copy_locs(out, top, sp, dp)


def merge_values(base: Any, top: Any) -> Any:
    """Plain deep-merge without positions (same rules)."""
    if not (isinstance(base, dict) and isinstance(top, dict)):
        return copy.deepcopy(top)
    out = copy.deepcopy(base)
    for key, value in top.items():
        if value is None:
            out.pop(key, None)
        elif isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge_values(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out
