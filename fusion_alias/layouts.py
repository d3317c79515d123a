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
from thunder.core.pytree import tree_flatten
from thunder.core.trace import tracectx

from fusion_alias import ops
from fusion_alias.aliasing import flattened, output_may_alias
from fusion_alias.eager_result_layouts import eager_result_layout, result_symbols, tensor_args
from fusion_alias.leaf_views import is_detach
from fusion_alias.opaque_layouts import UNKNOWN as _UNKNOWN, opaque_result_layout
from fusion_alias.written_memory import written_memory as _written_memory
from fusion_alias.layout_checks import (_MUST_VIEW, ViewLayoutError, _a_view_in_every_layout, _check_as_strided,
                                       _check_dtype_view_of_a_result, _check_views_of_inputs, _is_storage_op,
                                       _layout_known, _meta_contiguous, _meta_like, _storage_ops, _viewable)

#: ... and those that always return new memory, although Thunder builds them with view prims
_ALWAYS_COPY = frozenset({"repeat", "tile", "repeat_interleave"})

_RESHAPE = prims.PrimIDs.RESHAPE
#: ``Tensor.contiguous``, kept whole by the flattening (an op that may return a view)
_CONTIGUOUS = "contiguous"


class _Layouts:
    """Eager's layout of each tensor proxy (a meta tensor), or None where unknown.

    ``fresh_contiguous=True`` gives the layout at run time instead, where every
    result of a compute prim is a fusion output: contiguous.
    """

    def __init__(self, flat, actual: dict, decisions: dict, fresh_contiguous: bool, fixed: dict | None = None,
                 like: dict | None = None, results: dict | None = None):
        self.actual = actual
        # name -> (top-level torch function, output index): eager's kernel decides the layout (Note [a torch
        # function's result has the layout eager's kernel gives it], eager_result_layouts.py); at run time too
        # where torch runs it (an opaque op)
        self.results = {} if results is None else results
        self.fixed = fixed or {}  # name -> eager's layout, where the symbol making it does not tell
        self.like = like or {}  # name -> the tensor whose layout a factory (``zeros_like``) keeps; None: unknown
        self.decisions = decisions  # reshape output name -> "view" | "copy"
        self.fresh_contiguous = fresh_contiguous
        self.producer: dict[str, object] = {}
        for b in flat:
            for o in flattened(b)[4]:
                self.producer.setdefault(o.name, b)
        self.memo: dict[str, torch.Tensor | None] = {}
        # names whose layout is a guess: computed from a tensor whose layout is unknown (an elementwise result
        # of ``a.swapaxes(0, 1)`` is taken as contiguous; eager keeps the transposed layout), or from a guess
        self.guessed: set[str] = set()

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
            if q.name in self.results:
                pending += [a for a in tensor_args(self.results[q.name][0]) if a.name not in self.memo]
            if pending:
                stack.extend(pending)
                continue
            stack.pop()
            self.memo[q.name] = self._compute(q, b)
            if b is not None and self.memo[q.name] is not None and q.name not in self.actual and q.name not in self.fixed:
                if any(self.memo[a.name] is None or a.name in self.guessed for a in self._inputs(b)):
                    self.guessed.add(q.name)
        return self.memo[p.name]

    def _inputs(self, b) -> list:
        if self.like and b.output is not None and (src := self.like.get(getattr(b.output, "name", None))) is not None:
            return [src]
        if ops.is_copy(b):
            return [b.args[1]] if isinstance(b.args[1], TensorProxy) else []
        if ops.op_info(b) is None:  # an opaque op: its first tensor argument (a dtype conversion keeps its layout)
            return [a for a in b.flat_args if isinstance(a, TensorProxy)][:1]
        return list(flattened(b)[3])

    def _compute(self, p: TensorProxy, b):
        t = self.actual.get(p.name)
        if t is not None:
            return _meta_like(t)
        if p.name in self.fixed:
            return self.fixed[p.name]
        if p.name in self.results and p.name not in self.like and (not self.fresh_contiguous or (
                b is not None and ops.op_info(b) is None)):
            top, index = self.results[p.name]
            layout = eager_result_layout(top, index, p, self._operand_meta(top, b))
            if layout is not None:
                return layout
        if p.name in self.like:  # Note [the layout of a factory that keeps another tensor's]
            src = self.like[p.name]
            base = self.memo.get(src.name) if src is not None else None
            return None if base is None else torch.empty_like(base, dtype=to_torch_dtype(p.dtype))
        if b is None:
            return None
        if ops.is_copy(b):
            return self.memo.get(b.args[1].name)
        info = ops.op_info(b)
        if info is None:
            if b.sym.name == _CONTIGUOUS:  # itself when contiguous in that format, else a copy in it
                base = self.memo.get(b.args[0].name)
                alias = _contiguous_alias(base, _memory_format(b))
                if alias is None:
                    return _meta_contiguous(p)
                return base if alias else _meta_contiguous(p, _memory_format(b))
            if b.sym.id is prims.PrimIDs.STRIDE_ORDER:
                return _meta_contiguous(p)
            if is_detach(b):  # x's sizes, strides and offset, with gradients or without (leaf_views.py)
                return self.memo.get(b.args[0].name)
            if output_may_alias(b, p.name):
                src = next((a for a in b.flat_args if isinstance(a, TensorProxy)), None)
                base = self.memo.get(src.name) if src is not None else None
                dtype_view = _DTYPE_VIEWS.get(b.sym.name) if b.sym.name != "view" or _is_storage_op(b) else None
                if base is not None and dtype_view is not None:
                    # ``x.view(dtype)``, ``c.real``: a view of x's memory in a layout of x's, not a copy (Note
                    # [view(dtype) keeps the layout])
                    try:
                        return dtype_view(base, to_torch_dtype(p.dtype))
                    except (RuntimeError, TypeError):
                        return None
                if base is not None and src.dtype != p.dtype and tuple(src.shape) == tuple(p.shape) \
                        and b.sym.name in _CONVERSIONS:
                    # `.to(dtype)`, `.double()`: a view only when the dtype stays; else a new tensor with
                    # eager's preserve_format layout
                    return torch.empty_like(base, dtype=to_torch_dtype(p.dtype))
                return opaque_result_layout(b, p, self._meta_arg)  # an opaque view: its torch function on meta, or any
            if b.sym.name in ("getitem", "__getitem__"):  # Note [a gather keeps its operand's layout]
                return _gathered(self.memo.get(getattr(b.args[0], "name", None)), b, p)
            out = opaque_result_layout(b, p, self._meta_arg)  # a torch op's result, None: not told
            return _meta_contiguous(p) if out is None else out
        if info.kind == "view":
            base = self.memo.get(b.args[0].name)
            if base is None:
                return None
            if b.sym.id is _RESHAPE and self.decisions.get(p.name) == "copy":
                return _meta_contiguous(p)
            if b.sym.id is prims.PrimIDs.SHALLOW_COPY:  # Note [an identity view keeps a size-1 dim's stride]
                return base
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

    def _operand_meta(self, top, b):
        """Eager's layout of an operand of ``top``, the program's call that made the value ``b`` makes: by the
        operand's name, or, for a view of one operand renamed since (``t0 = b.contiguous()`` traced as
        ``t11 = shallow_copy(b)``: Note [an identity view keeps a size-1 dim's stride]), ``b``'s operand's."""
        operands = [a for a in top.flat_args if isinstance(a, TensorProxy)]
        info = ops.op_info(b) if b is not None else None
        flat = [a for a in b.flat_args if isinstance(a, TensorProxy)] if info is not None and info.kind == "view" else []

        def meta_of(a):
            m = self.memo.get(a.name)
            if m is None and len(operands) == len(flat) == 1:
                m = self.memo.get(flat[0].name)
            return m

        return meta_of

    def _meta_arg(self, a):
        if isinstance(a, TensorProxy):
            t = self.memo.get(a.name)
            return _UNKNOWN if t is None else t
        if isinstance(a, NumberProxy):
            return a.python_type(1) if a.python_type in (bool, int, float, complex) else 1
        return a


# Note [a gather keeps its operand's layout]: a list key's result (``c[:, [2, 0, 1]]``) is new memory in the
# operand's stride order. Of ``c = x0.transpose(0, -1)`` (strides (1, 4, 12)) it has (1, 4, 12), so ``c[:, [2, 0,
# 1]].sin().transpose(0, -1).reshape(-1)`` is a view in eager and a write through it changes the ``sin`` result;
# taken for contiguous, it was a copy, the write lost (fuzz seed 20759 #8, layout). Eager's meta indexing gives it.
def _gathered(base, b, p):
    key = b.args[1] if len(b.args) > 1 else None  # (a tensor key, or an unknown operand: unknown)
    if base is None or any(isinstance(k, (TensorProxy, NumberProxy)) for k in tree_flatten(key)[0]):
        return None
    try:
        out = base[key]
    except Exception:  # noqa: BLE001 - a key eager's meta indexing does not take: unknown
        return None
    return out if isinstance(out, torch.Tensor) and tuple(out.shape) == tuple(p.shape) else None

#: opaque views whose output has another dtype than their input: eager's layout of the output, from its input's
_DTYPE_VIEWS = {
    "view": lambda t, dtype: t.view(dtype),
    "bitcast": lambda t, dtype: t.view(dtype),  # (``view(dtype)`` flattened to its prim)
    "real": lambda t, dtype: t.real,
    "imag": lambda t, dtype: t.imag,
    "view_as_real": lambda t, dtype: torch.view_as_real(t),
    "view_as_complex": lambda t, dtype: torch.view_as_complex(t),
}
#: opaque dtype conversions, a view only where the dtype stays (else a new tensor, preserve_format)
_CONVERSIONS = frozenset({"to", "type", "type_as", "double", "float", "half", "bfloat16", "int", "long", "short",
                          "bool", "byte", "char"})

# Note [view(dtype) keeps the layout]
# ------------------------------------
# ``x.view(torch.int32)`` is opaque to the op table (Thunder's ``view`` with a dtype, a ``bitcast`` inside), and
# its output differs from its input in dtype only, which ``_Layouts`` read as ``x.to(dtype)``: a new tensor in
# eager's preserve_format layout, which for a non-dense ``x`` (``b[:, ::2]``) is contiguous. So
# ``b[:, ::2].view(torch.int32).contiguous()`` was decided the view itself (a ``shallow_copy``) where eager
# copies, and a later ``b.mul_(2.0)`` showed in the result (fuzz seed 20508 #71, ``layout``, the session-16
# dtype views; plain ``thunder.jit`` was right). A dtype view has its input's layout, the last stride scaled by
# the element sizes: eager's own ``view(dtype)`` on the meta layout gives it, and raises where eager does. So
# do ``c.real``, ``c.imag`` of a complex ``c`` (strides doubled: ``c.real.contiguous()`` is a copy; it was taken
# for the view itself too, session 17 hand probe) and ``torch.view_as_real``/``view_as_complex``. Only the
# conversions of ``_CONVERSIONS`` are new tensors in the preserve_format layout; another opaque op that changes
# the dtype has an unknown layout.


def copying_reshapes(trace, flat: list, actual: dict, traced=None, contiguous: bool = True) -> list:
    """``flat`` with every reshape that copies in eager preceded by a ``prims.clone`` (module Note),
    and (``contiguous``) each ``.contiguous()`` made a clone or an identity view as in eager
    (Note [contiguous() of an intermediate is itself where eager's layout is contiguous]).

    ``actual``: trace input name -> the call's tensor (empty without a call: nothing decided).
    ``traced``: the program as traced (its top-level symbols name the user's torch functions).
    Raises :class:`ViewLayoutError` where eager raises (``view``) or where the decision is unsafe.
    """
    if not actual:
        return flat
    top = traced.bound_symbols if traced is not None else trace.bound_symbols
    must_view = {o.name for b in top if b.sym.name in _MUST_VIEW for o in b.flat_outs if isinstance(o, TensorProxy)}
    always_copy = {o.name for b in top if b.sym.name in _ALWAYS_COPY for o in b.flat_outs if isinstance(o, TensorProxy)}
    candidates, contiguous_at = [], []
    strided_at = []  # Note [as_strided of a layout fusion regions do not keep]
    for i, b in enumerate(flat):
        if (b.sym.id is _RESHAPE and isinstance(b.args[0], TensorProxy)) or (
            ops.is_view(b) and b.output is not None and getattr(b.output, "name", None) in always_copy
        ):
            candidates.append(i)
        elif b.sym.name == _CONTIGUOUS and contiguous and b.args and isinstance(b.args[0], TensorProxy):
            contiguous_at.append(i)
        if _is_storage_op(b):
            strided_at.append(i)
    _check_views_of_inputs(top, actual)
    if not candidates and not contiguous_at and not strided_at:
        return flat
    written_memory = _written_memory(trace, flat)
    fixed: dict = {}
    results = result_symbols(trace, traced)  # (eager_result_layouts.py)
    if contiguous_at:
        flat = _contiguous_calls(trace, flat, contiguous_at, actual, written_memory, fixed, results)
        strided_at = _storage_ops(flat)
    if not candidates and not strided_at:
        return flat
    decisions: dict[str, str] = {}
    eager = _Layouts(flat, actual, decisions, fresh_contiguous=False, fixed=fixed, like=_factory_layouts(trace, flat),
                     results=results)
    runtime = _Layouts(flat, actual, decisions, fresh_contiguous=True, results=results)
    copy_at: set[int] = set()
    for i in candidates:
        b = flat[i]
        x, out = b.args[0], b.output
        if out.name in always_copy:
            decisions[out.name] = "copy"
            copy_at.add(i)
            continue
        if _a_view_in_every_layout(x.shape, out.shape):  # Note [... is a view in every layout] (layout_checks)
            decisions[out.name] = "view"
            continue
        layout = eager.of(x) if _layout_known(x, eager, actual) else None
        if layout is None:
            if out.name in must_view and x.name in eager.guessed:
                raise ViewLayoutError(
                    f"fusion_alias: cannot tell whether view of {x.name} as {tuple(out.shape)} is one eager PyTorch "
                    "accepts (its memory layout comes from an op fusion_alias cannot see through): not supported. "
                    "Workaround: .contiguous() or .reshape(...)"
                )
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
    for i in strided_at:
        if flat[i].sym.name == "as_strided":
            _check_as_strided(flat[i].args[0], actual, eager, runtime)
        else:
            _check_dtype_view_of_a_result(flat[i], actual, eager)
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


def _memory_format(b):
    """The memory format of a ``contiguous`` symbol ``b``."""
    fmt = b.kwargs.get("memory_format", b.args[1] if len(b.args) > 1 else torch.contiguous_format)
    return torch.contiguous_format if fmt is None else fmt


# Note [an identity view keeps a size-1 dim's stride]
# ----------------------------------------------------
# ``b.contiguous()`` of a contiguous ``b`` is ``b`` itself, strides and all, and is traced so, as a
# ``shallow_copy`` (below). Its layout was replayed with ``view_as``, which recomputes the stride of a
# size-1 dim: ``b = x1[:, ::2]`` of a (4, 1, 6) ``x1`` has strides (6, 12, 1), its replay (6, 6, 1). Eager's
# kernels read that stride (Note [the strides of a view's size-1 dims], eager_result_layouts.py): after
# ``.unsqueeze(0).permute(0, 3, 1, 2)`` the replay's (24, 1, 6, 6) is channels_last, eager's (24, 1, 6, 12) is
# not, so ``hstack`` of two such was given a channels_last result and its ``view(-1)`` refused with eager's
# "view size is not compatible" where eager runs (saving-ops default seed 41106 #25). The identity view is
# its operand's layout; and the ``unsqueeze`` the program calls on ``t0`` (replayed on meta, by its torch
# function) reads it through the ``shallow_copy``'s name, the name ``t0`` having none in the flat trace.
def _contiguous_alias(layout, fmt) -> bool | None:
    """Whether eager's ``contiguous(memory_format=fmt)`` of a tensor with ``layout`` returns it itself
    (None: cannot tell)."""
    if layout is None:
        return None
    try:
        return layout.is_contiguous(memory_format=fmt)
    except (RuntimeError, TypeError):
        return None


def _contiguous_calls(trace, flat: list, at: list, actual: dict, written_memory, fixed: dict, results: dict) -> list:
    """Each ``contiguous`` at ``at`` in ``flat`` replaced by a ``prims.clone`` where eager copies, by a
    ``prims.shallow_copy`` (an identity view) where eager returns its input itself, or kept (torch
    decides at run time) where no memory involved is written; ``fixed`` gets eager's layout of each
    clone's result (contiguous in the format asked for).

    Note [contiguous() of an intermediate is itself where eager's layout is contiguous]
    -----------------------------------------------------------------------------------
    ``x.contiguous()`` returns ``x`` itself when ``x.is_contiguous()`` (in the memory format asked
    for), and a copy otherwise. Kept whole, torch decides at run time from the layout there, and
    fusion regions return contiguous tensors where eager keeps its input's layout. Worked example
    (``b`` a column-major 2x2 input)::

        t0 = b * 2                    # eager: column-major too; from a region: row-major
        t1 = t0.t().contiguous()      # eager: t0.t() is contiguous, so t1 IS t0.t(); at run time a copy
        t0.sub_(1)                    # shows in eager's t1, not in the copy
        return t1

    So the decision is eager's, made from the call's layouts (``_Layouts``) and written into the
    trace: a copy becomes ``prims.clone``, the input itself ``prims.shallow_copy``, and every later
    pass relates the result to its source as it does views and clones. The alias is exact only if
    the layout at run time is contiguous too (a view of an input, a contiguous intermediate);
    otherwise the result would not be contiguous. Where that is so, or eager's layout is unknown,
    and the memory of the source or the result is written, the program is refused (a clear
    error); where nothing there is written, copy and alias cannot be told apart and it runs as is.
    """
    eager = _Layouts(flat, actual, {}, fresh_contiguous=False, like=_factory_layouts(trace, flat), results=results)
    runtime = _Layouts(flat, actual, {}, fresh_contiguous=True, results=results)
    out = list(flat)
    for i in at:
        b = flat[i]
        x, res = b.args[0], b.output
        if not isinstance(res, TensorProxy):
            continue
        fmt = _memory_format(b)
        layout = eager.of(x)
        alias = _contiguous_alias(layout, fmt)
        written = written_memory(x.name) or written_memory(res.name)
        if alias is None:
            if written:
                raise ViewLayoutError(
                    f"fusion_alias: cannot tell whether {x.name}.contiguous() returns {x.name} itself or a copy "
                    "(its memory layout comes from an op fusion_alias cannot see through), and the program writes "
                    f"that memory in place, where the difference shows: not supported. {_CONTIGUOUS_WORKAROUND}"
                )
            continue
        with tracectx(trace):
            if not alias:
                out[i] = prims.clone.bind(x, output=res)
                fixed[res.name] = _meta_contiguous(res, fmt)
                continue
            if _contiguous_alias(runtime.of(x), fmt):
                out[i] = prims.shallow_copy.bind(x, output=res)
                continue
        if written:
            raise ViewLayoutError(
                f"fusion_alias: {x.name}.contiguous() returns {x.name} itself in eager PyTorch only because of "
                f"{x.name}'s memory layout (strides {tuple(layout.stride())}), which fusion regions do not keep "
                "(they return contiguous tensors), and the program writes that memory in place, where a copy and "
                f"{x.name} itself differ: not supported. {_CONTIGUOUS_WORKAROUND}"
            )
    return out


# Note [a softmax's result is contiguous]: session 34 gave softmax, log_softmax and rms_norm results a contiguous
# layout by name; session 35 found rms_norm of a channels_last operand channels_last, and masked_fill, batch_norm,
# avg_pool2d, F.pad and others with the same problem: every top-level torch function's result now has its meta
# kernel's layout (eager_result_layouts.py, Note [a torch function's result has the layout eager's kernel gives it]).


def _factory_layouts(trace, flat: list) -> dict:
    """Note [the layout of a factory that keeps another tensor's]: ``torch.zeros_like(b)`` (and
    ``ones_like``, ``full_like``, ``rand_like``, ...) has ``b``'s layout in eager (preserve_format),
    but reaches the flattened trace as a ``full`` prim with no tensor argument; the trace's top
    level still names it, with the same output. ``empty_like`` reaches it as ``empty``, like
    ``torch.empty``: its layout is unknown (None), which only the ``contiguous()`` decision reads."""
    like: dict = {}
    for b in trace.bound_symbols:
        if b.sym.name.endswith("_like") and b.args and isinstance(b.args[0], TensorProxy):
            for o in b.flat_outs:
                if isinstance(o, TensorProxy):
                    like[o.name] = b.args[0]
    for b in flat:
        if (b.sym.id is prims.PrimIDs.EMPTY or b.sym.name == "empty") and isinstance(b.output, TensorProxy):
            like.setdefault(b.output.name, None)
    return like


_CONTIGUOUS_WORKAROUND = (
    "Workaround: .clone() where a copy is meant, or leave out .contiguous() where the same tensor is meant"
)
