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

from fusion_alias.aliasing import AliasInfo, proxy_args, proxy_outs


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
    for pos, (kind, idx) in enumerate(part.items):
        for i in idx:
            for a in proxy_args(bsyms[i]):
                if isinstance(a, Proxy):
                    consumers[a.name] = max(consumers.get(a.name, -1), pos)
    device = tensor_inputs[0].device.type if tensor_inputs else None
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
        executor._regions[key] = _RegionMeta(
            alias_groups=groups,
            view_key=lambda n, keys=info.view_key: keys.get(n, ("unknown", n)),
            backend=resolve_backend(ctx.backend, device),
            schedule=ctx.schedule,
        )
        region = _Region(inputs=inputs, outputs=outputs, bound_symbols=region_bsyms, key=key)
        out_bsyms.append(executor.fuse(region, counter))
        counter += 1
    return out_bsyms, counter


@dataclass
class _Region:
    inputs: list
    outputs: list
    bound_symbols: list
    key: tuple | None = None  # ``_region_key(bound_symbols)``, computed once (Thunder's own regions have none)


def _region_key(bsyms: Sequence[BoundSymbol]) -> tuple:
    return tuple((b.sym.name, tuple(o.name for o in proxy_outs(b) if isinstance(o, Proxy))) for b in bsyms)


def _region_io(region_bsyms, pos, consumers):
    produced: set[str] = set()
    inputs: list[Proxy] = []
    seen: set[str] = set()
    outputs: list[Proxy] = []
    for b in region_bsyms:
        for a in proxy_args(b):
            if isinstance(a, Proxy) and a.name not in produced and a.name not in seen:
                seen.add(a.name)
                inputs.append(a)
        for o in proxy_outs(b):
            if isinstance(o, Proxy):
                produced.add(o.name)
                if consumers.get(o.name, -1) > pos:
                    outputs.append(o)
    return inputs, outputs


def _region_alias_groups(inputs, info: AliasInfo) -> list[list[str]]:
    by_group: dict[str, list[str]] = {}
    for p in inputs:
        if isinstance(p, TensorProxy) and p.name in info.root:
            by_group.setdefault(info.group(p.name), []).append(p.name)
    return [names for names in by_group.values() if len(names) > 1]
