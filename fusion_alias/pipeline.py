"""The fusion pass, as named stages in the order the data flows.

``prepare`` runs the stages up to the dependency graph; ``fusion_pass`` adds
partitioning and region assembly. Each stage is a function in its own module:

1. ``flatten.flatten_trace``: each bound symbol down to the symbols fusion_alias claims.
2. ``flatten._drop_update_aliases``: Thunder's ``update_aliases`` out, kept as alias facts.
3. ``input_groups._input_groups``: which trace inputs may share memory (the actual tensors);
   ``identical_inputs``/``read_through_first``: the same tensor passed twice becomes one name.
4. ``aliasing.analyze``: every tensor's root, view chain and memory group;
   ``noop_copies``: copies of memory onto itself out (eager writes nothing).
5. ``refusals.check_refusals``: programs eager rejects, or Thunder's autodiff gets wrong;
   ``base_updates.rewrite``: a memory written through two views is written as one base.
6. ``functionalize.substitute_reads``: reads of written memory become reads of the write's value.
7. ``dce._dce``: fusible symbols nobody reads, dropped (where the graph of step 8 says there are any:
   ``dce.drops_any``, Note [dead code found from the graph]).
8. ``graph.build_edges``: data edges plus alias-hazard edges (DESIGN.md §4), as arrays.
9. ``partition.partition``: regions that keep every hazard edge outside or ordered.
10. ``regions.fuse_regions``: one fusion bound symbol per region (``FusionAliasExecutor.fuse``).
"""

from __future__ import annotations

from dataclasses import dataclass
import functools
import time

import networkx as nx

from thunder.core.proxies import TensorProxy
from thunder.core.trace import TraceCtx, from_trace

from fusion_alias import base_updates, context, replaced_args, report
from fusion_alias.aliasing import AliasInfo, analyze
from fusion_alias.proxies_by_name import tensor_proxies_by_name
from fusion_alias.dce import _dce, drops_any
from fusion_alias.flatten import _drop_update_aliases, flatten_trace, fusible_predicate, split_input_bindings
from fusion_alias.functionalize import substitute_reads
from fusion_alias.dependency_edges import DependencyEdges
from fusion_alias.graph import build_edges
from fusion_alias.input_groups import _input_groups, identical_inputs, read_through_first
from fusion_alias.autocast_dtypes import check_autocast_dtypes
from fusion_alias.layout_queries import check_layout_queries
from fusion_alias.layouts import copying_reshapes
from fusion_alias.noop_copies import drop_copies_onto_themselves
from fusion_alias.partition import partition
from fusion_alias.refusals import check_refusals
from fusion_alias.refusals.inplace_ops import _traced_program
from fusion_alias.regions import fuse_regions


@dataclass
class Prepared:
    bsyms: list
    info: AliasInfo
    edges: DependencyEdges  # the dependency graph as the pass keeps it (dependency_edges.py, Note [the graph as arrays])
    tensor_inputs: list
    seconds: dict
    is_fusible: object = None
    bound_inputs: list = ()  # the trace's leading ``unpack_trivial`` symbols, outside every stage (flatten.py, Note [inputs bound before the pass])

    @functools.cached_property
    def graph(self) -> nx.DiGraph:
        """The dependency graph as a ``networkx.DiGraph``, built when first asked for."""
        return self.edges.to_networkx()


def prepare(executor, trace: TraceCtx, input_groups=None) -> Prepared:
    """Stages 1-8: flattened, substituted bsyms, alias info, graph.

    ``input_groups`` (lists of input names that may overlap) overrides
    what the compile context says; benchmarks pass it for synthetic traces.
    """
    ctx = context.current()
    flat, verdicts = flatten_trace(executor, trace)
    bound_inputs, flat = split_input_bindings(flat)
    flat, alias_facts, renamed = _drop_update_aliases(flat)
    tensor_inputs = [a for a in trace.args if isinstance(a, TensorProxy)]
    actual: dict = {}
    if input_groups is None:
        input_groups, actual = _input_groups(trace, ctx, tensor_inputs)
    traced = _traced_program()
    check_layout_queries(traced, flat, actual)  # (layout_queries.py, Note [a layout query answered at trace time])
    check_autocast_dtypes(traced)  # (autocast_dtypes.py, Note [autocast: eager's dtype or a refusal])
    flat = copying_reshapes(trace, flat, actual, traced)
    t0 = time.perf_counter()
    same_inputs = identical_inputs(tensor_inputs, actual)
    flat = read_through_first(flat, same_inputs, tensor_inputs)
    detach_is_view = not any(p.requires_grad for p in tensor_inputs)  # (aliasing.py, Note [detach is the same view])
    info = analyze(flat, tensor_inputs, list(input_groups) + alias_facts, same_inputs, detach_is_view)
    proxies = tensor_proxies_by_name(flat, tensor_inputs)  # (a dropped copy's result stays in it, unused)
    flat = drop_copies_onto_themselves(flat, info, actual, proxies)
    check_refusals(trace, flat, renamed, info, tensor_inputs, input_groups, actual, ctx, proxies)
    fusible = fusible_predicate(executor, verdicts, tensor_inputs)
    flat, info, written_views = base_updates.rewrite(
        trace, flat, info, tensor_inputs, input_groups, actual, fusible,
        lambda rewritten: analyze(rewritten, tensor_inputs, list(input_groups) + alias_facts, same_inputs,
                                  detach_is_view),
    )
    bsyms = substitute_reads(trace, flat, info, fusible, written_views)
    if written_views:  # Note [a write nobody reads before a covering write] (base_updates.py)
        bsyms = _dce(bsyms, trace)
        kept = base_updates.drop_overwritten_writes(bsyms, info, fusible)
        if kept is not bsyms:
            bsyms = _dce(kept, trace)
    t1 = time.perf_counter()
    edges = build_edges(bsyms, info, fusible)
    if not written_views and drops_any(bsyms, edges.data_u, trace):  # Note [dead code found from the graph] (dce.py)
        bsyms = _dce(bsyms, trace)
        edges = build_edges(bsyms, info, fusible)
    t2 = time.perf_counter()
    return Prepared(bsyms, info, edges, tensor_inputs, {"analysis": t1 - t0, "graph": t2 - t1}, fusible, bound_inputs)


def fusion_pass(executor, trace: TraceCtx, resolve_backend) -> tuple[TraceCtx, int]:
    """All stages: the new trace, in which each region is one fusion bound symbol, and the region count.

    Stages 1-8 run through ``executor.prepare`` (benchmarks wrap it to keep what it returns).
    ``resolve_backend(backend option, device type)`` names the backend a region runs on
    (the executor's ``resolve_backend``).
    """
    ctx = context.current()
    prep = executor.prepare(trace)
    part = partition(prep.bsyms, prep.edges, prep.is_fusible, ignore_hazards=ctx.ignore_hazards)
    new_trace = from_trace(trace)
    fused_bsyms, count = fuse_regions(executor, prep, part, ctx, resolve_backend)
    # (used directly: the arguments Thunder's alias pass replaced, checked first at each call; replaced_args.py)
    checks = replaced_args.runtime_checks(trace, executor) if not ctx.has_call else ()
    new_trace.bound_symbols = [*prep.bound_inputs, *checks, *fused_bsyms]
    report.observe(trace, prep, part, new_trace, ctx.ignore_hazards)  # FUSION_ALIAS_LOG, pictures
    return new_trace, count
