"""Ops under ``torch.autocast`` whose dtype Thunder gives differently from eager: refused.

Note [autocast: eager's dtype or a refusal]
-------------------------------------------
Eager's autocast casts the operands of each op by a per-device policy: ``mm``, ``bmm``, ``addmm``,
``baddbmm``, ``prelu``, the transposed convolutions and more run in the lower precision; losses,
``prod`` and ``cdist`` (on CUDA also ``exp``, ``log``, ``softmax``, ``sum``, ...) run in float32.
Thunder 0.2.6 has autocast rules for ``matmul``, ``linear``, the convolutions and
``scaled_dot_product_attention`` only (``thunder/transforms/autocast.py``); every other op runs on its
operands as they are. Plain ``thunder.jit`` then returns another dtype and other numbers, silently::

    with torch.autocast("cpu", dtype=torch.bfloat16):
        y = torch.mm(x, w)        # eager: bfloat16; Thunder: float32 (session 24 hand probe)
        l = F.mse_loss(h, h2)     # bfloat16 h, h2: eager float32; Thunder bfloat16

Nor can the trace be trusted to say which: in the program as traced (trace 0) ``torch.bmm`` decomposes
into conversions to bfloat16 and a ``matmul``, and its result is recorded as bfloat16, but the torch
executor then claims the whole ``bmm`` and runs ``torch.bmm`` on the float32 operands (float32 at run
time, session 24). What does hold: where Thunder's rule applies at the op the user called (``x @ w``,
``F.linear``), trace 0 holds the conversions as ops of their own, before the op, whose operands are then
in the autocast dtype already.

So each op of trace 0 that runs under autocast (Thunder's ``autocast_enter``/``autocast_exit``
markers where the program enters and leaves ``torch.autocast``, and the autocast the call itself runs
under) is run again with eager's own function on fake tensors of its operands' shapes, dtypes and
devices, once under that autocast state and once without autocast: where the dtypes differ, eager's
autocast would cast what Thunder runs as it is, and the call is refused with an error that names the op
and both dtypes. ``x @ w`` under autocast runs (its operands are bfloat16 already: no difference), as do
ops autocast leaves alone (``softmax``, ``layer_norm`` on CPU) and ops on operands already in the
autocast dtype. Where eager's dtype cannot be told (the fake run raises) and an operand is a floating
tensor, the call is refused as well. Refused needlessly: ``torch.einsum``, whose decomposition Thunder
does run with the conversions (it comes out as eager's), because trace 0 cannot tell it from ``bmm``.
Outside any autocast nothing is run. Not verified on CUDA (no GPU in the sessions so far): the check
is the same there, with eager's CUDA policy, whose float32 list holds common ops (``exp``, ``sum``,
``softmax``), so more programs are refused.
"""

from __future__ import annotations

import contextlib
import importlib
import logging
import warnings

import torch
from thunder.core import devices, dtypes
from thunder.core.proxies import NumberProxy, TensorProxy
from thunder.core.pytree import tree_flatten, tree_map

_ENTER = "torch.amp.autocast_mode._enter_autocast"
_EXIT = "torch.amp.autocast_mode._exit_autocast"
_DEVICES = ("cpu", "cuda")
_THUNDER_RULES = "applies autocast to matmul, linear, convolutions and scaled_dot_product_attention only"


class AutocastDtypeError(NotImplementedError):
    """An op under ``torch.autocast`` to which Thunder gives another dtype than eager (module Note)."""


def check_autocast_dtypes(traced) -> None:
    """Refuse each op of ``traced`` (trace 0) that runs under autocast with another dtype than eager's
    (module Note). Nothing is checked without a trace or outside autocast."""
    if traced is None:
        return
    stack = [(d, torch.get_autocast_dtype(d), True) for d in _DEVICES if torch.is_autocast_enabled(d)]
    bsyms = traced.bound_symbols
    if not stack and not any(b.sym.id == _ENTER for b in bsyms):
        return
    for b in bsyms:
        sym_id = b.sym.id
        if sym_id == _ENTER:
            device, dtype, enabled = (*b.args, None, None, True)[:3]
            device = str(device).split(":")[0]
            stack.append((device, dtype if dtype is not None else torch.get_autocast_dtype(device), bool(enabled)))
        elif sym_id == _EXIT:
            if stack:
                stack.pop()
        elif stack:
            _check(b, stack)


def _active(stack, device: str):
    """The autocast dtype in force for ``device`` (the innermost entry for it), or None."""
    for d, dtype, enabled in reversed(stack):
        if d == device:
            return dtype if enabled else None
    return None


def _check(b, stack) -> None:
    tensors = [p for p in tree_flatten((b.args, b.kwargs))[0] if isinstance(p, TensorProxy)]
    if not tensors:
        return
    # Thunder's rule asks for the CPU's state when any operand is on the CPU (autocast.maybe_apply_autocast)
    device = "cpu" if any(p.device.devicetype is devices.DeviceType.CPU for p in tensors) else "cuda"
    if _active(stack, device) is None:
        return
    fns = _torch_functions(b.sym)
    if not fns:  # Thunder's own prims and symbols (its autocast rule's conversions): not a user call
        return
    name = b.sym.id
    try:
        eager = _fake_dtypes(fns, b, stack)
        plain = _fake_dtypes(fns, b, [])
    except Exception as e:  # eager's dtype cannot be told: refused where a cast could matter
        if any(dtypes.is_float_dtype(p.dtype) for p in tensors):
            raise AutocastDtypeError(
                f"fusion_alias: {name} (as Thunder traces the op) under torch.autocast({device!r}) is not supported: "
                f"fusion_alias cannot tell which dtype eager PyTorch gives it there ({type(e).__name__}: {e}), "
                f"and Thunder 0.2.6 {_THUNDER_RULES}. Workaround: call it outside torch.autocast, on operands cast "
                f"to the dtype you want"
            ) from None
        return
    if eager != plain:
        raise AutocastDtypeError(
            f"fusion_alias: {name} (as Thunder traces the op) under torch.autocast({device!r}, "
            f"dtype={_active(stack, device)}) is not supported: eager PyTorch's autocast computes it in "
            f"{', '.join(map(str, eager))}, Thunder 0.2.6 in {', '.join(map(str, plain))} (it {_THUNDER_RULES}). "
            f"Workaround: cast the operands yourself (x.to({eager[0]})) or call it outside torch.autocast"
        )


_RESOLVED: dict[int, tuple] = {}  # id(symbol) -> (symbol, eager's functions for it)


def _torch_functions(sym) -> list:
    """Eager's functions for a Thunder torch symbol, most specific first: those Thunder maps to it
    (``thunder.torch._torch_to_thunder_function_map``: ``F.batch_norm`` for the symbol with id
    ``"torch.batch_norm"``, whose ``torch.batch_norm`` takes other arguments), functional ones first,
    then the function its id names. Empty for a prim or a symbol of Thunder's own."""
    entry = _RESOLVED.get(id(sym))
    if entry is None or entry[0] is not sym:
        import thunder.torch as ltorch

        mapped = [fn for fn, s in ltorch._torch_to_thunder_function_map.items() if s is sym]
        mapped.sort(key=lambda fn: 0 if getattr(fn, "__module__", None) == "torch.nn.functional" else 1)
        named = _torch_function(sym.id)
        entry = _RESOLVED[id(sym)] = (sym, mapped + ([named] if named is not None and named not in mapped else []))
    return entry[1]


def _torch_function(sym_id) -> object | None:
    """Eager's function a Thunder torch symbol's id names (``"torch.mm"``, ``"torch.nn.functional.mse_loss"``,
    ``"torch.Tensor.mm"``), or None (a prim, Thunder's own symbol, or nothing under that path)."""
    if not isinstance(sym_id, str) or not sym_id.startswith("torch."):
        return None
    parts = sym_id.split(".")
    for cut in range(len(parts) - 1, 0, -1):  # the longest importable module, then attributes
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        try:
            for attr in parts[cut:]:
                obj = getattr(obj, attr)
        except AttributeError:
            return None
        return obj if callable(obj) else None
    return None


def _fake_dtypes(fns, b, stack) -> list[torch.dtype]:
    """The dtypes of eager's tensor outputs of ``b``'s op (``fns``: eager's functions for it) on fake
    tensors like ``b``'s operands, under the autocast state ``stack`` (outermost first)."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode(), contextlib.ExitStack() as contexts, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (torch.autocast("cuda") on a machine without CUDA warns)
        contexts.enter_context(_quiet(_FAKE_LOG))  # (a spelling eager does not take is logged there as an error)
        args, kwargs = tree_map(_fake, (b.args, b.kwargs))
        for device in _DEVICES:  # (the call's own autocast, if any, is in ``stack``: from a clean state)
            contexts.enter_context(torch.autocast(device, enabled=False))
        for device, dtype, enabled in stack:
            contexts.enter_context(torch.autocast(device, dtype=dtypes.to_torch_dtype(dtype), enabled=enabled))
        out = _call_as_eager(fns, b.sym.id, args, kwargs)
    return [t.dtype for t in tree_flatten(out)[0] if isinstance(t, torch.Tensor)]


_FAKE_LOG = logging.getLogger("torch._subclasses.fake_tensor")


@contextlib.contextmanager
def _quiet(log: logging.Logger):
    level = log.level
    log.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        log.setLevel(level)


def _call_as_eager(fns, sym_id: str, args: tuple, kwargs: dict):
    """The first of ``fns`` that takes ``(*args, **kwargs)``, or, where Thunder's signature spells what
    eager's does not take (``prod(a, None, False, dtype=None)``, ``reshape(a, 2, 3)``, ``relu(a, False)``),
    the first that takes the positional arguments up to the first None without None keywords, then the
    Tensor method of the op's name (which takes sizes and dims one by one), each with those keywords and
    with none. The last error if all raise."""
    cut = next((i for i, a in enumerate(args) if a is None), len(args))
    set_kwargs = {k: v for k, v in kwargs.items() if v is not None}
    method = getattr(torch.Tensor, sym_id.rsplit(".", 1)[-1], None)
    calls = [(fn, args, kwargs) for fn in fns] + [(fn, args[:cut], k) for k in (set_kwargs, {}) for fn in fns]
    if method is not None and args and isinstance(args[0], torch.Tensor):
        calls += [(method, args, kwargs), (method, args[:cut], set_kwargs), (method, args[:cut], {}), (method, args[:1], {})]
    error = None
    for f, a, k in calls:
        try:
            return f(*a, **k)
        except Exception as e:  # noqa: BLE001 - the next spelling
            error = e
    raise error


def _fake(x):
    if isinstance(x, TensorProxy):
        return torch.empty(tuple(x.shape), dtype=dtypes.to_torch_dtype(x.dtype), device=devices.to_torch_device(x.device))
    if isinstance(x, NumberProxy):
        return x.value
    if isinstance(x, dtypes.dtype):
        return dtypes.to_torch_dtype(x)
    if isinstance(x, devices.Device):
        return devices.to_torch_device(x)
    return x
