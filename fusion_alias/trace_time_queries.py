"""Questions a program asks about its tensors and modes while traced, answered as eager answers them.

Note [a tensor's dtype is a torch.dtype]
----------------------------------------
Inside Thunder 0.2.6's trace, ``x.dtype`` is a Thunder dtype (``thunder.dtypes.float32``), which is not
equal to, nor is, ``torch.float32``: ``if x.dtype == torch.float16:``, ``x.dtype in (torch.float16,
torch.bfloat16)``, ``{torch.float32: ...}[x.dtype]`` and ``x.dtype is torch.bool`` all took the other
branch, silently (plain ``thunder.jit`` too; found through fuzz seed 20830 #127's neighbours in session 28)::

    def f(a):
        return a * 2 if a.dtype == torch.float32 else a * 3     # float32 a: eager 2a, Thunder 3a

Here ``x.dtype`` read by the program is the ``torch.dtype`` (``dtypes.to_torch_dtype``); every torch
function Thunder traces takes a ``torch.dtype`` where it takes a dtype (``torch.zeros(3, dtype=x.dtype)``,
``x.to(y.dtype)``), and ``torch.finfo(x.dtype)`` and ``x.dtype.is_floating_point`` now work as in eager.
(``x.device`` stays Thunder's device: the interpreter makes ``torch.device("cpu")`` one too, and they compare
equal; only ``str(x.device)`` differs from eager's: docs/limits.md.)
Code of fusion_alias's own that the interpreter runs (``x.max(0)`` runs ``min_max.torch_max`` there) still
reads Thunder's dtype: the innermost interpreted frame that is not Thunder's says whose code reads it.

Note [grad mode read inside the function]
-----------------------------------------
Thunder 0.2.6 traces ``with torch.no_grad():`` and ``torch.set_grad_enabled(b)`` by tracking the grad
mode in its compile data (``cd.is_grad_enabled``) without changing PyTorch's, and leaves
``torch.is_grad_enabled()`` to PyTorch: inside a ``no_grad`` block the call still answered the mode of
the caller, so a branch on it took the other path, silently (plain ``thunder.jit`` too; session 27
hand probe)::

    def f(x):
        with torch.no_grad():
            flag = torch.is_grad_enabled()      # eager False; Thunder True
        return x * 2 if flag else x * 3

Here the call is answered from the compile data: the caller's mode at the start of the trace (the
compile cache keys it), changed by the blocks traced so far. ``torch.is_inference_mode_enabled()`` is
not lent: ``torch.inference_mode`` inside the function is refused (inplace_lookasides.py).

Note [.grad of a tensor that requires no grad]
----------------------------------------------
Thunder 0.2.6 gives a tensor's proxy its ``.grad`` only when the tensor requires grad (``TensorProxy``'s
constructor drops it otherwise), so a tensor that does not require grad but has a ``.grad`` (set by hand, or
a frozen parameter with a stale gradient) read None inside the function, silently (plain ``thunder.jit``
too; session 28 probe)::

    def f(x):
        if x.grad is not None:
            return x + x.grad
        return x * 2

    x = torch.ones(3); x.grad = torch.full((3,), 5.)     # x requires no grad
    f(x)                                                 # eager [6, 6, 6]; Thunder [2, 2, 2]
    p = nn.Parameter(torch.ones(3), requires_grad=False); p.grad = torch.full((3,), 7.)   # the same

Here ``x.grad`` of a proxy that requires no grad, read by the program in a call of ``fusion_alias.jit``,
is looked up in the call: the proxy is followed back through in-place results and conversions that return
their operand (tensor_identity.py), then along its provenance to the call's tensor (an argument, a global,
a closure cell, a module's parameter). Where that tensor has a ``.grad`` the compilation is refused by name,
with the workarounds; where it has none the read answers None, as eager, and the program depends on that:
the guard keys every tensor that requires no grad and has a ``.grad`` (guard.py, Note [a leaf's .grad, None
or not]), which covers the arguments and the tensors the computation reads, and a tensor reached otherwise
(a global or a module's parameter read only for its ``.grad``) is recorded with the identity answers, which
are checked again on each call (tensor_identity.py, Note [identity answers are guarded]). A later call
where the tensor has gained a ``.grad`` compiles again and is refused; one where it lost it runs. A tensor the
program made has no ``.grad`` in eager either. A proxy whose origin neither the trace nor its provenance
tells is refused where any tensor of the call (arguments, the module's parameters and buffers) requires no
grad and has a ``.grad``. ``.grad`` of a tensor that requires grad is Thunder's (its prologue unpacks it),
and so is a read by fusion_alias's own interpreted code. ``thunder.jit(fn, executors=[fusion_alias.executor])``
has no call to look in and keeps Thunder's None.
"""

from __future__ import annotations

import os

import torch
import thunder
from thunder.core import dtypes
from thunder.core.interpreter import get_interpreterruntimectx
from thunder.core.interpreter import PseudoInst
from thunder.core.proxies import TensorProxy
from thunder.core.pytree import tree_flatten

import fusion_alias
from fusion_alias import context, tensor_identity
from fusion_alias.traced_grad_mode import traced_grad_enabled


# Code the interpreter runs that expects Thunder's dtypes is fusion_alias's own (``min_max.torch_max`` runs
# there for ``x.max(0)``). Thunder's interpreter runs frames of its own between (attribute lookups): the
# reader is the innermost frame that is not Thunder's. torch's Python code gets the torch.dtype, as in eager.
_THUNDER = os.path.dirname(thunder.__file__) + os.sep
_FUSION_ALIAS = os.path.dirname(fusion_alias.__file__) + os.sep


def _read_by_fusion_alias() -> bool:
    try:
        frames = get_interpreterruntimectx().frame_stack
    except LookupError:  # (read outside an interpretation)
        return False
    for frame in reversed(frames):
        name = frame.code.co_filename
        if not name.startswith(_THUNDER):
            return name.startswith(_FUSION_ALIAS)
    return False


def _torch_dtype(proxy):
    return proxy.dtype if _read_by_fusion_alias() else dtypes.to_torch_dtype(proxy.dtype)


_proxy_grad = TensorProxy.grad.fget


def _grad(proxy):
    """``proxy.grad`` as Thunder answers it, after checking a read of a tensor that requires no grad (Note [.grad
    of a tensor that requires no grad])."""
    if not proxy.requires_grad and not _read_by_fusion_alias():
        ctx = context.current()
        if ctx.has_call:
            _check_grad_read(proxy, ctx)
    return _proxy_grad(proxy)


def _has_grad(t) -> bool:
    return t.grad_fn is None and t.grad is not None  # (a leaf: a non-leaf's .grad is None, with a warning)


def _check_grad_read(proxy, ctx) -> None:
    producers = tensor_identity._producers()
    p = proxy
    for _ in range(len(producers) + 1):  # back through in-place results and conversions eager returns as their
        b = producers.get(p.name)        # operand (conservatively, also those that do so by layout: contiguous())
        if b is None or not (tensor_identity._returns_its_first_argument(b) or b.sym.name in tensor_identity._BY_LAYOUT
                             or tensor_identity.is_its_operand(b)):
            break
        p = b.args[0]
    record = getattr(p, "history", None)
    found = tensor_identity._in_call(p, ctx)
    if isinstance(found, torch.Tensor):
        if _has_grad(found):
            raise _refusal(f"reads `.grad` of a tensor that does not require grad while it has a .grad "
                           f"({_where(record, ctx)})")
        if not _covered_by_arguments(record, ctx):  # (the arguments' guard key covers the others)
            ctx.identity_records.append((record, found))
        return
    if p.name in producers:
        return  # made by the program: its .grad is None in eager too
    if any(_has_grad(t) and not t.requires_grad for t in _call_tensors(ctx)):  # an origin not told: any of the call's
        raise _refusal(f"reads `.grad` of a tensor that does not require grad ({p.name}, an origin the trace does not "
                       "tell) while a tensor of the call that does not require grad has a .grad")


def _refusal(what: str) -> NotImplementedError:
    return NotImplementedError(
        f"fusion_alias: the function {what}: not supported, Thunder 0.2.6 traces it as None (it traces a tensor's "
        ".grad only when the tensor requires grad), so the program would go on as if there were no gradient. "
        "Workaround: make the tensor require grad (requires_grad_()), pass the gradient as an argument, or set its "
        ".grad to None before the call")


def _covered_by_arguments(record, ctx) -> bool:
    """Whether ``record`` is a path of subscripts from the call's arguments through plain tuples, lists and
    dicts, which the guard key of the arguments covers (as ``api._reads_beyond_arguments`` counts them)."""
    keys = []
    while record is not None and record.inst is PseudoInst.BINARY_SUBSCR and len(record.inputs) == 2:
        if record.inputs[1].inst is not PseudoInst.CONSTANT:
            return False
        keys.append(record.inputs[1].value)
        record = record.inputs[0]
    if record is None or record.inst not in (PseudoInst.INPUT_ARGS, PseudoInst.INPUT_KWARGS):
        return False
    obj = ctx.args if record.inst is PseudoInst.INPUT_ARGS else ctx.kwargs
    for k in reversed(keys):
        if type(obj) not in (tuple, list, dict):
            return False
        try:
            obj = obj[k]
        except Exception:
            return False
    return True


_MODULE_TABLES = frozenset({"_parameters", "_buffers", "_modules"})


def _where(record, ctx) -> str:
    """``record`` (a proxy's provenance) as a path a user reads: ``args[0]``, ``kwargs['p']``, ``the global G``,
    ``self.l.weight``."""
    inst = getattr(record, "inst", None)
    if inst is PseudoInst.INPUT_ARGS:
        return "args"
    if inst is PseudoInst.INPUT_KWARGS:
        return "kwargs"
    if inst is PseudoInst.INPUT_FN:
        return "self" if isinstance(ctx.fn, torch.nn.Module) else "the function"
    if inst in (PseudoInst.BINARY_SUBSCR, PseudoInst.LOAD_ATTR) and len(record.inputs) == 2:
        of, key = record.inputs
        name = key.value if key.inst is PseudoInst.CONSTANT else "?"
        if inst is PseudoInst.LOAD_ATTR and (name in _MODULE_TABLES or name == "__globals__"):
            return _where(of, ctx) + (".__globals__" if name == "__globals__" else "")  # (named by the subscript)
        path = _where(of, ctx)
        if path.endswith(".__globals__"):
            return f"the global {name}"
        if name == "cell_contents" and of.inst is PseudoInst.BINARY_SUBSCR and _attribute_of(of.inputs[0]) == "__closure__":
            names = getattr(getattr(ctx.fn, "__code__", None), "co_freevars", ())
            i = of.inputs[1].value if of.inputs[1].inst is PseudoInst.CONSTANT else None
            return f"the closure variable {names[i]}" if isinstance(i, int) and i < len(names) else path + ".cell_contents"
        if inst is PseudoInst.LOAD_ATTR or _attribute_of(of) in _MODULE_TABLES:
            return f"{path}.{name}"
        return f"{path}[{name!r}]"
    return "a tensor of the call"


def _attribute_of(record):
    if record.inst is PseudoInst.LOAD_ATTR and len(record.inputs) == 2 and record.inputs[1].inst is PseudoInst.CONSTANT:
        return record.inputs[1].value
    return None


def _call_tensors(ctx):
    """The call's argument tensors, and the parameters and buffers of the module called."""
    try:
        flat, _ = tree_flatten((ctx.args, ctx.kwargs))
    except Exception:  # (an argument type Thunder's pytree does not know)
        flat = [*ctx.args, *ctx.kwargs.values()]
    yield from (t for t in flat if isinstance(t, torch.Tensor))
    if isinstance(ctx.fn, torch.nn.Module):
        yield from ctx.fn.parameters()
        yield from ctx.fn.buffers()


def register(executor) -> None:
    executor._lookasides[torch.is_grad_enabled] = traced_grad_enabled
    executor._lookasides[torch._C.is_grad_enabled] = traced_grad_enabled
    executor._lookasides[TensorProxy.dtype.fget] = _torch_dtype  # Note [a tensor's dtype is a torch.dtype]
    executor._lookasides[TensorProxy.grad.fget] = _grad  # Note [.grad of a tensor that requires no grad]
