"""Which regions nvFuser may write back in-kernel, and which the wrapper writes with torch.

Note [write-backs into strided inputs]
--------------------------------------
``fd.add_output(v, alias_input=d)`` makes nvFuser write ``v`` into ``d``'s
buffer inside the fusion. On an H200 with nvFuser 0.2.36 (the torch 2.11
bundle) that gave wrong numbers in three classes, all found by
``scripts/gpu_check.sh`` (the CUDA tests and ``scripts/gpu_programs.py``):

* a destination that is not dense is written as if it were contiguous:
  ``b = x[:, 1]`` of a (64, 33) ``x`` and ``b.mul_(3)`` wrote 64 consecutive
  floats from ``x[0, 1]`` on; a KV-cache write ``cache[:, 5:6].copy_(k)``
  landed in the wrong rows;
* a dense destination under a permutation (a channels-last input written
  through ``a.permute(0, 2, 3, 1)[0].mul_(2)``, fuzz seed 20827 #53) came out
  wrong in 106 of 120 elements;
* a region of tensors of several shapes (fuzz seed 20827 #103: ``(3, 6)``,
  ``(1, 18, 1)`` and ``(18,)``) returned ``t0 * 1`` computed from ``t0``
  *after* its in-kernel write-back of ``-t0``: nvFuser split the fusion into
  kernels and re-read the input in a kernel that ran after the write (the
  segmenter orders kernels by data edges only; DESIGN.md section 2).

Each came out right when the same region returned its written values as plain
outputs and the wrapper copied them with ``dst.copy_(value)`` after
``execute`` (checked on the H200 for all of them). So the in-kernel write-back
is kept only where it was seen right and where one kernel reads and writes
each element in the same thread: every write-back goes into a row-major dense
input, and the region is elementwise over one shape (adam steps, ``x.exp_()``,
``p.add_(g, alpha=-lr)``), with 0-d values broadcast only when nothing in the
region writes them. Any other region with a write-back is *deferred*: all its
write-backs become plain outputs, after the region's own, and the wrapper
copies them in program order (one more pass over the written tensors; torch
honours every stride).

Worked example: ``b.mul_(3); return a * 2`` with ``(a, b) = (x, x[:, 1])``
runs as region 1 ``tv1 = mul(b, 3); add_output(tv1)`` (no ``alias_input``)
then ``b.copy_(tv1)`` in torch, then region 2 ``a * 2``.
"""

from __future__ import annotations

from typing import Sequence

from thunder.core.proxies import TensorProxy

from fusion_alias import ops
from fusion_alias.aliasing import proxy_args, proxy_outs

#: ops an in-kernel region may hold besides elementwise ones (a full of the region's shape; set)
_ALSO_POINTWISE = frozenset({ops.PrimIDs.FULL, ops.PrimIDs.SHALLOW_COPY})


def _row_major_dense(layout: tuple) -> bool:
    """nvFuser's description of an input says it is contiguous in row-major order."""
    shape, contiguity, stride_order = layout[0], layout[1], layout[2]
    if not all(c is None or c is True for c in contiguity):
        return False
    sized = [o for n, o in zip(shape, stride_order) if n != 1]  # size-1 dims may sit anywhere
    return sized == sorted(sized, reverse=True)


def _pointwise_over_one_shape(spec) -> bool:
    """Every op elementwise, every tensor of one shape (or 0-d), no written value broadcast."""
    written = {spec.writeback_dst[i] for i in spec.writebacks}
    shapes = set()
    for b in spec.bsyms:
        for p in proxy_args(b) + proxy_outs(b):
            if isinstance(p, TensorProxy) and len(p.shape):
                shapes.add(tuple(p.shape))
        if ops.is_copy(b):
            continue
        pid = b.sym.id
        if pid is ops.PrimIDs.BROADCAST_IN_DIM:
            if any(p.name in written for p in proxy_args(b)):
                return False
        elif ops.op_info(b).kind != "elementwise" and pid not in _ALSO_POINTWISE:
            return False
        if any(p.name in written for p in proxy_args(b)):
            written.update(p.name for p in proxy_outs(b))  # values read from a written input
    return len(shapes) <= 1


def defers_writebacks(spec, layouts: Sequence[tuple]) -> bool:
    """Whether the wrapper, not nvFuser, writes this region's write-backs (module Note)."""
    if not spec.writebacks:
        return False
    ordinal = {p.name: i for i, p in enumerate(q for q in spec.inputs if isinstance(q, TensorProxy))}
    for i in spec.writebacks:
        k = ordinal.get(spec.writeback_dst[i])
        if k is None or k >= len(layouts) or not _row_major_dense(layouts[k]):
            return True
    return not _pointwise_over_one_shape(spec)
