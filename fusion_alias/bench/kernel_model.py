"""The kernel model's region count (issue 11): what the partitioner should reach.

Inside one kernel every thread reads elements and writes elements. A region that
writes memory M is safe when every read of M in it is *pointwise* with respect
to the write: the same element, by the same index map. So a fusible stretch (the
symbols between two non-fusible ones, in program order) needs

* **1 region** when no memory it writes is read non-pointwise;
* else **2**: region A computes every non-pointwise read of written memory from
  the values at stretch entry, as fresh outputs, and writes nothing; region B
  reads written memory only pointwise and writes each memory once.

``kernel_model_regions(prepared, is_fusible)`` counts that over the pass's
prepared symbols (after read substitution: a read of a written value through
the same view has become a read of the value, so the reads of memory left are
the ones substitution could not express).

Note [what counts as a non-pointwise read]: a symbol of the stretch that reads a
name whose memory group the stretch writes (memory that existed at stretch
entry: an input, or a tensor made before the stretch) is pointwise only if it
is elementwise, the name is the same view as every write of that group in the
stretch, and it has the write's shape (no broadcast). Anything else reads other
elements than the ones a thread writes: a broadcast of ``a[0, 0]`` next to a
write of ``a``, a reduction, a transpose. The same holds for a value the stretch
computed from written memory (nvFuser computes it again where a thread needs
it): a view, reduction, pad or broadcast of ``exp(a)`` next to a write of ``a``
is a non-pointwise read of ``a`` (graph.py, Note [elements moved from written memory]).

Worked example, seed ``f`` with ``(x, x[0, 0])``: ``a.exp_() * b.tanh_()``. The
stretch writes ``a``'s memory through ``a`` and through ``b``; ``tanh`` reads
``b`` (a 0-dim view of the written ``a``): non-pointwise, so 2 regions. Seed
``g`` (``b = a.view(5, 5)``): every read is through the written view, so 1.
"""

from __future__ import annotations

from thunder.core.proxies import TensorProxy

from fusion_alias import ops
from fusion_alias.aliasing import proxy_args, proxy_outs


def _stretch_regions(stretch, info, made_before: set) -> int:
    computes = [b for b in stretch if not ops.is_copy(b) and not ops.is_view(b)]
    if not computes and not any(ops.is_copy(b) for b in stretch):
        return 0  # views only: no kernel
    writes: dict[str, list] = {}  # memory group -> the destinations written
    for b in stretch:
        if ops.is_copy(b) and isinstance(b.args[1], TensorProxy):
            dst = b.args[1]
            if info.root.get(dst.name) in made_before:
                writes.setdefault(info.group(dst.name), []).append(dst)
    if not writes:
        return 1
    read_from_written: set[str] = set()  # values computed (in the stretch) from written memory
    for b in stretch:
        if ops.is_copy(b):
            continue
        info_b = ops.op_info(b)
        kind = info_b.kind if info_b is not None else None
        elementwise = kind == "elementwise"
        out_shapes = {tuple(o.shape) for o in proxy_outs(b) if isinstance(o, TensorProxy)}
        derived = False
        for p in proxy_args(b):
            if not isinstance(p, TensorProxy):
                continue
            if p.name in read_from_written:
                derived = True
                # Note [what counts as a non-pointwise read]: moving elements of such a value
                # (a view, a reduction, a pad, a broadcast) reads other elements than a thread writes
                if b.sym.id is not ops.PrimIDs.SHALLOW_COPY and (not elementwise or not out_shapes <= {tuple(p.shape)}):
                    return 2
            if kind == "view" or p.name not in info.root:
                continue
            dsts = writes.get(info.group(p.name))
            if dsts is None:
                continue
            derived = True
            pointwise = (
                elementwise
                and all(info.same_view(p.name, d.name) for d in dsts)
                and out_shapes <= {tuple(p.shape)}
            )
            if not pointwise:
                return 2
        if derived:
            read_from_written.update(o.name for o in proxy_outs(b) if isinstance(o, TensorProxy))
    return 1


def kernel_model_regions(prepared, is_fusible) -> int:
    """The kernel model's region count for the pass's prepared symbols (module docstring)."""
    info = prepared.info
    made_before = {p.name for p in prepared.tensor_inputs}  # memory that exists when a stretch starts
    total = 0
    stretch: list = []
    for b in list(prepared.bsyms) + [None]:
        if b is not None and is_fusible(b):
            stretch.append(b)
            continue
        if stretch:
            total += _stretch_regions(stretch, info, made_before)
            made_before.update(o.name for s in stretch for o in proxy_outs(s) if isinstance(o, TensorProxy))
            stretch = []
        if b is not None:
            made_before.update(o.name for o in proxy_outs(b) if isinstance(o, TensorProxy))
    return total
