"""Region assembly: each region of the partition becomes one fusion bound symbol.

A region's inputs are the values its symbols read and no symbol of it makes;
its outputs are the values it makes that a later item reads. Its alias groups
(inputs that may share memory) travel with it to the backend, as ``_RegionMeta``
keyed by the region's symbols, for ``FusionAliasExecutor.fuse`` to find.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from thunder.core.proxies import Proxy, TensorProxy
from thunder.core.symbol import BoundSymbol

from fusion_alias.aliasing import AliasInfo, flattened, proxy_args, proxy_outs


@dataclass(slots=True)
class _RegionMeta:
    alias_groups: list[list[str]]  # (read only: regions without groups share one meta)
    view_key: object
    backend: str
    schedule: str


# (aliasing.py, Note [proxy names read directly]: region assembly reads about a dozen names
# per region, 40k regions per pass on the aliased 100k bench, so its loops over every symbol
# read ``_name`` itself, as plan_region does.)


# Note [what a region costs]
# --------------------------
# The aliased 100k-bsym bench makes 40k regions in one pass, so everything made per
# region is paid 40k times, and every container that outlives the pass is scanned
# again by each full collection after it. ``fuse_regions`` therefore makes little per
# region beyond the fusion bound symbol itself: the regions without alias groups (all
# of them there) share one ``_RegionMeta``, ``_Region`` has slots, and the region's list
# of symbols is both its key's and its fusion bound symbol's ``subsymbols`` (neither
# changes it; ``fuse`` copies the lists of a region Thunder rebuilt).


def fuse_regions(executor, prep, part, ctx, resolve_backend) -> tuple[list[BoundSymbol], int]:
    """The pass's new bound symbols: the partition's lone nodes as they are, each region fused
    by ``executor.fuse`` (its alias groups and backend, ``resolve_backend(ctx.backend, device)``,
    recorded in ``executor._regions`` first); and the number of regions."""
    bsyms, info = prep.bsyms, prep.info
    items = part.items
    consumers = _last_consumers(bsyms, items)
    backend = None  # the same for every region of the pass: asked at the first
    view_key = lambda n, keys=info.view_key: keys.get(n, ("unknown", n))  # noqa: E731
    no_groups = None  # the meta of every region without alias groups (Note [what a region costs])
    metas = executor._regions
    fuse = executor.fuse
    out_bsyms: list[BoundSymbol] = []
    counter = 0
    for pos, (kind, idx) in enumerate(items):
        if kind == "node":
            out_bsyms.append(bsyms[idx[0]])
            continue
        region_bsyms = [bsyms[i] for i in idx]
        inputs, outputs, ends = _region_io(region_bsyms, pos, consumers)
        groups = _region_alias_groups(inputs, info)
        key = _RegionKey(region_bsyms, ends)
        if backend is None:
            device = prep.tensor_inputs[0].device.type if prep.tensor_inputs else None
            backend = resolve_backend(ctx.backend, device)
        if groups:
            meta = _RegionMeta(groups, view_key, backend, ctx.schedule)
        else:
            if no_groups is None:
                no_groups = _RegionMeta([], view_key, backend, ctx.schedule)
            meta = no_groups
        metas[key] = meta
        out_bsyms.append(fuse(_Region(inputs, outputs, region_bsyms, key), counter))
        counter += 1
    return out_bsyms, counter


def _last_consumers(bsyms, items) -> dict[str, int]:
    """name -> the position of the last item that reads it."""
    consumers: dict[str, int] = {}
    for pos, (_, idx) in enumerate(items):  # (positions ascend: the last one written is the largest)
        for i in idx:
            for a in proxy_args(bsyms[i]):
                consumers[a._name] = pos  # (aliasing.py, Note [proxy names read directly])
    return consumers


@dataclass(slots=True)
class _Region:
    inputs: list
    outputs: list
    bound_symbols: list
    key: "_RegionKey | None" = None  # ``_RegionKey(bound_symbols)``, computed once (Thunder's own regions have none)


def _region_key(bsyms: Sequence[BoundSymbol]) -> "_RegionKey":
    """What identifies a region within one pass: its symbols' names and output names, in order."""
    return _RegionKey(list(bsyms))


def _full_key(bsyms: Sequence[BoundSymbol]) -> tuple:
    return tuple([_entry_key(b) for b in bsyms])


def _entry_key(b: BoundSymbol) -> tuple:
    return b.sym.name, tuple([o.name for o in proxy_outs(b)])


def _end_name(b: BoundSymbol) -> str:
    """A name of ``_entry_key(b)`` for the hash: its first output's, else its symbol's."""
    outs = proxy_outs(b)
    return outs[0]._name if outs else b.sym.name


def _end_names(bsyms: Sequence[BoundSymbol]) -> tuple:
    """What ``_RegionKey`` hashes besides the length: its first and last entries' ``_end_name``."""
    return (_end_name(bsyms[0]), _end_name(bsyms[-1])) if bsyms else ()


class _RegionKey:
    """``_full_key(bsyms)``, as a dict key that spells it out only when asked to compare.

    A region of a 100k-bsym trace has a 100k-entry key, built and hashed for one dict
    entry that ``fuse`` finds again through the very same key object (``_Region.key``);
    only a region Thunder rebuilt is looked up by a new key, and compared in full then.
    The hash covers the length and the first and last entries' first names: equal keys hash alike, and
    keys of one pass hash apart (the output names of a trace are unique; hashing only the
    symbol names put the 40k two-symbol regions of the aliased 100k bench in one bucket).
    The key keeps ``bsyms`` itself, not a copy: its maker must not change the list
    afterwards (``_region_key`` copies).
    """

    __slots__ = ("bsyms", "_full", "_hash")

    def __init__(self, bsyms: list[BoundSymbol], ends: tuple | None = None):
        """``ends``: ``_end_names(bsyms)``, where the maker has read them already."""
        self.bsyms = bsyms
        self._full: tuple | None = None
        self._hash = hash((len(bsyms), _end_names(bsyms) if ends is None else ends))

    def full(self) -> tuple:
        if self._full is None:
            self._full = _full_key(self.bsyms)
        return self._full

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other) -> bool:
        if self is other:
            return True
        if not isinstance(other, _RegionKey):
            return NotImplemented
        return self._hash == other._hash and self.full() == other.full()


def _region_io(region_bsyms, pos, consumers) -> tuple[list[Proxy], list[Proxy], tuple]:
    """The region's inputs (the proxies it reads before it makes them, each once), its
    outputs (those it makes that an item after position ``pos`` reads), and its
    ``_end_names`` for the key, read on the way."""
    known: set[str] = set()  # the names read so far and the names made so far
    inputs: list[Proxy] = []
    outputs: list[Proxy] = []
    first_end = None
    for b in region_bsyms:
        _, args, outs, _, _ = flattened(b)  # (proxies only)
        if first_end is None:
            first_end = outs[0]._name if outs else b.sym.name  # (_end_name)
        for a in args:
            name = a._name
            if name not in known:
                known.add(name)
                inputs.append(a)
        for o in outs:
            name = o._name
            known.add(name)
            if consumers.get(name, -1) > pos:
                outputs.append(o)
    if first_end is None:
        return inputs, outputs, ()
    return inputs, outputs, (first_end, outs[0]._name if outs else b.sym.name)  # (b: the last symbol)


def _region_alias_groups(inputs, info: AliasInfo) -> list[list[str]]:
    if len(inputs) < 2:  # (a group has two names or more)
        return []
    by_group: dict[str, list[str]] = {}
    root = info.root
    for p in inputs:
        if isinstance(p, TensorProxy) and p.name in root:
            by_group.setdefault(info.group(p.name), []).append(p.name)
    return [names for names in by_group.values() if len(names) > 1]
