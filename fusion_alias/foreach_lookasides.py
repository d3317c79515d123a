"""``torch._foreach_*`` ops (multi-tensor optimizer steps, EMA updates), which Thunder 0.2.6 does not
trace ("Trying to call function torch._foreach_add_, but it is not yet supported"), as one op per
tensor.

Note [a foreach op as one op per tensor]
----------------------------------------
``torch._foreach_lerp_(ema, params, 0.01)`` is, on a CPU and wherever eager falls back from its
multi-tensor kernel, ``ema[i].lerp_(params[i], 0.01)`` for each ``i`` in turn. The lookaside traces
exactly that, so the fusion pass sees ordinary in-place ops (one region for a whole step, the usual
alias analysis when two lists share memory: ``_foreach_add_(params, params)``)::

    torch._foreach_add_(ps, gs, alpha=-lr)        ->  ps[0].add_(gs[0], alpha=-lr); ps[1].add_(...)
    torch._foreach_addcmul_(vs, gs, gs, 1 - b2)   ->  vs[i].addcmul_(gs[i], gs[i], value=1 - b2)
    torch._foreach_sqrt(vs)                       ->  (vs[0].sqrt(), vs[1].sqrt(), ...)

An argument that is a list or tuple is taken element by element (tensors, or eager's per-tensor
``scalars``); anything else (a number, one tensor) is passed to every call. The 4th argument of
``addcmul``/``addcdiv`` is their ``value``. In-place ops return the list they were given, the others
a tuple, as eager's do. The per-tensor op is the tensor's method of the same name, including the
in-place ops fusion_alias adds (``sigmoid_``: inplace_lookasides.py), except ``maximum``/``minimum``
(Note [foreach maximum is clamp_min per tensor]).
"""

from __future__ import annotations

from functools import partial

import torch
from thunder.core import jit_ext
from thunder.core.compile_data import get_compile_data
from thunder.core.interpreter import interpreter_needs_wrap
from thunder.core.langctxs import Languages, langctx
from thunder.core.proxies import ProxyTag, TensorProxy
from thunder.core.symbol import Symbol
import thunder.torch as ltorch

from fusion_alias import bool_exponents, context, inplace_lookasides
from fusion_alias.errors import AliasInputError

_VALUE_AT_FOURTH = frozenset({"addcmul", "addcdiv", "addcmul_", "addcdiv_"})

# Note [foreach maximum is clamp_min per tensor]
# ----------------------------------------------
# Eager's ``_foreach_maximum_``/``_foreach_minimum_`` (and their out-of-place forms) run
# ``clamp_min``/``clamp_max`` per tensor (its CPU kernels are ``foreach_tensor_clamp_min_*_slow``),
# with a list, one number or a list of numbers. Thunder 0.2.6 has no ``maximum_`` method
# ("Unknown attribute maximum_", amsgrad Adam with ``foreach=True``) and its ``maximum`` takes no
# number, so the per-tensor op is eager's: ``_foreach_maximum_(ms, vs)`` -> ``ms[i].clamp_min_(vs[i])``
# (the same values as eager's foreach op, NaN and mixed dtypes included: checked on torch 2.9.1).
_PER_TENSOR_METHOD = {"maximum": "clamp_min", "maximum_": "clamp_min_",
                      "minimum": "clamp_max", "minimum_": "clamp_max_"}


def _foreach(method: str, tensors, *args, **kwargs):
    """Note [a foreach op as one op per tensor]."""
    # Note [an empty foreach list]: eager raises "Tensor list must have at least one tensor." for every foreach op
    # (``torch._foreach_mul_([], 2.0)``, ``_foreach_pow(2.0, [])``); one op per tensor in turn ran nothing and
    # returned, a missed rejection (session 36 hand probe; plain ``thunder.jit`` raises its own error)
    listed = tensors if isinstance(tensors, (list, tuple)) else args[0] if method == "pow" and args else None
    if isinstance(listed, (list, tuple)) and not listed:
        raise RuntimeError(f"torch._foreach_{method}: Tensor list must have at least one tensor. (eager PyTorch "
                           "rejects this too)")
    if not isinstance(tensors, (list, tuple)):  # ``_foreach_pow(2.0, exponents)``: a number's powers
        if method == "pow" and len(args) == 1 and isinstance(args[0], (list, tuple)):
            return tuple(ltorch.pow(tensors, e) for e in args[0])
        raise TypeError(f"torch._foreach_{method}: expected a list of tensors first, got {type(tensors).__name__}")
    for t in tensors:
        if not isinstance(t, TensorProxy):
            raise TypeError(f"torch._foreach_{method}: expected a list of tensors, got {type(t).__name__}")
    grad_writes = method.endswith("_") and _one_tensor_twice(method, tensors)
    if method in _VALUE_AT_FOURTH and len(args) == 3:
        *args, kwargs["value"] = args
    if method in _VALUE_AT_FOURTH and isinstance(kwargs.get("value", kwargs.get("scalars")), TensorProxy):
        # eager's ``scalars`` tensor: one value per tensor of the list (torch.optim's Adam stacks its step
        # sizes into one when compiling), not one tensor for every call
        scalars = kwargs.pop("value", None)
        scalars = kwargs.pop("scalars", scalars)
        return _addc_by_tensor(method, tensors, args, scalars, grad_writes)
    for a in (*args, *kwargs.values()):
        if isinstance(a, (list, tuple)) and len(a) != len(tensors):
            raise RuntimeError(f"torch._foreach_{method}: tensor lists must have the same number of tensors, "
                               f"got {len(tensors)} and {len(a)}")
    grad = any(t.requires_grad for t in tensors)
    args, kwargs = (
        [_scalar_tensor(method, a, i, args, kwargs, grad) if isinstance(a, TensorProxy) else a for i, a in enumerate(args)],
        {k: _scalar_tensor(method, v, k, args, kwargs, grad) if isinstance(v, TensorProxy) else v for k, v in kwargs.items()},
    )
    results = []
    per_tensor = _PER_TENSOR_METHOD.get(method, method)
    for i, t in enumerate(tensors):
        args_i = [a[i] if isinstance(a, (list, tuple)) else a for a in args]
        kwargs_i = {k: (v[i] if isinstance(v, (list, tuple)) else v) for k, v in kwargs.items()}
        if method in ("pow", "pow_"):  # (bool_exponents.py, Note [a bool exponent has no derivative in eager])
            bool_exponents.check_exponent(t, args_i[0] if args_i else kwargs_i.get("exponent"))
        results.append(inplace_lookasides.proxy_method(t, per_tensor)(*args_i, **kwargs_i))
    if grad_writes:
        _record(method, results)
    if method.endswith("_"):
        return tensors
    _record_saves(method, results)  # (one node: refusals/foreach_saves.py, Note [an out-of-place foreach function
                                    # saves every operand])
    return tuple(results)


# (refusals/foreach_saves.py, Note [an out-of-place foreach function saves every operand]: derived in eager, torch 2.9.1)
SAVES_EVERY_OPERAND = frozenset({"add", "sub", "mul", "div", "maximum", "minimum", "clamp_min", "clamp_max", "pow",
                                 "lerp", "addcmul", "addcdiv"})


def saves_every_operand(method: str, args) -> bool:
    """Whether eager's out-of-place ``torch._foreach_<method>`` with ``args`` (after the first list) saves every
    operand in one node: ``lerp`` only with a list (or a tensor) of weights."""
    if method not in SAVES_EVERY_OPERAND:
        return False
    return method != "lerp" or (len(args) > 1 and isinstance(args[1], (list, tuple, TensorProxy)))


# one of two tags on the results of each such call, the two in turn: the per-tensor ops of one call are the longest
# run of top-level ops whose results carry one tag (the names of the results are not yet the trace's: Thunder names
# them again after tracing, and tags go with them)
SAVES_TAGS = tuple(getattr(ProxyTag, t) if hasattr(ProxyTag, t) else ProxyTag.register_tag(t) or getattr(ProxyTag, t)
                   for t in ("FUSION_ALIAS_FOREACH_SAVES_A", "FUSION_ALIAS_FOREACH_SAVES_B"))


def _record_saves(method: str, results) -> None:
    """Tag an out-of-place call's per-tensor results, in a compilation that computes gradients (the op names, in
    order, in ``ctx.foreach_saves``)."""
    compile_data = get_compile_data()
    ctx = context.current()
    if compile_data is not None and compile_data.is_grad_enabled and ctx.has_call:
        tag = SAVES_TAGS[len(ctx.foreach_saves) % 2]
        ctx.foreach_saves.append(method)
        for r in results:
            if isinstance(r, TensorProxy):
                r.tags.add(tag)


# Note [a foreach op given one tensor twice]
# -------------------------------------------
# Eager's in-place foreach ops run one op per tensor in turn on a CPU (Note [a foreach op as one op
# per tensor]), but record one autograd node per call whose backward reads every operand as it was
# before the call. Where an earlier tensor's write reaches a later tensor's operands, eager's gradient
# is not that of the value it computed (torch 2.9.1, checked; ``a = x * 1``)::
#
#     torch._foreach_mul_([a, a], 2.0)                       # a == 4 * x; eager's x.grad 2, not 4
#     torch._foreach_add_([a[0], a[1]], [a[1], a[0]])       # a[1] == 2 * x[1] + x[0]; eager's grad of x[1] 2, not 3
#     torch._foreach_mul_([a.t(), a], 2.0)                   # eager's x.grad 2, not 4
#
# One op per tensor computes the gradient of the value, so it differed from eager without a word
# (fuzz seeds 20038 #24, 20211 #53). In a compilation that computes gradients such a call is refused:
# here when the list holds one proxy twice, and from the results recorded here by
# ``refusals/foreach_lists.py``, once the alias analysis knows which tensors may overlap (the same
# tensor passed as two arguments, ``b = a.add_(1)``, views of one tensor). Without gradients the
# values are eager's, and the call runs.


def _one_tensor_twice(method: str, tensors) -> bool:
    """Note [a foreach op given one tensor twice]: refuse a proxy listed twice that requires grad (an
    input's proxy says so as it traces; an intermediate's may not); whether gradients may flow through
    the call (then its per-tensor ops are recorded, ``_record``, and checked once the trace is known)."""
    compile_data = get_compile_data()
    if compile_data is None or not compile_data.is_grad_enabled:
        return False
    first: dict[int, int] = {}
    for i, t in enumerate(tensors):
        j = first.setdefault(id(t), i)
        if j != i and t.requires_grad:
            raise refuse_overlapping_list(method, f"list positions {j} and {i} name one tensor")  # (t's name is not yet the trace's)
    return True


def _record(method: str, results) -> None:
    """The names of the per-tensor ops' results, for ``refusals/foreach_lists.py``: Thunder names the
    trace's inputs after tracing (``t_0`` becomes ``a``), the results of ops keep their names."""
    ctx = context.current()
    if ctx.has_call:  # (a fusion_alias.jit call: its context lives for this compilation only)
        ctx.foreach_writes.append((method, tuple(r.name if isinstance(r, TensorProxy) else None for r in results)))


def refuse_overlapping_list(method: str, what: str) -> AliasInputError:
    """The refusal of Note [a foreach op given one tensor twice]; ``what`` says which positions overlap."""
    return AliasInputError(
        f"fusion_alias: torch._foreach_{method}: {what}, in a call that computes gradients: not supported. "
        "Eager PyTorch runs the writes in turn, but its foreach backward reads every operand as it was "
        "before the call, so its gradient is not that of the value it computes, and fusion_alias will not "
        "return a gradient that differs from eager's. Give the op tensors that do not overlap, or write the "
        f"update as a loop (`for t in ts: t.{method}(...)`)")


# Note [a foreach op's tensor scalar]
# -----------------------------------
# ``torch._foreach_add_(ps, v)`` with one tensor ``v`` (not a list) takes it as a scalar, which
# eager requires 0-dim. Which overload eager's argument parser picks decides what happens when ``v``
# shares memory with a tensor of the list (checked on torch 2.9.1, ``v = ps[0][1]``):
#
# * a ``number`` overload (``_foreach_add_(ps, v)``, ``_foreach_sub_``, ``_foreach_maximum_``):
#   ``v`` is read once, as a number, before any tensor is written: ``ps[0] += old ps[0][1]``;
# * the ``Tensor`` overload (``_foreach_mul_(ps, v)``, ``_foreach_div_``, ``_foreach_add_(ps, v,
#   alpha=2)``): each tensor's op in turn with ``v`` as its operand, and the operand check of that op
#   rejects the partial overlap ("some elements of the input tensor and the written-to tensor refer
#   to a single memory location");
# * a call no overload takes (``_foreach_lerp_(ps, v, 0.5)``: a list goes there): an error.
#
# The parser's choice is not in the schemas alone, so it is asked of eager, once per op and form of
# call: the same call on a tensor ``x`` with ``v = x[0]``. Where it ran, ``v`` is cloned once
# before the first op (read as a number); where the operand check fired, ``v`` goes to every op (the
# pass's operand check rejects the overlap as eager does); another error is eager's.
# ``_foreach_add_([a], a[0, 0])`` was refused, saying eager does too (fuzz seed 19910, edges).
# A list with a tensor that requires grad takes eager's slow path, each tensor's op with ``v`` as its operand,
# whatever the overload: ``_foreach_add_([a], a[0, 0, 0])`` of ``a`` that requires grad raises in eager, and ran
# (fuzz seed 27100 #0, edges --grad). The probe is then made on a tensor that requires grad.

_SCALAR_FORMS: dict = {}  # (method, form of the call) -> "number" | "tensor" | the error eager raised


def _eager_form(method: str, args, kwargs, where, grad: bool = False):
    """How eager takes the lone 0-dim tensor at ``where`` (Note [a foreach op's tensor scalar]), for a list
    with a tensor that requires grad where ``grad``."""
    def shape_of(a, here):
        if here:
            return "scalar"
        # (the parser picks an overload by the kinds of the arguments, not by their values: a step size
        # that changes between compilations is one form)
        if isinstance(a, (list, tuple)):
            return "list"
        return "tensor" if isinstance(a, TensorProxy) else type(a).__name__

    form = (method, tuple(shape_of(a, i == where) for i, a in enumerate(args)),
            tuple((k, shape_of(v, k == where)) for k, v in kwargs.items()), grad)
    if form in _SCALAR_FORMS:
        return _SCALAR_FORMS[form]
    x = torch.ones(2, requires_grad=True) * 1 if grad else torch.ones(2)

    def probe(a, here):
        if here:
            return x[0]
        if isinstance(a, (list, tuple)):
            return [torch.full((2,), 0.5)]
        return torch.tensor(0.5) if isinstance(a, TensorProxy) else a

    try:
        getattr(torch, f"_foreach_{method}")(
            [x], *[probe(a, i == where) for i, a in enumerate(args)],
            **{k: probe(v, k == where) for k, v in kwargs.items()})
        answer = "number"
    except RuntimeError as e:
        answer = "tensor" if "single memory location" in str(e) else e
    except TypeError as e:
        answer = e
    _SCALAR_FORMS[form] = answer
    return answer


def _scalar_tensor(method: str, value: TensorProxy, where, args, kwargs, grad: bool = False):
    """A lone tensor argument of a foreach op as eager takes it (Note [a foreach op's tensor scalar]); ``grad``:
    a tensor of the list requires grad."""
    if value.ndim != 0:
        raise RuntimeError(f"torch._foreach_{method}: scalar tensor expected to be 0 dim but it has "
                           f"{value.ndim} dimensions (eager PyTorch rejects this too)")
    form = _eager_form(method, args, kwargs, where, grad)
    if isinstance(form, Exception):
        raise type(form)(f"torch._foreach_{method}: {form} (eager PyTorch rejects this too)")
    return ltorch.clone(value) if form == "number" else value


# Note [foreach lookasides are Thunder's, asked for fusion_alias's executor]
# -------------------------------------------------------------------------
# An executor's own lookasides (``Executor._lookasides``, as inplace_lookasides.py lends) receive
# their arguments unwrapped, and the tensors in a list argument are not proxies yet: Thunder
# proxies a container's items only on the way into a symbol (``jit_ext.ensure_recursive_proxies``).
# So these lookasides are registered in Thunder's general lookaside map, proxied that way, and
# each asks the compile data whether fusion_alias's executor is in the call's executor list; for
# any other ``thunder.jit`` it raises Thunder's own "not yet supported" error, as before.


def _lookaside(executor, method: str, name: str, *args, **kwargs):
    compile_data = get_compile_data()
    if compile_data is None or executor not in compile_data.executors_list:
        raise NotImplementedError(f"Trying to call function torch.{name}, but it is not yet supported. "
                                  "Please file an issue requesting support.")
    return _traced(method, *args, **kwargs)


def _traced(method: str, *args, **kwargs):
    if method == "copy_":  # (``non_blocking`` changes when the copy runs, not what it writes)
        kwargs.pop("non_blocking", None)
    return _foreach(method, *args, **kwargs)


def traced_for_fx_node(op: str, target):
    """What fusion_alias traces for a Dynamo FX node calling ``torch._foreach_*``, or None (inplace_lookasides.py,
    Note [in-place ops fusion_alias adds, under torch.compile]: Thunder 0.2.6 has none of them, so ThunderFX's
    splitter sent every one to Inductor, a foreach optimizer step whole)."""
    name = getattr(target, "__name__", None) if op == "call_function" else None
    if name is None or not name.startswith("_foreach_") or getattr(torch, name, None) is not target:
        return None
    return partial(_traced, name[len("_foreach_"):])


def _addc_by_tensor(method: str, tensors, args, scalars: TensorProxy, grad_writes: bool = False):
    """``_foreach_addcmul_``/``addcdiv_`` with a ``scalars`` tensor: ``t += scalars[i] * (t1 * t2)`` (or
    ``t1 / t2``) for each ``i``, the value a 0-dim tensor where eager reads it as a number."""
    if scalars.ndim != 1 or scalars.shape[0] != len(tensors):
        raise RuntimeError(f"torch._foreach_{method}: expected a 1-d scalars tensor of {len(tensors)} values, "
                           f"got shape {tuple(scalars.shape)}")
    t1s, t2s = args
    results = []
    for i, t in enumerate(tensors):
        t1, t2 = (a[i] if isinstance(a, (list, tuple)) else a for a in (t1s, t2s))
        if method.endswith("_"):
            results.append(_ADDC_INPLACE[method](t, t1, t2, scalars[i]))
        else:
            results.append(ltorch.add(t, _addc_step(method, t, t1, t2, scalars[i])))
    if grad_writes:
        _record(method, results)
    return tensors if method.endswith("_") else tuple(results)


def _addc_step(method: str, t, t1, t2, value):
    combine = ltorch.mul if method.startswith("addcmul") else ltorch.true_divide
    return ltorch.mul(combine(t1, t2), ltorch.to(value, t.dtype))


def _addc_inplace_meta(method: str, t, t1, t2, value):
    return ltorch.add_(t, _addc_step(method, t, t1, t2, value))


# ``t.addcmul_(t1, t2, value=v)`` with a 0-dim tensor ``v`` (Thunder's own reads it wrong): one composite
# named as eager's op, so its operands are checked as eager checks ``addcmul_``'s (an expanded view of
# ``t`` as ``t1`` makes eager's result depend on memory order: refused; fuzz seed 2025 #9), through the
# traced program (refusals/inplace_ops.py, _has_own_inplace_ops)
_ADDC_INPLACE = {
    name: Symbol(name=name, meta=langctx(Languages.TORCH)(partial(_addc_inplace_meta, name)), id=f"fusion_alias.{name}")
    for name in ("addcmul_", "addcdiv_")
}


def register(executor) -> None:
    """Trace every ``torch._foreach_*`` op torch has under ``executor`` (Note [foreach lookasides are
    Thunder's, asked for fusion_alias's executor])."""
    prefix = "_foreach_"
    for name in dir(torch):
        if name.startswith(prefix):
            impl = partial(_lookaside, executor, name[len(prefix):], name)
            jit_ext._general_jit_lookaside_map[getattr(torch, name)] = jit_ext.ensure_recursive_proxies(
                interpreter_needs_wrap(impl))
