"""View or copy: decide each reshape the way eager PyTorch does, from the call's actual layouts.

Note [a reshape that copies is not a view]
------------------------------------------
Thunder has one ``prims.reshape`` for ``view``, ``reshape``, ``flatten`` and the
inner step of ``repeat``; the alias analysis reads it as a view. Eager's
``reshape``/``flatten`` return a view only when the input's strides allow it,
and a fresh copy otherwise; ``view`` raises instead; ``repeat`` always copies.
Worked example (``a`` a contiguous 3x4 input)::

    v = a.t().reshape(-1)    # a.t() has strides (1, 4): not viewable, a copy
    a.mul_(2)
    return v + 0             # eager: the old values of a

Read as a view, read substitution rewrote ``v + 0`` to ``reshape(t(2 * a)) + 0``:
the doubled values. This pass rewrites each reshape that copies in eager into
``c = prims.clone(x); v = prims.reshape(c, shape)``: ``v`` is then a view of a
fresh tensor, a memory of its own, and every later pass (alias analysis, read
substitution, hazards, write-backs) treats it right with no special case. A
write into ``v`` lands in the clone and never shows in ``a``.

The layout is eager's: the call's actual input strides, replayed through view
prims and through compute prims with torch on meta tensors (an elementwise op
on ``a.t()`` keeps its transposed layout in eager). The decision is made at
compile time; the guard keys compiled programs by the inputs' strides, so a
call with another layout compiles anew.

Where eager's layout is unknown (the result of an op fusion_alias cannot see
through that may return a view) and the program writes in place, the pass
refuses with a clear error rather than guess. It also refuses a reshape eager
makes a view of a tensor whose layout fusion regions do not keep (a fusion
returns contiguous tensors, eager an elementwise result in its input's layout).
"""

from __future__ import annotations

import torch
import thunder.core.prims as prims
from thunder.core.dtypes import to_torch_dtype
from thunder.core.proxies import NumberProxy, TensorProxy
from thunder.core.trace import tracectx

from fusion_alias import ops
from fusion_alias.aliasing import flattened, may_write, output_may_alias
from fusion_alias.errors import AliasInputError

#: torch functions (Thunder symbol names) that must return a view, and raise where they cannot
_MUST_VIEW = frozenset({"view", "view_as"})
#: ... and those that always return new memory, although Thunder builds them with view prims
_ALWAYS_COPY = frozenset({"repeat", "tile", "repeat_interleave"})

_RESHAPE = prims.PrimIDs.RESHAPE
_CONTIGUOUS_RESULT = frozenset({"contiguous"})


class ViewLayoutError(AliasInputError):
    """A program eager rejects (``view`` of a layout that is not viewable), or whose view-vs-copy
    decision fusion_alias cannot make safely."""


def _meta_like(t: torch.Tensor) -> torch.Tensor:
    return torch.empty_strided(tuple(t.shape), tuple(t.stride()), dtype=t.dtype, device="meta")


def _meta_contiguous(p: TensorProxy) -> torch.Tensor | None:
    try:
        return torch.empty(tuple(p.shape), dtype=to_torch_dtype(p.dtype), device="meta")
    except Exception:
        return None


def _viewable(t: torch.Tensor, shape) -> bool:
    try:
        t.view(tuple(shape))
        return True
    except RuntimeError:
        return False


class _Layouts:
    """Eager's layout of each tensor proxy (a meta tensor), or None where unknown.

    ``fresh_contiguous=True`` gives the layout at run time instead, where every
    result of a compute prim is a fusion output: contiguous.
    """

    def __init__(self, flat, actual: dict, decisions: dict, fresh_contiguous: bool):
        self.actual = actual
        self.decisions = decisions  # reshape output name -> "view" | "copy"
        self.fresh_contiguous = fresh_contiguous
        self.producer: dict[str, object] = {}
        for b in flat:
            for o in flattened(b)[4]:
                self.producer.setdefault(o.name, b)
        self.memo: dict[str, torch.Tensor | None] = {}

    def of(self, p: TensorProxy):
        """Iterative, memoized: long chains of views do not recurse."""
        stack = [p]
        while stack:
            q = stack[-1]
            if q.name in self.memo:
                stack.pop()
                continue
            b = self.producer.get(q.name)
            pending = [a for a in self._inputs(b) if a.name not in self.memo] if b is not None else []
            if pending:
                stack.extend(pending)
                continue
            stack.pop()
            self.memo[q.name] = self._compute(q, b)
        return self.memo[p.name]

    def _inputs(self, b) -> list:
        if ops.is_copy(b):
            return [b.args[1]] if isinstance(b.args[1], TensorProxy) else []
        if ops.op_info(b) is None:  # an opaque op: its first tensor argument (a dtype conversion keeps its layout)
            return [a for a in b.flat_args if isinstance(a, TensorProxy)][:1]
        return list(flattened(b)[3])

    def _compute(self, p: TensorProxy, b):
        t = self.actual.get(p.name)
        if t is not None:
            return _meta_like(t)
        if b is None:
            return None
        if ops.is_copy(b):
            return self.memo.get(b.args[1].name)
        info = ops.op_info(b)
        if info is None:
            if b.sym.name in _CONTIGUOUS_RESULT or b.sym.id is prims.PrimIDs.STRIDE_ORDER:
                return _meta_contiguous(p)  # .contiguous(): itself when contiguous, else a contiguous copy
            if output_may_alias(b, p.name):
                src = next((a for a in b.flat_args if isinstance(a, TensorProxy)), None)
                base = self.memo.get(src.name) if src is not None else None
                if base is not None and src.dtype != p.dtype and tuple(src.shape) == tuple(p.shape):
                    # `.to(dtype)`, `.double()`: a view only when the dtype stays; else a new tensor with
                    # eager's preserve_format layout
                    return torch.empty_like(base, dtype=to_torch_dtype(p.dtype))
                return None  # an opaque view: any layout
            return _meta_contiguous(p)  # a torch op's fresh result
        if info.kind == "view":
            base = self.memo.get(b.args[0].name)
            if base is None:
                return None
            if b.sym.id is _RESHAPE and self.decisions.get(p.name) == "copy":
                return _meta_contiguous(p)
            try:
                return info.torch_fn(base, *b.args[1:], **b.kwargs)
            except Exception:
                return None
        if self.fresh_contiguous or info.torch_fn is None:
            return _meta_contiguous(p)
        if b.sym.id is prims.PrimIDs.CLONE:  # eager's clone keeps a dense layout (preserve_format)
            base = self.memo.get(b.args[0].name)
            return base.clone() if base is not None else _meta_contiguous(p)
        # a compute prim: eager's result layout, from torch on meta operands
        args = [self._meta_arg(a) for a in b.args]
        if any(a is _UNKNOWN for a in args):
            return _meta_contiguous(p)
        try:
            out = info.torch_fn(*args, **{k: v for k, v in b.kwargs.items() if k not in ("device",)})
        except Exception:
            return _meta_contiguous(p)
        return out if isinstance(out, torch.Tensor) and tuple(out.shape) == tuple(p.shape) else _meta_contiguous(p)

    def _meta_arg(self, a):
        if isinstance(a, TensorProxy):
            t = self.memo.get(a.name)
            return _UNKNOWN if t is None else t
        if isinstance(a, NumberProxy):
            return a.python_type(1) if a.python_type in (bool, int, float, complex) else 1
        return a


_UNKNOWN = object()


def copying_reshapes(trace, flat: list, actual: dict, traced=None) -> list:
    """``flat`` with every reshape that copies in eager preceded by a ``prims.clone`` (module Note).

    ``actual``: trace input name -> the call's tensor (empty without a call: nothing decided).
    ``traced``: the program as traced (its top-level symbols name the user's torch functions).
    Raises :class:`ViewLayoutError` where eager raises (``view``) or where the decision is unsafe.
    """
    if not actual:
        return flat
    top = traced.bound_symbols if traced is not None else trace.bound_symbols
    must_view = {o.name for b in top if b.sym.name in _MUST_VIEW for o in b.flat_outs if isinstance(o, TensorProxy)}
    always_copy = {o.name for b in top if b.sym.name in _ALWAYS_COPY for o in b.flat_outs if isinstance(o, TensorProxy)}
    candidates = [
        i for i, b in enumerate(flat)
        if (b.sym.id is _RESHAPE and isinstance(b.args[0], TensorProxy))
        or (ops.is_view(b) and b.output is not None and getattr(b.output, "name", None) in always_copy)
    ]
    _check_views_of_inputs(top, actual)
    if not candidates:
        return flat
    written_memory = _written_memory(trace, flat)
    decisions: dict[str, str] = {}
    eager = _Layouts(flat, actual, decisions, fresh_contiguous=False)
    runtime = _Layouts(flat, actual, decisions, fresh_contiguous=True)
    copy_at: set[int] = set()
    for i in candidates:
        b = flat[i]
        x, out = b.args[0], b.output
        if out.name in always_copy:
            decisions[out.name] = "copy"
            copy_at.add(i)
            continue
        layout = eager.of(x)
        if layout is None:
            if written_memory(x.name) or written_memory(out.name):
                raise ViewLayoutError(
                    f"fusion_alias: cannot tell whether reshape of {x.name} to {tuple(out.shape)} is a view or a "
                    "copy (its memory layout comes from an op fusion_alias cannot see through), and the program "
                    "writes in place, where the difference shows: not supported. Workaround: .contiguous() or .clone() before "
                    "the reshape"
                )
            continue
        shape = tuple(out.shape)
        if _viewable(layout, shape):
            decisions[out.name] = "view"
            at_run = runtime.of(x)
            if (written_memory(x.name) or written_memory(out.name)) and (at_run is None or not _viewable(at_run, shape)):
                raise ViewLayoutError(
                    f"fusion_alias: reshape of {x.name} to {shape} is a view in eager PyTorch only because of "
                    f"{x.name}'s memory layout (strides {tuple(layout.stride())}), which fusion regions do not "
                    "keep (they return contiguous tensors), and the program writes in place, where the "
                    "difference shows: not supported. Workaround: .contiguous() before the ops that make that layout"
                )
            continue
        if out.name in must_view:
            raise ViewLayoutError(
                f"fusion_alias: view size is not compatible with input tensor's size and stride (at least one "
                f"dimension spans across two contiguous subspaces): view of {x.name} (strides "
                f"{tuple(layout.stride())}) as {shape}. Use .reshape(...) instead (eager PyTorch rejects this too)"
            )
        decisions[out.name] = "copy"
        copy_at.add(i)
    if not copy_at:
        return flat
    result = []
    for i, b in enumerate(flat):
        if i in copy_at:
            x = b.args[0]
            with tracectx(trace):
                fresh = TensorProxy(like=x)
                clone = prims.clone.bind(x, output=fresh)
            result.append(clone)
            result.append(b.from_bsym(args=(fresh, *b.args[1:])))
        else:
            result.append(b)
    return result


def _written_memory(trace, flat: list):
    """A predicate: may the memory of this tensor name be written by the program?

    Note [an unknown layout matters only where memory is written]: whether a reshape
    is a view or a copy shows only if its input's or its output's memory is written
    (before or after). Tensors are grouped by everything that may share memory: view
    ops, ``copy_`` (its result is the destination), opaque ops whose output may alias
    an argument, and all trace inputs together (they may alias each other). Example:
    in a BatchNorm training step only the running-stats buffers are written, so a
    reshape of a gradient made by an opaque backward op can stay undecided::

        copy_(new_mean, running_mean)      # written: {running_mean, inputs...}
        t79 = batch_norm_backward(...)     # fresh, opaque: its own group
        t80 = reshape(t79, (1, 8))         # layout unknown, but nothing in its group is written
    """
    parent: dict[str, str] = {}

    def find(n: str) -> str:
        root = n
        while parent.get(root, root) != root:
            root = parent[root]
        while n != root:
            parent[n], n = root, parent.get(n, n)
        return root

    def union(a: str, b: str) -> None:
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[ra] = rb

    inputs = [a.name for a in trace.args if isinstance(a, TensorProxy)]
    for name in inputs[1:]:
        union(inputs[0], name)
    written: list[str] = []
    for b in flat:
        args = [a.name for a in b.flat_args if isinstance(a, TensorProxy)]
        outs = [o.name for o in b.flat_outs if isinstance(o, TensorProxy)]
        if ops.is_copy(b):
            dst = b.args[1].name
            written.append(dst)
            for o in outs:
                union(o, dst)
            continue
        opaque = ops.op_info(b) is None
        if opaque and may_write(b):
            written.extend(args)
        if args and (ops.is_view(b) or opaque and any(output_may_alias(b, o) for o in outs)):
            for n in args[1:] + outs:
                union(args[0], n)
    written_roots = {find(n) for n in written}
    return lambda name: find(name) in written_roots


def _check_views_of_inputs(top: list, actual: dict) -> None:
    """Raise eager's error for ``view()`` of an input whose layout cannot be viewed, used or not.

    Note [a dead view still raises]: ``t = b.view(-1); return ()`` with ``b`` a transposed
    input raises in eager. Thunder's DCE drops the unused view before the fusion pass sees it,
    so it is checked on the program as traced (``top``), for views of the call's inputs.
    """
    for b in top:
        if b.sym.name not in _MUST_VIEW or not b.args or not isinstance(b.args[0], TensorProxy):
            continue
        x, out = b.args[0], b.output
        t = actual.get(x.name)
        if t is None or not isinstance(out, TensorProxy):
            continue
        shape = tuple(out.shape)
        if not _viewable(_meta_like(t), shape):
            raise ViewLayoutError(
                f"fusion_alias: view size is not compatible with input tensor's size and stride (at least one "
                f"dimension spans across two contiguous subspaces): view of {x.name} (strides "
                f"{tuple(t.stride())}) as {shape}. Use .reshape(...) instead (eager PyTorch rejects this too)"
            )
