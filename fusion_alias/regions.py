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


@dataclass
class _RegionMeta:
    alias_groups: list[list[str]]
    view_key: object
    backend: str
    schedule: str


def fuse_regions(executor, prep, part, ctx, resolve_backend) -> tuple[list[BoundSymbol], int]:
    """The pass's new bound symbols: the partition's lone nodes as they are, each region fused
    by ``executor.fuse`` (its alias groups and backend, ``resolve_backend(ctx.backend, device)``,
    recorded in ``executor._regions`` first); and the number of regions."""
    bsyms, info, tensor_inputs = prep.bsyms, prep.info, prep.tensor_inputs
    consumers: dict[str, int] = {}  # name -> last item index that consumes it
    for pos, (kind, idx) in enumerate(part.items):  # (positions ascend: the last one written is the largest)
        for i in idx:
            for a in proxy_args(bsyms[i]):
                consumers[a.name] = pos
    device = tensor_inputs[0].device.type if tensor_inputs else None
    backend = None  # the same for every region of the pass: asked at the first
    view_key = lambda n, keys=info.view_key: keys.get(n, ("unknown", n))  # noqa: E731
    out_bsyms: list[BoundSymbol] = []
    counter = 0
    for pos, (kind, idx) in enumerate(part.items):
        if kind == "node":
            out_bsyms.append(bsyms[idx[0]])
            continue
        region_bsyms = [bsyms[i] for i in idx]
        inputs, outputs = _region_io(region_bsyms, pos, consumers)
        groups = _region_alias_groups(inputs, info)
        key = _region_key(region_bsyms)
        if backend is None:
            backend = resolve_backend(ctx.backend, device)
        executor._regions[key] = _RegionMeta(alias_groups=groups, view_key=view_key, backend=backend, schedule=ctx.schedule)
        region = _Region(inputs=inputs, outputs=outputs, bound_symbols=region_bsyms, key=key)
        out_bsyms.append(executor.fuse(region, counter))
        counter += 1
    return out_bsyms, counter


@dataclass
class _Region:
    inputs: list
    outputs: list
    bound_symbols: list
    key: "_RegionKey | None" = None  # ``_region_key(bound_symbols)``, computed once (Thunder's own regions have none)


def _region_key(bsyms: Sequence[BoundSymbol]) -> "_RegionKey":
    """What identifies a region within one pass: its symbols' names and output names, in order."""
    return _RegionKey(bsyms)


def _full_key(bsyms: Sequence[BoundSymbol]) -> tuple:
    return tuple([_entry_key(b) for b in bsyms])


def _entry_key(b: BoundSymbol) -> tuple:
    return b.sym.name, tuple([o.name for o in proxy_outs(b)])


def _end_name(b: BoundSymbol) -> str:
    """A name of ``_entry_key(b)`` for the hash: its first output's, else its symbol's."""
    outs = proxy_outs(b)
    return outs[0].name if outs else b.sym.name


class _RegionKey:
    """``_full_key(bsyms)``, as a dict key that spells it out only when asked to compare.

    A region of a 100k-bsym trace has a 100k-entry key, built and hashed for one dict
    entry that ``fuse`` finds again through the very same key object (``_Region.key``);
    only a region Thunder rebuilt is looked up by a new key, and compared in full then.
    The hash covers the length and the first and last entries' first names: equal keys hash alike, and
    keys of one pass hash apart (the output names of a trace are unique; hashing only the
    symbol names put the 40k two-symbol regions of the aliased 100k bench in one bucket).
    """

    __slots__ = ("bsyms", "_full", "_hash")

    def __init__(self, bsyms: Sequence[BoundSymbol]):
        self.bsyms = list(bsyms)
        self._full: tuple | None = None
        ends = (_end_name(self.bsyms[0]), _end_name(self.bsyms[-1])) if self.bsyms else ()
        self._hash = hash((len(self.bsyms), ends))

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


def _region_io(region_bsyms, pos, consumers):
    produced: set[str] = set()
    inputs: list[Proxy] = []
    seen: set[str] = set()
    outputs: list[Proxy] = []
    for b in region_bsyms:
        _, args, outs, _, _ = flattened(b)  # (proxies only)
        for a in args:
            name = a.name
            if name not in produced and name not in seen:
                seen.add(name)
                inputs.append(a)
        for o in outs:
            name = o.name
            produced.add(name)
            if consumers.get(name, -1) > pos:
                outputs.append(o)
    return inputs, outputs


def _region_alias_groups(inputs, info: AliasInfo) -> list[list[str]]:
    by_group: dict[str, list[str]] = {}
    for p in inputs:
        if isinstance(p, TensorProxy) and p.name in info.root:
            by_group.setdefault(info.group(p.name), []).append(p.name)
    return [names for names in by_group.values() if len(names) > 1]
