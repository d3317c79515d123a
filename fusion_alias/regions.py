"""Region assembly: each region of the partition becomes one fusion bound symbol.

A region's inputs are the values its symbols read and no symbol of it makes;
its outputs are the values it makes that a later item reads. Its alias groups
(inputs that may share memory) travel with it to the backend, as ``_RegionMeta``,
which ``FusionAliasExecutor.fuse`` also finds for a region Thunder hands back
(Note [the pass's regions, found again]).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from thunder.core.proxies import Proxy, TensorProxy
from thunder.core.symbol import BoundSymbol

from fusion_alias import ops
from fusion_alias.aliasing import AliasInfo, proxy_outs


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
# again by each full collection after it (and the first collection after the pass
# visits every new one). ``fuse_regions`` therefore leaves little per region beyond
# the fusion bound symbol itself (Thunder's ``Symbol``, ``BoundSymbol``, its tags set,
# arguments tuple, output and subsymbols lists, and call context dict), its callable,
# and the callable's ``RegionSpec``, which keeps the bound symbol's own tuple and
# lists and plans itself at first use (region_plan.py, Note [regions planned at
# first use]): nine tracked objects. The regions without alias groups (all of them
# there) share one ``_RegionMeta``, the registry of the pass's regions keeps the specs
# under keys the collector does not track (Note [the pass's regions, found again]),
# and no list of a region is copied (no one changes them; ``fuse`` copies the lists of
# a region Thunder hands back).


def fuse_regions(executor, prep, part, ctx, resolve_backend) -> tuple[list[BoundSymbol], int]:
    """The pass's new bound symbols: the partition's lone nodes as they are, each region fused
    by ``executor.fused`` with its alias groups and backend (``resolve_backend(ctx.backend,
    device)``), and its spec recorded in ``executor._regions``; and the number of regions."""
    bsyms, info = prep.bsyms, prep.info
    items = part.items
    regions = _regions_io(bsyms, items, prep.edges)
    backend = None  # the same for every region of the pass: asked at the first
    # (Note [a region keeps its writes' view keys only])
    view_key = lambda n, keys=_destination_keys(bsyms, prep.edges.copies, info.view_key): keys.get(n, ("unknown", n))  # noqa: E731
    no_groups = None  # the meta of every region without alias groups (Note [what a region costs])
    fused = executor.fused
    registry = executor._regions
    root, asked, group = info.root, info.groups_asked(), info.group  # (Note [alias groups of a region])
    sym_ids = prep.edges.sym_ids  # (each symbol's sym.id, as the graph read them)
    out_bsyms: list[BoundSymbol] = []
    counter = 0
    for kind, idx in items:
        if kind == "node":
            out_bsyms.append(bsyms[idx[0]])
            continue
        region_bsyms, inputs, outputs, key = regions.pop()
        groups = _region_alias_groups(inputs, root, asked, group)
        if backend is None:
            device = prep.tensor_inputs[0].device.type if prep.tensor_inputs else None
            backend = resolve_backend(ctx.backend, device)
        if groups:
            meta = _RegionMeta(groups, view_key, backend, ctx.schedule)
        else:
            if no_groups is None:
                no_groups = _RegionMeta([], view_key, backend, ctx.schedule)
            meta = no_groups
        region_ids = [sym_ids[i] for i in idx] if sym_ids is not None else None  # (read, not each symbol's)
        bsym, spec = fused(region_bsyms, tuple(inputs), outputs, meta, counter, region_ids)
        if key in registry:
            register(registry, key, spec)
        else:  # (register, the case of every region of a pass: a key of its own)
            registry[key] = spec
        out_bsyms.append(bsym)
        counter += 1
    return out_bsyms, counter


# Note [a region keeps its writes' view keys only]
# -------------------------------------------------
# A region's plan asks the view key of each of its ``copy_`` destinations (region_plan.py, Note [one write-back
# per memory]), at its first call. Its meta held ``AliasInfo.view_key`` itself for that, so every compiled
# program kept the whole analysis's map (a tuple per proxy name of the trace: about 100k tuples on the bench's
# 100k-bsym ``views`` trace, each scanned by every full collection after the pass). The pass now hands the
# regions a map of the destinations' keys only, made from the graph's list of ``copy_`` nodes, and the
# analysis is freed with the pass. A name not written in the pass (a region Thunder rebuilt from others)
# gets a key of its own, ``("unknown", name)``, as before: no write is taken to cover it.
def _destination_keys(bsyms, copies, view_key: dict) -> dict:
    """name -> view key of each ``copy_`` destination among ``bsyms`` that the analysis has a key of
    (``copies``: their indices; None: all looked for)."""
    if copies is None:
        copies = [i for i, b in enumerate(bsyms) if ops.is_copy(b)]
    keys = {}
    for i in copies:
        name = bsyms[i].args[1].name
        key = view_key.get(name)
        if key is not None:
            keys[name] = key
    return keys


# Note [region inputs and outputs in one walk forward]
# ----------------------------------------------------
# A region's inputs are the proxies it reads that it has not made before (each once, in the
# order first read); its outputs are the values it makes that a later item reads. Both come
# from one question per argument, answered by the graph's walk (a node index or None, kept in
# ``DependencyEdges.arg_producer``: dependency_edges.py, Note [each argument's producer, kept]): where was
# this value made? With ``item_of`` (node ->
# item) and ``place`` (node -> its position in the items' order), an argument of node ``i``
# in item ``k`` whose producer ``j`` sits in the same item before ``i`` is internal; any other
# is an input of ``k``, and, when ``j`` is in an earlier region, a value that region exports.
# Lists indexed by node and a set of the (few) exported names replace the three sets of all
# the names a region reads and makes that a walk by name needed (3-4 probes of sets of every
# name per argument, the cache misses of a 100k-symbol pass: 0.15 s of the bench's 100k
# ``views`` pass, growing 5x from 30k). Example: items ``[R0: t0 = tanh(a); t1 = copy_(t0,
# a)]``, ``[R1: t2 = add(b, 1); t3 = copy_(t2, b)]``, ``[node: return t1]``: ``a`` has no
# producer (an input of R0), ``t0`` is made in R0 before its reader (internal); ``b`` is an
# input of R1; the return reads ``t1``, made in region R0: R0 exports ``t1``, its output.


def _regions_io(bsyms, items, edges) -> list[tuple]:
    """Per region of ``items``, last first: its symbols, its inputs (the proxies it reads before
    it makes them, each once), its outputs (those it makes that a later item reads), and its
    ``_short_key`` (Note [region inputs and outputs in one walk forward]). ``edges``: the
    ``DependencyEdges`` built over ``bsyms``, read for each argument's producer and name and each
    node's proxies (dependency_edges.py, Note [each argument's producer, kept])."""
    n = len(bsyms)
    item_of = [-1] * n
    place = [0] * n
    is_region = [kind != "node" for kind, _ in items]
    p = 0
    for k, (_, idx) in enumerate(items):
        for i in idx:
            item_of[i] = k
            place[i] = p
            p += 1
    arg_producer, arg_name, arg_start = edges.arg_producer, edges.arg_name, edges.arg_start
    node_entry, first_out = edges.node_entry, edges.first_out
    exported: set[str] = set()  # names made in a region and read by a later item
    exported_by: dict[int, set[str]] = {}  # node -> the names of those it makes
    ins: dict[int, list] = {}  # region item -> its inputs
    for k, (kind, idx) in enumerate(items):
        region = is_region[k]
        if region:
            inputs: list[Proxy] = []
            seen: set[str] = set()
            ins[k] = inputs
        for i in idx:
            s, e = arg_start[i], arg_start[i + 1]
            if s == e:
                continue
            here = place[i]
            for q in range(s, e):
                j = arg_producer[q]
                if j is not None:
                    kj = item_of[j]
                    if kj == k and place[j] < here:
                        continue  # made before, in this item
                    if kj >= 0 and kj < k and is_region[kj]:
                        name = arg_name[q]
                        if name not in exported:
                            exported.add(name)
                            made = exported_by.get(j)
                            if made is None:
                                exported_by[j] = {name}
                            else:
                                made.add(name)
                if region:
                    name = arg_name[q]
                    if name not in seen:
                        seen.add(name)
                        inputs.append(node_entry[i][1][q - s])
    out: list[tuple] = []
    for k in range(len(items) - 1, -1, -1):
        if not is_region[k]:
            continue
        idx = items[k][1]
        region_bsyms = [bsyms[i] for i in idx]
        outputs: list[Proxy] = []
        for i in idx:
            made = exported_by.get(i)
            if made is not None:
                for o in node_entry[i][2]:
                    if o._name in made:
                        outputs.append(o)
        if idx:  # (_short_key)
            first, last = first_out[idx[0]], first_out[idx[-1]]
            key = (len(idx), first if first is not None else region_bsyms[0].sym.name,
                   last if last is not None else region_bsyms[-1].sym.name)
        else:
            key = (0,)
        out.append((region_bsyms, ins[k], outputs, key))
    return out


# Note [the pass's regions, found again]
# --------------------------------------
# Thunder's ``update_fusion_call_ctx`` (run by the torch.compile and nvFuser executors'
# passes after ours) hands each fusion bound symbol back to ``fuse`` as a region of its
# own: its subsymbols, its arguments and outputs variableified. ``fuse`` then needs the
# facts the pass had (``_RegionMeta``), and finds them by what identifies a region within
# one pass: its symbols' names and output names, in order (``_full_key``). Spelling that
# out for every region is a tuple per symbol, and a 100k-bsym trace has 100k-symbol
# regions, or 40k regions; so ``executor._regions`` is keyed by a short key, the
# region's length and its first and last symbols' first names (``_short_key``: a tuple
# of an int and two strings, which the garbage collector stops tracking), and holds the
# region's spec (``RegionSpec.meta``: its facts), or the specs of every region with that
# short key, last made last. A lookup compares the full keys of those only, and none
# where the region handed back is the very list of symbols the spec keeps (what
# ``update_fusion_call_ctx`` hands back). The short keys of one pass differ (the output
# names of a trace are unique; symbol names alone put the 40k two-symbol regions of the
# aliased 100k bench under one key), so a region costs the dict entry and nothing it
# would not keep anyway. Equal full keys: the region made last is the one found.


def _short_key(bsyms: Sequence[BoundSymbol]) -> tuple:
    """The length of ``bsyms`` and its first and last entries' ``_end_name``."""
    return (len(bsyms), _end_name(bsyms[0]), _end_name(bsyms[-1])) if bsyms else (0,)


def _full_key(bsyms: Sequence[BoundSymbol]) -> tuple:
    return tuple([_entry_key(b) for b in bsyms])


def _entry_key(b: BoundSymbol) -> tuple:
    return b.sym.name, tuple([o.name for o in proxy_outs(b)])


def _end_name(b: BoundSymbol) -> str:
    """A name of ``_entry_key(b)`` for the short key: its first output's, else its symbol's."""
    outs = proxy_outs(b)
    return outs[0]._name if outs else b.sym.name


def register(registry: dict, key: tuple, spec) -> None:
    """Record the spec of a region of the pass under its ``_short_key`` (Note [the pass's
    regions, found again])."""
    found = registry.get(key)
    if found is None:
        registry[key] = spec
    elif type(found) is list:
        found.append(spec)
    else:
        registry[key] = [found, spec]


def registered_meta(registry: dict, bsyms: Sequence[BoundSymbol]) -> _RegionMeta | None:
    """The facts of the region of the pass with the symbols ``bsyms`` (equal ``_full_key``),
    or None (Note [the pass's regions, found again])."""
    found = registry.get(_short_key(bsyms))
    if found is None:
        return None
    specs = found if type(found) is list else [found]
    full = None
    for spec in reversed(specs):  # (the one made last first)
        if spec.bsyms is bsyms:
            return spec.meta
        if full is None:
            full = _full_key(bsyms)
        if _full_key(spec.bsyms) == full:
            return spec.meta
    return None


# Note [alias groups of a region]
# --------------------------------
# The aliased wide bench makes 20k regions of two tensor inputs in one group
# (``p.add_(g, alpha=-lr)`` with every input in one group: ``[[g0, p0]]``), and 20k of
# one input. So ``fuse_regions`` reads the analysis's group memo and maps once per pass,
# a region asks the memo first (``group`` answers a name only when it is in ``root``,
# and ``root`` only grows, so a name the memo has needs no look in ``root``), and two
# tensor inputs are compared directly; three or more go through ``_shared_groups``
# (3.0 -> 1.3 µs a region there, min of 40 chunks of 1000 regions).


def _region_alias_groups(inputs, root: dict, asked: dict, group) -> list[list[str]]:
    """The names of the region's tensor inputs that share a memory group, per group (two names
    or more), the groups in the order their first names come, the names in input order.
    ``root``, ``asked``, ``group``: the pass's ``info.root``, ``info.groups_asked()`` and
    ``info.group`` (asked once per pass: Note [alias groups of a region])."""
    if len(inputs) < 2:  # (a group has two names or more)
        return []
    named: list[tuple[str, str]] = []  # (group, name) of each tensor input with a group
    for p in inputs:
        if isinstance(p, TensorProxy):
            name = p._name  # (aliasing.py, Note [proxy names read directly])
            g = asked.get(name)
            if g is None:
                if name not in root:  # (a name ``group`` answered is in ``root``)
                    continue
                g = group(name)
            named.append((g, name))
    if len(named) != 2:
        return _shared_groups(named) if named else []
    (g0, n0), (g1, n1) = named  # (the common case: two)
    return [[n0, n1]] if g0 == g1 else []


def _shared_groups(named: list[tuple[str, str]]) -> list[list[str]]:
    """The names of ``named`` (group, name pairs) per group that has two names or more."""
    by_group: dict[str, list[str]] = {}
    for g, name in named:
        by_group.setdefault(g, []).append(name)
    return [names for names in by_group.values() if len(names) > 1]
