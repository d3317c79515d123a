"""What one fusion pass decided, as plain data: regions, write-backs, and why each cut is there.

The fusion pass hands :func:`observe` what it computed (the prepared bsyms and
graph, the partition, the fused trace). From that, :func:`build` makes a
:class:`PartitionReport`, which ``fusion_alias.log`` prints and
``fusion_alias.show`` draws. Nothing here changes a decision: it reads them.

Note [which edge forced a cut]
------------------------------
The partitioner (``partition.py``) gives each fusible node the least stage its
in-edges allow: the stage of the predecessor, plus one across an *unsafe*
hazard edge or after a node that runs outside regions. So a node's stage is
*forced* by the in-edges across which the stage goes up by exactly that step
and that land on the node's stage. Worked example, seed h with inputs
``(x, x[0, 0])``::

    b = a[0, 0]                 # view, outside regions
    t0 = exp(a); copy_(t0, a)   # stage 0
    t2 = tanh(b); copy_(t2, b)  # stage 1: raw edge copy_(t0, a) -> tanh(b)
                                #   (b reads a's memory after the write)
    mul(t0', t2')               # stage 2: raw edge copy_(t2, b) -> mul (reads a again)

A stage can rise along several edges at once; every such edge is listed.
The cut reasons are computed here from the graph; ``partition.py`` does not
keep them.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass, field

from thunder.core.proxies import TensorProxy
import thunder.core.prims as prims

from fusion_alias import ops
from fusion_alias.aliasing import forget_flattened
from fusion_alias.graph import memory_reads, memory_writes
from fusion_alias.partition import backward_nodes

HAZARD_KINDS = ("raw", "war", "waw")

# Passes over more bound symbols than this are not kept for pictures (a picture of them
# is unreadable, and keeping the graph alive costs memory). The log still reports them.
KEEP_LIMIT = 2000


@dataclass
class Node:
    index: int
    label: str  # "t0 = exp(a)"
    op: str  # "exp"
    stage: int | None  # None: runs outside regions
    region: int | None  # index among the regions (FusionAlias<k>), None outside
    writes: list[str] = field(default_factory=list)  # tensor names whose memory it writes
    reads: list[str] = field(default_factory=list)  # tensor names whose memory it reads


@dataclass
class Edge:
    src: int
    dst: int
    kinds: frozenset  # subset of {"data", "raw", "war", "waw"}
    unsafe: bool
    forced_cut: bool = False


@dataclass
class Cut:
    """Why ``region`` could not join what precedes it: edge ``src -> dst`` raised the stage."""

    region: int  # the region that starts here
    src: int
    dst: int
    reason: str  # "raw" | "war" | "waw" | "outside" (src runs outside regions) | "backward"
    written: list[str] = field(default_factory=list)
    read: list[str] = field(default_factory=list)

    def describe(self, nodes: list[Node]) -> str:
        s, d = nodes[self.src], nodes[self.dst]
        if self.reason == "outside":
            return f"after `{s.label}`, which runs outside regions, comes `{d.label}`"
        if self.reason == "backward":
            return f"`{d.label}` computes gradients: backward ops form their own region"
        w, r = ", ".join(self.written) or "?", ", ".join(self.read) or "?"
        if self.reason == "raw":
            what = f"write of {w} then read of {r} (read after write through an alias)"
        elif self.reason == "war":
            what = f"read of {r} then write of {w} (the read is not the write's own elementwise read)"
        else:
            what = f"write of {w} then write of {r} (overlapping write-backs that do not coalesce)"
        return f"{self.reason}: `{s.label}` -> `{d.label}`: {what}"


@dataclass
class Region:
    index: int
    name: str  # FusionAlias<k>
    stage: int
    nodes: list[int]
    backward: bool = False
    writebacks: list[tuple[str, str]] = field(default_factory=list)  # (value written, destination)


@dataclass
class PartitionReport:
    function: str
    nodes: list[Node]
    edges: list[Edge]
    regions: list[Region]
    cuts: list[Cut]
    alias_groups: list[list[str]]  # memory groups that hold more than one tensor (their roots)
    order: list[tuple[str, int]] = field(default_factory=list)  # ("region", k) | ("node", i), as run

    @property
    def outside(self) -> list[Node]:
        return [n for n in self.nodes if n.region is None]


# -- building ---------------------------------------------------------------


def _short(x) -> str:
    if isinstance(x, TensorProxy):
        return x.name
    if isinstance(x, (list, tuple)):
        inner = ", ".join(_short(y) for y in x)
        return f"[{inner}]" if len(inner) < 30 else "[...]"
    s = getattr(x, "name", None) or repr(x)
    return s if len(s) <= 12 else s[:11] + "…"


def label(bsym) -> str:
    """``t0 = exp(a)``: one line for a bound symbol, its outputs and arguments named."""
    if bsym.sym.id is prims.PrimIDs.RETURN:
        return "return"
    if bsym.sym.id is prims.PrimIDs.UNPACK_TRIVIAL:
        return f"{bsym.output.name}  (input)"
    outs = [o.name for o in _as_list(bsym.output) if hasattr(o, "name")]
    args = ", ".join(_short(a) for a in bsym.args)
    lhs = f"{', '.join(outs)} = " if outs else ""
    return f"{lhs}{bsym.sym.name}({args})"


def _as_list(x):
    if isinstance(x, (list, tuple)):
        return [y for z in x for y in _as_list(z)]
    return [x]


def build(function: str, prep, part, fused_trace=None, ignore_hazards: bool = False) -> PartitionReport:
    """The report of one pass (``prep``: ``executor.Prepared``; ``part``: ``partition.Partition``)."""
    bsyms, graph, info = prep.bsyms, prep.graph, prep.info
    stage = part.stage  # the nodes the partitioner placed in stages (fusible ones) -> their stage
    level = _levels(len(bsyms), graph, stage)

    region_of: dict[int, int] = {}
    regions: list[Region] = []
    order: list[tuple[str, int]] = []
    backward = backward_nodes(bsyms)
    for kind, idx in part.items:
        if kind != "region":
            order.append(("node", idx[0]))
            continue
        k = len(regions)
        order.append(("region", k))
        regions.append(Region(k, f"FusionAlias{k}", part.stage[idx[0]], list(idx), backward=idx[0] in backward))
        region_of.update((i, k) for i in idx)
    _add_writebacks(regions, bsyms, fused_trace)

    nodes = []
    for i, b in enumerate(bsyms):
        opaque = not prep.is_fusible(b)  # as graph.build_graph decides what an op writes
        writes = [d.name for d in memory_writes(b, opaque and not ops.is_view(b))]
        reads = [p.name for p in memory_reads(b)]
        nodes.append(Node(i, label(b), b.sym.name, part.stage.get(i) if i in region_of else None,
                          region_of.get(i), writes, reads))

    edges = []
    cuts = []
    for u, v, data in graph.edges(data=True):
        e = Edge(u, v, frozenset(data["kinds"]), bool(data["unsafe"]))
        edges.append(e)
        rv = region_of.get(v)
        if rv is None or region_of.get(u) == rv:
            continue
        # the stage rises by one across an unsafe hazard edge or after an op outside stages
        rises = u not in stage or (e.unsafe and not ignore_hazards)
        if not rises or level[u] + 1 != level[v] or level[v] <= 0:
            continue  # this edge did not raise v's stage (or v is in the first stage)
        e.forced_cut = True
        cuts.append(_cut(rv, u, v, e, stage, info, nodes))
    for r in regions:
        if r.backward and r.index > 0 and not any(c.region == r.index for c in cuts):
            cuts.append(Cut(r.index, r.nodes[0], r.nodes[0], "backward"))
    cuts.sort(key=lambda c: (c.region, c.dst, c.src))
    # memory groups that join different tensors (not just a tensor and the results of writes into it)
    roots_by_group: dict[str, set] = {}
    for name, root in info.root.items():
        roots_by_group.setdefault(info.group(name), set()).add(root)
    groups = sorted(sorted(roots) for roots in roots_by_group.values() if len(roots) > 1)
    return PartitionReport(function, nodes, edges, regions, cuts, groups, order)


def _levels(n: int, graph, stage: dict) -> list[int]:
    """Each node's level: its stage if it has one, else the largest level among its predecessors
    (an op outside regions runs after the region of that stage; -1: before every region)."""
    level = [-1] * n
    pred = graph.pred
    for v in range(n):  # program order is a topological order
        s = stage.get(v)
        level[v] = s if s is not None else max((level[u] for u in pred[v]), default=-1)
    return level


def _cut(region: int, u: int, v: int, e: Edge, stage: dict, info, nodes) -> Cut:
    if u not in stage:
        return Cut(region, u, v, "outside")
    kinds = [k for k in HAZARD_KINDS if k in e.kinds]
    reason = kinds[0] if kinds else "raw"
    nu, nv = nodes[u], nodes[v]

    def same_memory(xs, ys):
        gy = {info.group(y) for y in ys if y in info.root}
        return [x for x in xs if x in info.root and info.group(x) in gy]

    if reason == "raw":
        written, read = same_memory(nu.writes, nv.reads), same_memory(nv.reads, nu.writes)
    elif reason == "war":
        read, written = same_memory(nu.reads, nv.writes), same_memory(nv.writes, nu.reads)
    else:  # waw: "written" is the first write, "read" slot holds the second
        written, read = same_memory(nu.writes, nv.writes), same_memory(nv.writes, nu.writes)
    return Cut(region, u, v, reason, written, read)


def _add_writebacks(regions: list[Region], bsyms, fused_trace) -> None:
    """Each region's write-backs, as lowering planned them (``RegionSpec.writebacks``)."""
    if fused_trace is None:
        return
    specs = {}
    for b in fused_trace.bound_symbols:
        if b.sym.is_fusion and b.sym.name.startswith("FusionAlias"):
            fn = (b._call_ctx or {}).get(b.sym.name)
            spec = getattr(fn, "spec", None)
            if spec is not None:
                specs[b.sym.name] = spec
    for r in regions:
        spec = specs.get(r.name)
        if spec is None:
            continue
        for i in spec.writebacks:
            value = getattr(spec.bsyms[i].args[0], "name", "?")
            r.writebacks.append((value, spec.writeback_dst[i]))


# -- what the pass hands over -------------------------------------------------

# fused trace -> (function name, prep, part, ignore_hazards); kept while Thunder keeps the trace
_KEPT: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def observe(trace, prep, part, fused_trace, ignore_hazards: bool = False) -> None:
    """Called by the fusion pass once it has fused ``trace``: log it, keep it for pictures.

    Kept under the compilation's first trace (``thunder.last_traces(jitted)[0]``, the
    program as traced): Thunder makes new traces from the fused one afterwards, and
    rebuilds its fusion symbols, but keeps that one.
    """
    from fusion_alias import log

    traced, name = _compilation()
    if log.wants_regions():
        log.log_report(build(name, prep, part, fused_trace, ignore_hazards))
    if len(prep.bsyms) <= KEEP_LIMIT:
        try:
            _KEPT[traced if traced is not None else fused_trace] = (name, prep, part, fused_trace, ignore_hazards)
        except TypeError:  # not weakly referenceable: no picture for it
            pass


def _compilation():
    """(the first trace of the compilation under way, the compiled function's name)."""
    try:
        from thunder.core.compile_data import _compile_data

        cd, cs = _compile_data.get()
    except (LookupError, TypeError, ValueError):
        return None, "<program>"
    fn = getattr(cd, "fn", None)
    name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or type(fn).__name__
    traces = getattr(cs, "last_traces", None) or [None]
    return traces[0], name


def kept_report(traces) -> PartitionReport | None:
    """The report of the compilation ``traces`` (``thunder.last_traces(jitted)``) belong to, if kept."""
    for t in traces:
        entry = _KEPT.get(t)
        if entry is not None:
            name, prep, part, fused, ignore = entry
            try:
                return build(name, prep, part, fused, ignore)
            finally:
                forget_flattened()  # what building remembered, as the pass forgets it
    return None
