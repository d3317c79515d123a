"""Region quality: fusion_alias's region count next to Thunder's and the optimum.

For one :class:`~fusion_alias.bench.programs.Program`:

* **fusion_alias**: ``fusion_alias.jit(fn, backend="reference")`` called on CPU
  tensors; the count is ``len(fusion_alias.regions(jitted))``. The pass's
  prepared graph is captured on the way (``executor.prepare`` is wrapped for
  the duration of the call) for the optimum below.
* **thunder**: Thunder 0.2.6's own alias pass,
  ``thunder.core.update_aliases.insert_alias_updates``, run on the trace
  Thunder hands it (the one after "Remove context manager prims", identical
  with or without ``skip_inplace_alias_updates``), with Thunder's own alias
  indices (flat arguments sharing a storage); then Thunder's DCE, then the
  trace flattened to prims with fusion_alias's fusibility rule
  (``update_aliases`` never fusible) and grouped by
  ``thunder.executors.data_dependent_partition.fuse_bound_symbols`` (its
  default, consecutive grouping, which ``thunder.jit`` uses; the dataflow
  grouping ThunderFX defaults to is reported too). Groups with at least one
  non-view fusible op are the regions nvFuser would get. "error" when
  Thunder's alias pass raises.
* **optimum**: fewest regions of any legal partition of fusion_alias's graph
  (:mod:`fusion_alias.bench.optimum`): exact search on programs with at most
  ``max_nodes`` fusible nodes; on larger ones only when fusion_alias's count
  meets the lower bound (then it is the optimum), else n/a.
"""

from __future__ import annotations

from dataclasses import dataclass, field
import time
import traceback

import torch
import thunder
from thunder.core.pytree import tree_flatten
from thunder.core.trace import from_trace

import fusion_alias
from fusion_alias import ops
from fusion_alias.executor import executor
from fusion_alias.partition import partition
from fusion_alias.bench import optimum as opt
from fusion_alias.bench import traffic
from fusion_alias.bench.kernel_model import kernel_model_regions
from fusion_alias.bench.programs import Program


@dataclass
class RegionRow:
    name: str
    family: str
    fusible_nodes: int = 0
    fusion_alias: int | None = None
    thunder: int | str | None = None  # int, or "error"
    thunder_dataflow: int | str | None = None
    optimum: int | None = None
    optimum_note: str = ""  # "exact search", "= lower bound", "n/a (37 nodes)", ...
    lower_bound: int | None = None
    correct: bool | None = None  # fusion_alias's outputs and inputs match eager
    legal: str | None = None  # None = fusion_alias's partition is legal, else why not
    thunder_error: str = ""
    thunder_racy: int | None = None  # Thunder regions with an alias hazard inside (wrong on nvFuser)
    error: str = ""
    error_trace: str = ""
    better_partition: list = field(default_factory=list)  # when the optimum beats fusion_alias
    kernel_model: int | None = None  # the kernel model's region count (bench/kernel_model.py)
    traffic: int | None = None  # bytes fusion_alias's regions read and write (bench/traffic.py)
    thunder_traffic: int | None = None  # ... Thunder's groups
    traffic_lower_bound: int | None = None  # ... any partition
    seconds: float = 0.0


# -- fusion_alias ------------------------------------------------------------------


class _CapturePrepare:
    """Wraps ``executor.prepare`` (an instance attribute shadows the method) to keep what it returns."""

    def __init__(self):
        self.prepared = []

    def __enter__(self):
        original = type(executor).prepare.__get__(executor)

        def spy(trace, input_groups=None):
            prep = original(trace, input_groups)
            self.prepared.append(prep)
            return prep

        executor.prepare = spy
        return self

    def __exit__(self, *exc):
        executor.__dict__.pop("prepare", None)
        return False


def _same(a, b) -> bool:
    fa, _ = torch.utils._pytree.tree_flatten(a)
    fb, _ = torch.utils._pytree.tree_flatten(b)
    if len(fa) != len(fb):
        return False
    for x, y in zip(fa, fb):
        if isinstance(x, torch.Tensor) != isinstance(y, torch.Tensor):
            return False
        if isinstance(x, torch.Tensor):
            if x.shape != y.shape or not torch.allclose(x, y, rtol=1e-4, atol=1e-5, equal_nan=True):
                return False
    return True


def _thunder_alias_indices(flat_args) -> list[list[int]]:
    """Thunder's rule (``thunder/__init__.py``): flat tensor arguments that share a storage."""
    by_storage: dict[int, list[int]] = {}
    for i, t in enumerate(flat_args):
        if type(t) is torch.Tensor and t.layout is torch.strided:
            by_storage.setdefault(t.untyped_storage().data_ptr(), []).append(i)
    return [idx for idx in by_storage.values() if len(idx) > 1]


def _pre_alias_trace(jitted):
    """The computation trace Thunder's alias pass would receive."""
    traces = thunder.last_traces(jitted)
    for t in traces:
        prov = t.get_provenance()
        if prov is not None and "Remove context manager prims" in str(prov):
            return t
    return traces[min(2, len(traces) - 1)]


# -- Thunder ----------------------------------------------------------------------


def thunder_is_fusible(bsym) -> bool:
    return executor.is_fusible(bsym) and not ops.is_update_aliases(bsym)


def _merge(a, b) -> bool:
    """nvFuser's ``_should_fuse`` with fusion_alias's fusibility rule."""

    def ok(node):
        return len(node.group_bsyms) > 1 or thunder_is_fusible(node.group_bsyms[0])

    return ok(a) and ok(b)


def flatten_trace(trace):
    """``trace`` with every bound symbol flattened as fusion_alias flattens it."""
    flat = []
    for b in trace.bound_symbols:
        flat.extend(executor.flatten(b))
    out = from_trace(trace)
    out.bound_symbols = flat
    return out


def count_thunder_groups(groups) -> int:
    return sum(1 for grp in groups if any(thunder_is_fusible(b) and not ops.is_view(b) for b in grp))


def racy_groups(flat_trace, groups, same_memory) -> int:
    """How many of Thunder's groups hold both ends of an unsafe hazard edge.

    The hazard graph is fusion_alias's (``graph.build_graph``) on Thunder's own
    flattened trace, without read substitution: Thunder reads memory where it
    reads a name. ``update_aliases`` are alias facts (their outputs join their
    inputs' families); ``same_memory`` lists trace inputs that may overlap.
    A group with such an edge is a region nvFuser would run with a hazard
    inside (a stale or racing read), i.e. a count bought with a wrong result.
    """
    from fusion_alias.aliasing import analyze
    from fusion_alias.graph import build_graph
    from thunder.core.proxies import TensorProxy

    bsyms = list(flat_trace.bound_symbols)
    inputs = [p for p in tree_flatten(flat_trace.args)[0] if isinstance(p, TensorProxy)]
    info = analyze(bsyms, inputs, same_memory)
    graph = build_graph(bsyms, info, thunder_is_fusible)
    from fusion_alias.graph import memory_reads

    index = {id(b): i for i, b in enumerate(bsyms)}
    producer = {o.name: i for i, b in enumerate(bsyms) for o in b.flat_outs if isinstance(o, TensorProxy)}

    def hazard(u: int, v: int) -> bool:
        data = graph.edges[u, v]
        if not data["unsafe"]:
            return False
        if data["kinds"] <= {"raw", "data"} and ops.is_copy(bsyms[u]):
            # reading the copy_ result itself, with no write in between, is a data
            # edge inside nvFuser (the SSA value written), not a stale read
            grp = info.group(bsyms[u].args[1].name)
            reads = [p for p in memory_reads(bsyms[v]) if p.name in info.root and info.group(p.name) == grp]
            return not all(producer.get(p.name) == u for p in reads)
        return True

    racy = 0
    for grp in groups:
        members = {index[id(b)] for b in grp if id(b) in index}
        if any(hazard(u, v) for u in members for v in graph.successors(u) if v in members):
            racy += 1
    return racy


def _input_memory_groups(trace, info) -> list[list[str]]:
    """Trace inputs that fusion_alias's analysis put in one memory group."""
    from thunder.core.proxies import TensorProxy

    by_group: dict[str, list[str]] = {}
    for p in tree_flatten(trace.args)[0]:
        if isinstance(p, TensorProxy) and p.name in info.root:
            by_group.setdefault(info.group(p.name), []).append(p.name)
    return [names for names in by_group.values() if len(names) > 1]


def thunder_regions(trace, alias_indices, same_memory=()) -> tuple[int | str, int | str, str, int | None, int | None]:
    """(consecutive count, dataflow count, error text, racy groups, traffic in bytes) for Thunder's alias
    pass + grouping."""
    from thunder.core.transform_common import dce
    from thunder.core.update_aliases import insert_alias_updates
    from thunder.executors.data_dependent_partition import dataflow_fusion, fuse_bound_symbols

    try:
        aliased = insert_alias_updates(trace, alias_indices)
        aliased = dce(aliased)
    except Exception as e:  # Thunder's own pass fails on this program
        return "error", "error", f"{type(e).__name__}: {str(e).splitlines()[0][:160]}", None, None
    flat = flatten_trace(aliased)
    groups = fuse_bound_symbols(flat, _merge)
    consecutive = count_thunder_groups(groups)
    try:
        dataflow = count_thunder_groups(dataflow_fusion(flat, _merge))
    except Exception:
        dataflow = "error"
    try:
        racy = racy_groups(flat, [g for g in groups if len(g) > 1], list(same_memory))
    except Exception:
        racy = None
    try:
        fused = [g for g in groups if any(thunder_is_fusible(b) and not ops.is_view(b) for b in g)]
        bsyms = list(flat.bound_symbols)
        moved = traffic.groups_traffic(bsyms, fused, {p.name for p in traffic.returned(bsyms)})
    except Exception:
        moved = None
    return consecutive, dataflow, "", racy, moved


# -- one program -------------------------------------------------------------------


def measure(prog: Program, *, max_nodes: int = 25, search_seconds: float = 20.0, seed: int = 0) -> RegionRow:
    row = RegionRow(prog.name, prog.family)
    start = time.perf_counter()
    try:
        args = prog.make_inputs(seed)
        eager_args = prog.make_inputs(seed)
        with _CapturePrepare() as cap:
            jitted = fusion_alias.jit(prog.fn, backend="reference")
            got = jitted(*args)
        expected = prog.fn(*eager_args)
        row.correct = _same(got, expected) and _same(args, eager_args)
        row.fusion_alias = len(fusion_alias.regions(jitted))
    except Exception as e:
        row.error = f"fusion_alias: {type(e).__name__}: {e}"
        row.error_trace = traceback.format_exc()
        row.seconds = time.perf_counter() - start
        return row

    # Thunder on the same traced program
    flat_args, _ = tree_flatten((prog.make_inputs(seed), {}))
    pre = _pre_alias_trace(jitted)
    same_memory = _input_memory_groups(pre, cap.prepared[-1].info) if cap.prepared else []
    row.thunder, row.thunder_dataflow, row.thunder_error, row.thunder_racy, row.thunder_traffic = thunder_regions(
        pre, _thunder_alias_indices(flat_args), same_memory
    )

    row.traffic = traffic.fusion_alias_traffic(thunder.last_traces(jitted)[-1])
    if cap.prepared:
        row.traffic_lower_bound = traffic.lower_bound(cap.prepared[-1])
        row.kernel_model = kernel_model_regions(cap.prepared[-1], executor.is_fusible)

    # the optimum over fusion_alias's graph
    if not cap.prepared:
        row.optimum_note = "n/a (no prepared graph captured)"
    else:
        prep = cap.prepared[-1]
        problem = opt.make_problem(prep.bsyms, prep.graph, executor.is_fusible)
        ours = partition(prep.bsyms, prep.graph, executor.is_fusible).regions
        row.legal = opt.check_legal(problem, ours)
        n_fusible = len(problem.fusible_nodes)
        row.fusible_nodes = n_fusible
        if opt.count_regions(problem, ours) != row.fusion_alias:
            row.error = "re-partitioning the captured graph gave a different region count"
        row.lower_bound = opt.lower_bound(problem) if problem.n <= 4000 else None
        upper = ours if row.legal is None else None
        if n_fusible <= max_nodes:
            # exhaustive (lower=0: no early stop at the bound, so the bound is checked too)
            res = opt.search(problem, upper, 0, max_seconds=search_seconds)
            if res.exact:
                row.optimum, row.optimum_note = res.best, f"exact search ({res.expanded} steps)"
                if row.fusion_alias is not None and res.best < row.fusion_alias:
                    row.better_partition = [[str(prep.bsyms[v].sym.name) + f"@{v}" for v in r] for r in res.regions]
            else:
                row.optimum_note = f"n/a (search budget, best found {res.best}, bound {row.lower_bound})"
        elif upper is not None and row.lower_bound is not None and opt.count_regions(problem, ours) == row.lower_bound:
            row.optimum, row.optimum_note = row.lower_bound, "= lower bound"
        else:
            row.optimum_note = f"n/a ({n_fusible} fusible nodes > {max_nodes}; lower bound {row.lower_bound})"
    row.seconds = time.perf_counter() - start
    return row


def measure_all(programs, **kwargs) -> list[RegionRow]:
    rows = []
    for prog in programs:
        try:
            rows.append(measure(prog, **kwargs))
        except Exception as e:  # keep the bench going; the row says what broke
            row = RegionRow(prog.name, prog.family, error=f"bench: {type(e).__name__}: {e}")
            row.error += "\n" + traceback.format_exc(limit=3)
            rows.append(row)
    return rows
