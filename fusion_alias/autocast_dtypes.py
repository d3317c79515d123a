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
tensor, the call is refused as well.

An op no executor of the call runs as a whole runs as its decomposition. Thunder's dtype for it is
then the one its decomposition traced, provided each symbol in the decomposition runs as traced (an
executor that claims one whole runs eager's function on its operands without autocast: checked as
that, recursively). ``torch.einsum`` is the case in point: its trace-0 symbol looks like ``bmm``'s
(conversions to bfloat16 and a ``matmul`` inside, a bfloat16 result), but no executor claims
``einsum``, so Thunder runs the conversions and the ``matmul`` on bfloat16 operands, as eager does,
while the torch executor claims ``bmm`` whole and runs it on the float32 operands::

    with torch.autocast("cpu", dtype=torch.bfloat16):
        a = torch.einsum("ij,kj->ik", x, y)  # eager bf16, decomposition traced bf16: runs
        d = torch.einsum("ij,ij->i", x, x)   # eager bf16 (a bmm inside), decomposition mul+sum f32: refused
        b = torch.bmm(x3, y3)                # run whole: float32 vs eager's bfloat16, refused

Where the call's executors are not known, every op is checked whole. Outside any autocast nothing is
run. Not verified on CUDA (no GPU in the sessions so far): the check
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
from thunder.core.compile_data import get_compile_data
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
    compile_data = get_compile_data()
    executors = list(compile_data.executors_list) if compile_data is not None else None
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
            _check(b, stack, executors)


def _active(stack, device: str):
    """The autocast dtype in force for ``device`` (the innermost entry for it), or None."""
    for d, dtype, enabled in reversed(stack):
        if d == device:
            return dtype if enabled else None
    return None


def _runs_whole(b, executors) -> bool:
    """Whether an executor of the call runs ``b`` as one op (else Thunder runs its decomposition:
    module Note). True where the executors are not known, or one cannot tell."""
    if executors is None or not b.subsymbols:
        return True
    for ex in executors:
        try:
            if ex.can_execute(b):
                return True
        except Exception:  # noqa: BLE001 - cannot tell: checked whole, the stricter check
            return True
    return False


def _check(b, stack, executors) -> None:
    tensors = _tensor_operands(b)
    if not tensors:
        return
    # Thunder's rule asks for the CPU's state when any operand is on the CPU (autocast.maybe_apply_autocast)
    device = "cpu" if any(p.device.devicetype is devices.DeviceType.CPU for p in tensors) else "cuda"
    if _active(stack, device) is None:
        return
    fns = _torch_functions(b.sym)
    if not fns:  # Thunder's own prims and symbols (its autocast rule's conversions): not a user call
        return
    whole = _runs_whole(b, executors)
    try:
        eager = _fake_dtypes(fns, b, stack)
        # run whole, under the computation's no_autocast: eager's function on the operands as traced;
        # run as its decomposition: what the decomposition traced (checked below to run as traced)
        thunder = _fake_dtypes(fns, b, []) if whole else _traced_dtypes(b)
    except Exception as e:  # eager's dtype cannot be told: refused where a cast could matter
        _refuse_unless_exact(b, tensors, e, f"under torch.autocast({device!r})")
        return
    if eager and eager != thunder:  # (eager's in-place ``setitem`` returns no tensor: its write keeps the dtype)
        raise AutocastDtypeError(
            f"fusion_alias: {b.sym.id} (as Thunder traces the op) under torch.autocast({device!r}, "
            f"dtype={_active(stack, device)}) is not supported: eager PyTorch's autocast computes it in "
            f"{', '.join(map(str, eager))}, Thunder 0.2.6 in {', '.join(map(str, thunder))} (it {_THUNDER_RULES}). "
            f"Workaround: cast the operands yourself (x.to({eager[0]})) or call it outside torch.autocast"
        )
    if not whole:
        for sub in b.subsymbols:
            _check_runs_as_traced(sub, executors)


def _check_runs_as_traced(b, executors) -> None:
    """Refuse where a symbol of a decomposition that runs gives another dtype than the trace records:
    one an executor claims whole is run by eager's function, without autocast, on its operands as
    traced (module Note: ``bmm`` inside a decomposition would be); a prim runs as traced."""
    tensors = _tensor_operands(b)
    if not tensors:
        return
    if not _runs_whole(b, executors):
        for sub in b.subsymbols:
            _check_runs_as_traced(sub, executors)
        return
    fns = _torch_functions(b.sym)
    if not fns:
        return
    try:
        runs, traced = _fake_dtypes(fns, b, []), _traced_dtypes(b)
    except Exception as e:  # noqa: BLE001
        _refuse_unless_exact(b, tensors, e, "inside a decomposition under torch.autocast")
        return
    if runs != traced:
        raise AutocastDtypeError(
            f"fusion_alias: {b.sym.id}, inside a decomposition under torch.autocast, is not supported: "
            f"Thunder 0.2.6 traces it as {', '.join(map(str, traced))} and runs it in {', '.join(map(str, runs))} "
            f"(it {_THUNDER_RULES}). Workaround: call the op outside torch.autocast, on operands cast to the "
            f"dtype you want"
        )


def _tensor_operands(b) -> list:
    return [p for p in tree_flatten((b.args, b.kwargs))[0] if isinstance(p, TensorProxy)]


def _traced_dtypes(b) -> list[torch.dtype]:
    """The dtypes of ``b``'s tensor outputs as the trace records them."""
    return [dtypes.to_torch_dtype(p.dtype) for p in tree_flatten(b.output)[0] if isinstance(p, TensorProxy)]


def _refuse_unless_exact(b, tensors, error, where: str) -> None:
    """Eager's dtype for ``b`` cannot be told: refused where an operand is floating (a cast could matter)."""
    if any(dtypes.is_float_dtype(p.dtype) for p in tensors):
        raise AutocastDtypeError(
            f"fusion_alias: {b.sym.id} (as Thunder traces the op) {where} is not supported: "
            f"fusion_alias cannot tell which dtype eager PyTorch gives it there ({type(error).__name__}: {error}), "
            f"and Thunder 0.2.6 {_THUNDER_RULES}. Workaround: call it outside torch.autocast, on operands cast "
            f"to the dtype you want"
        ) from None


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
