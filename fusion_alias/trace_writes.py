"""What a trace writes, looked at once before the graph walk (graph.py, Note [the graph in one walk]):
which nodes write which names, and what a write's hazards ask of each name written.
"""

from __future__ import annotations

from fusion_alias import ops
from fusion_alias.aliasing import AliasInfo, may_write, tensor_args
from fusion_alias.view_relations import view_box

_UNSEEN = object()  # (a box not yet asked for: view_box answers None too)


def trace_writes(bsyms, sym_ids: list, opaque: list[bool], copies: list[int], info: AliasInfo) -> tuple[list, dict]:
    """``(writes, written_group)``: ``writes[i]`` lists ``(tensor, Dest)`` for each tensor
    node ``i`` writes (None: none; ``memory_writes``, its cheap cases inlined), and
    ``written_group`` maps each written name to its memory group (the start of the walk's
    cache of groups, ``graph._walk``)."""
    copy_id = ops.COPY_ID
    writes: list = [None] * len(bsyms)
    dests: dict[str, Dest] = {}
    opaque_writers = _opaque_writers(bsyms, sym_ids, opaque)
    for i in (copies if not opaque_writers else sorted([*copies, *opaque_writers])):
        b = bsyms[i]
        is_copy = sym_ids[i] is copy_id
        ds = (b.args[1],) if is_copy else tensor_args(b)
        if not ds:
            continue
        entry = writes[i] = []
        for d in ds:
            name = d._name
            dest = dests.get(name)
            if dest is None:
                dest = dests[name] = Dest(name, info, is_copy)
            elif is_copy and dest.box is _UNSEEN:
                dest.box = view_box(info, name)
            entry.append((d, dest))
    return writes, {name: dest.group for name, dest in dests.items()}


def _opaque_writers(bsyms, sym_ids: list, opaque: list[bool]) -> list[int]:
    """The nodes outside regions, ``copy_`` aside, that may write an argument (``may_write``).

    Note [may_write asked once per symbol]: ``may_write`` gathers the tags of a bound
    symbol and of its subsymbols, a new set each time; a bound symbol with neither
    subsymbols nor tags of its own may write exactly when its symbol does, so it is
    asked once per symbol (every ``unpack_trivial`` of a trace with 40k inputs, once).
    """
    copy_id = ops.COPY_ID
    asked: dict[int, tuple] = {}  # id(symbol) -> (symbol, may_write): the symbol is kept, its id stays its own
    out = []
    for i, o in enumerate(opaque):
        if o and sym_ids[i] is not copy_id:
            b = bsyms[i]
            if b.subsymbols or b.tags:
                writes = may_write(b)
            else:
                entry = asked.get(id(b.sym))
                if entry is None:
                    entry = asked[id(b.sym)] = (b.sym, may_write(b))
                writes = entry[1]
            if writes:
                out.append(i)
    return out


class Dest:
    """What a write's hazards ask of the name written: its memory group, view key and root,
    whether it is its whole family, and its box (``view_box``; asked of ``copy_``
    destinations only)."""

    __slots__ = ("name", "group", "key", "root", "whole", "box")

    def __init__(self, name: str, info: AliasInfo, written_by_copy: bool):
        self.name = name
        self.group = info.group(name)
        self.key = info.view_key[name]
        self.root = info.root[name]
        self.whole = info.is_whole(name)
        self.box = view_box(info, name) if written_by_copy else _UNSEEN
