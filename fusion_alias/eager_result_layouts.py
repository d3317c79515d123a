"""Eager's layout of the result of a torch function the program calls, from the function itself.

Note [a torch function's result has the layout eager's kernel gives it]
-----------------------------------------------------------------------
``layouts._Layouts`` replays the flattened trace's prims on meta tensors: an elementwise prim keeps its operand's
layout, as eager's TensorIterator does. But many of eager's kernels allocate their result themselves, and the
decomposition Thunder traces does not say how: ``masked_fill`` clones its operand contiguous, ``batch_norm``,
``group_norm`` allocate in the operand's suggested memory format (channels_last for a channels_last
operand, else contiguous), ``softmax`` contiguous, ``avg_pool2d``, ``F.pad`` and ``rms_norm`` of a channels_last
operand keep channels_last. Where the replay gives another layout, a ``reshape``/``flatten`` of the result is taken
for a view where eager copies (or the reverse), and a write through it reaches the result where eager's does not,
silently; a ``view`` runs where eager raises, or is refused where eager runs. Worked example (``a`` a transposed
(4, 6) argument; session 35 probe; plain ``thunder.jit`` right)::

    s = a.masked_fill(a > 0, 1.0)   # eager: contiguous (6, 1); the replay of its ``where``: (1, 4)
    s.reshape(-1).mul_(2)           # eager: a view of s, so s is doubled; was: a write into a copy
    return s

So the result of a torch function the program calls at the trace's top level (not a view, not in place) gets the
layout of the torch function itself run on meta operands of eager's layouts (its meta kernel gives eager's
layout), except for the functions whose meta kernel is known to disagree with eager's CPU kernel
(``_SUGGESTED_FORMAT``, ``_CONTIGUOUS``: session 35 probe of about 150 torch functions on five layouts). Where
the function cannot run on meta (no torch counterpart, an operand of unknown layout, a meta kernel that raises, a
result of another shape), the replay's layout stays. Checked on CPU; a CUDA kernel may allocate otherwise.

Note [the strides of a view's size-1 dims]
------------------------------------------
A size-1 dim's stride addresses nothing, but eager's kernels read it when they choose a result's layout
(``suggest_memory_format``, TensorIterator's ambiguity rules). ``b.unsqueeze(0)`` of a (1, 4, 6) ``b`` with strides
(6, 6, 1) has strides (6, 6, 6, 1) in eager; the replay of its prim (``broadcast_in_dim``) gave (24, 6, 6, 1), so
``F.rms_norm(b.unsqueeze(0).permute(0, 3, 1, 2), (4,))`` was given a channels_last result where eager's is
contiguous, and a write through its ``flatten()`` was lost (session 35 fuzz, layout seed 35020 #18 with
``P_KERNEL`` 1; plain ``thunder.jit`` wrong too). So views the program calls get their torch function's strides too.
"""

from __future__ import annotations

import inspect

import torch
import thunder.core.prims as prims
import thunder.torch as ltorch
from thunder.core import dtypes
from thunder.core.devices import Device
from thunder.core.proxies import NumberProxy, TensorProxy
from torch.utils._pytree import tree_flatten, tree_map

# meta kernels that differ from eager's CPU kernel (session 35 probe): the result is contiguous in the operand's
# suggested memory format (channels_last of a 4-D channels_last operand) ...
_SUGGESTED_FORMAT = frozenset({"batch_norm", "group_norm"})
# ... or always contiguous
_CONTIGUOUS = frozenset({"rrelu", "logsigmoid", "one_hot"})
# Thunder symbols that return a view or may, or write in place: their layouts are the replay's business
# (and the conversions and copies the replay models already: layouts.py)
_NOT_HERE = frozenset({"contiguous", "to", "type", "type_as", "clone", "reshape", "view", "view_as", "flatten",
                       "unflatten"})


def _torch_functions() -> dict:
    """Thunder symbol id, and symbol name -> a torch function with its signature (a ``torch.*`` or
    ``torch.nn.functional`` function before a ``Tensor`` method). By name too: the pass's trace may hold a
    symbol of another id for the same torch function (``F.batch_norm`` run by the torch executor)."""
    found: dict = {}
    for fn, sym in ltorch._torch_to_thunder_function_map.items():
        sid, name = getattr(sym, "id", None), getattr(sym, "name", None)
        method = "Tensor" in getattr(fn, "__qualname__", "")
        for key in (sid, ("name", name)):
            if key is not None and (key not in found or (found[key][1] and not method)):
                found[key] = (fn, method)
    return {key: fn for key, (fn, _) in found.items()}


def _function_of(b):
    """The torch function of top-level symbol ``b`` (by id, else by name unless a prim), or None."""
    fn = _FUNCTIONS.get(b.sym.id)
    if fn is None and not isinstance(b.sym.id, prims.PrimIDs):
        fn = _FUNCTIONS.get(("name", b.sym.name))
    return fn


_FUNCTIONS: dict | None = None
# (a view's own torch function on meta gives eager's strides, those of its size-1 dims too, which the replay of its
# prims (``broadcast_in_dim`` for ``unsqueeze``) does not: Note [the strides of a view's size-1 dims]; an op that
# only may return a view, by layout, is the replay's business)
_MAY_VIEW = frozenset(getattr(s, "id", s) for s in ltorch._syms_that_may_return_views)


def result_symbols(*traces) -> dict:
    """Output name -> (the top-level symbol making it, the output's index among the symbol's tensor outputs), for
    the top-level torch functions whose result layout eager's kernel decides (module Note), of the program as traced
    (the user's calls; ``F.avg_pool2d`` and ``roll`` are decomposed by the time the pass runs) and of the pass's
    trace (None: skipped)."""
    global _FUNCTIONS
    if _FUNCTIONS is None:
        _FUNCTIONS = _torch_functions()
    out: dict = {}
    for b in (b for t in reversed(traces) if t is not None for b in t.bound_symbols):
        name = b.sym.name
        if (name.endswith("_") or name in _NOT_HERE or b.sym.id in _MAY_VIEW or _function_of(b) is None
                or not any(isinstance(a, TensorProxy) for a in b.flat_args)):
            continue
        tensors = [o for o in b.flat_outs if isinstance(o, TensorProxy)]
        for i, o in enumerate(tensors):
            out.setdefault(o.name, (b, i))
    return out


def tensor_args(b) -> list:
    return [a for a in b.flat_args if isinstance(a, TensorProxy)]


def eager_result_layout(b, index: int, p: TensorProxy, meta_of) -> torch.Tensor | None:
    """Eager's layout of ``p``, the ``index``-th tensor output of top-level symbol ``b``, as a meta tensor; None
    where it cannot be told here (module Note). ``meta_of(proxy)``: eager's layout of an operand, or None."""
    operands = tensor_args(b)
    metas = {a.name: meta_of(a) for a in operands}
    if any(m is None for m in metas.values()):
        return None
    name = b.sym.name
    if name == "roll":
        return _rolled_as_on_cpu(metas[operands[0].name], b, p)
    if name in _SUGGESTED_FORMAT or name in _CONTIGUOUS:
        fmt = torch.contiguous_format
        first = metas[operands[0].name]
        if name in _SUGGESTED_FORMAT and first.dim() == len(p.shape) and first.dim() in (4, 5):
            cl = torch.channels_last if first.dim() == 4 else torch.channels_last_3d
            if first.is_contiguous(memory_format=cl) and not first.is_contiguous():
                fmt = cl
        return _empty(p, fmt)

    def meta_arg(a):
        if isinstance(a, TensorProxy):
            return metas[a.name]
        if isinstance(a, NumberProxy):
            v = getattr(a, "value", None)
            return v if v is not None else a.python_type(1)
        if isinstance(a, dtypes.dtype):
            return dtypes.to_torch_dtype(a)
        if isinstance(a, Device):
            return torch.device("meta")
        return a

    try:
        args, kwargs = tree_map(meta_arg, (b.args, b.kwargs))
        if "device" in kwargs:
            kwargs["device"] = torch.device("meta")
        result = _call(_function_of(b), b, args, kwargs)
    except Exception:  # noqa: BLE001 - no meta kernel, another signature: not told here
        return None
    outs = [t for t in tree_flatten(result)[0] if isinstance(t, torch.Tensor)]
    if index >= len(outs) or tuple(outs[index].shape) != tuple(p.shape) or outs[index].device.type != "meta":
        return None
    t = outs[index]
    return torch.empty_strided(tuple(t.shape), tuple(t.stride()), dtype=dtypes.to_torch_dtype(p.dtype), device="meta")


# Note [roll's result is eager's cat of two narrows]
# ---------------------------------------------------
# Eager's CPU ``roll`` of one dim is ``cat([t.narrow(d, start, size - start), t.narrow(d, 0, start)], d)``
# with ``start = (size - shift) % size``; of several dims, that, one dim after the other; of none, the roll
# of ``t.flatten()`` viewed back (ATen's ``roll_cpu``, ``roll_common``). Its meta kernel allocates otherwise,
# and so did the rule before this one (the operand's suggested memory format, session 35): where a shift is a
# multiple of the dim's size (a size-1 dim always, a shift of 0 or of the size) the second piece is empty,
# ``cat`` of pieces whose suggested formats differ allocates contiguous, and a ``flatten`` of the result of a
# channels_last operand's roll was taken for a view where eager copies, so a later write reached it, silently
# (session 37 helper, fresh default seed 20859 #15: ``t0 = a.unsqueeze(0).permute(0, 3, 1, 2).roll(1, 0);
# t1 = t0.flatten(1); t0.tanh_()``). The same ``narrow``s and ``cat``s on meta operands give eager's layout.
def _rolled_as_on_cpu(first: torch.Tensor, b, p: TensorProxy) -> torch.Tensor | None:
    """Eager's layout of ``roll``'s result ``p`` (Note [roll's result is eager's cat of two narrows])."""
    positional = dict(zip(("a", "shifts", "dims"), b.args))  # (torch.roll(input, shifts, dims=()))
    shifts, dims = b.kwargs.get("shifts", positional.get("shifts")), b.kwargs.get("dims", positional.get("dims", ()))
    shifts = tuple(shifts) if isinstance(shifts, (tuple, list)) else (shifts,)
    dims = tuple(dims) if isinstance(dims, (tuple, list)) else (dims,)
    if not all(isinstance(v, int) for v in shifts + dims):
        return None
    try:
        t = _cpu_roll(first, shifts, dims)
    except Exception:  # noqa: BLE001 - eager's error, raised by the program's own call
        return None
    if tuple(t.shape) != tuple(p.shape):
        return None
    return torch.empty_strided(tuple(t.shape), tuple(t.stride()), dtype=dtypes.to_torch_dtype(p.dtype), device="meta")


def _cpu_roll(t: torch.Tensor, shifts: tuple, dims: tuple) -> torch.Tensor:
    if not dims:
        return _cpu_roll(t.flatten(), shifts, (0,)).view(t.shape)
    if len(dims) > 1:
        return _cpu_roll(_cpu_roll(t, shifts[:1], dims[:1]), shifts[1:], dims[1:])
    if t.numel() == 0:
        return t.clone(memory_format=torch.preserve_format)
    dim, size = dims[0], t.size(dims[0])
    start = (size - shifts[0]) % size
    return torch.cat([t.narrow(dim, start, size - start), t.narrow(dim, 0, start)], dim)


def _call(fn, b, args: tuple, kwargs: dict):
    """``fn(*args, **kwargs)``; where the torch function takes as keywords what Thunder's symbol takes by position
    (``torch.sort(x, *, stable, dim, descending)``: ``ltorch.sort(a, dim, descending, stable)``), the first argument
    by position and the others by the symbol's parameter names."""
    try:
        return fn(*args, **kwargs)
    except TypeError:
        if not args:
            raise
        params = list(inspect.signature(getattr(b.sym, "meta", None) or b.sym.__call__).parameters)
        named = {**dict(zip(params[1:], args[1:])), **kwargs}
        return fn(args[0], **named)


def _empty(p: TensorProxy, fmt) -> torch.Tensor | None:
    try:
        return torch.empty(tuple(p.shape), dtype=dtypes.to_torch_dtype(p.dtype), device="meta", memory_format=fmt)
    except Exception:  # noqa: BLE001
        return None
