"""Ops eager has no kernel for at their operands' dtypes, asked of eager itself.

Note [ops eager has no kernel for, asked of eager]
--------------------------------------------------
Eager dispatches most ops to a kernel per dtype and refuses the dtypes it has none for::

    F.silu(torch.arange(3))          # "silu_cpu" not implemented for 'Long'
    F.gelu(mask); F.mish(c64)        # ... for 'Bool' / 'ComplexFloat'
    F.relu6(mask, inplace=True)      # Bool inputs not supported for hardtanh

Thunder decomposes these into prims that compute at any dtype. Plain ``thunder.jit`` runs them with
torch and raises as eager does; a fused region runs the decomposition and returned a value (session 30
sweep: 45 of 855 unary op/dtype pairs, all activation functions). ``dtype_rules`` lists a few such
ops by hand (Note [ops eager has no kernel for]); a list misses the next one. So each op as traced
whose tensor operands are not all float32 or float64 (those every op has kernels for) is run once by
eager, on small tensors of its operands' dtypes and device type (of their own shapes where those
are small, else each dimension cut to two elements), with its other arguments as traced: where
eager raises its "no kernel for this dtype" error, the program is refused with that error, by name. The verdict is kept per op, operand dtypes, stand-in shapes and
arguments, so each is asked once per process.

Not asked: ops that draw random numbers (a draw would move the generator), collectives and other
functions with effects beyond their tensors (``torch.distributed``, ``torch.cuda``: ``_NOT_ASKED``),
ops with no tensor operand or whose result is bigger than their largest operand (``repeat``,
``expand``: the small run must stay small), and arguments Thunder holds as number proxies. Any other error of the small run
(a shape the cut tensors do not have) says nothing and is ignored.
"""

from __future__ import annotations

import importlib
import math
import re

import torch
from thunder.core import devices
from thunder.core import dtypes as thunder_dtypes
from thunder.core.proxies import NumberProxy, Proxy, TensorProxy

from fusion_alias.random_draws import draws

_NO_KERNEL = re.compile(r"not implemented for '|inputs not supported for|with a bool tensor is not supported")
_F32, _F64, _F32_, _F64_ = thunder_dtypes.float32, thunder_dtypes.float64, thunder_dtypes.float32_, thunder_dtypes.float64_
_FLOATS = frozenset({_F32, _F64, _F32_, _F64_})
_CONTAINERS = (tuple, list)
_VERDICTS: dict = {}  # key -> eager's error message, or "" where eager runs or cannot be asked
_NOT_ASKED = ("torch.distributed", "torch.cuda", "torch.autograd", "torch.random", "torch.backends", "torch.utils",
              "torch.profiler", "torch.jit", "torch._", "torch.Tensor.record_stream", "torch.Tensor.backward")
_CALLABLES: dict = {}  # symbol id -> the torch functions it stands for


class _NotAsked(Exception):
    """An argument the small run cannot stand in for."""


def check_kernel(b) -> None:
    """Raise eager's error where eager has no kernel for the op ``b`` (a symbol of the program as traced)
    at its operands' dtypes (module Note)."""
    for a in b.args:  # (the usual case first, in a few identity tests: float32 tensors and numbers)
        if type(a) is TensorProxy:
            d = a._dtype  # (the dtype property's field)
            if not (d is _F32 or d is _F64 or d is _F32_ or d is _F64_):
                break
        elif type(a) in _CONTAINERS and not _floats_or_numbers(a):
            break
    else:
        return
    _check(b)


def _floats_or_numbers(items) -> bool:
    """Whether a list argument holds no tensor but float32 and float64 ones (a shape, ``cat``'s list)."""
    for x in items:
        t = type(x)
        if t is TensorProxy:
            d = x._dtype
            if not (d is _F32 or d is _F64 or d is _F32_ or d is _F64_):
                return False
        elif t in _CONTAINERS:
            return False
    return True


def _check(b) -> None:
    tensors = [a for a in b.args if isinstance(a, TensorProxy)]
    for a in b.args:
        if isinstance(a, (tuple, list)):
            tensors.extend(x for x in a if isinstance(x, TensorProxy))
    if not tensors or all(t._dtype in _FLOATS for t in tensors):  # (the dtype property's field)
        return
    largest = max(math.prod(t.shape) for t in tensors)
    outs = b.output if isinstance(b.output, (tuple, list)) else (b.output,)
    if any(isinstance(o, TensorProxy) and math.prod(o.shape) > largest for o in outs) or draws(b):
        return
    try:
        key = (b.sym.id, _key(b.args), _key(tuple(b.kwargs.items())))
    except (_NotAsked, TypeError):  # (an argument that is no key: not asked)
        return
    verdict = _VERDICTS.get(key)
    if verdict is None:
        verdict = _VERDICTS[key] = _ask_eager(b)
    if verdict:
        raise NotImplementedError(f"fusion_alias: {b.sym.name}: {verdict} (eager PyTorch rejects this too)")


def _key(x):
    if isinstance(x, TensorProxy):
        return ("tensor", x.dtype, _probe_shape(x), x.device.devicetype)
    if isinstance(x, (tuple, list)):
        return tuple(_key(y) for y in x)
    if isinstance(x, (NumberProxy, Proxy)):
        raise _NotAsked
    hash(x)
    return (type(x), x)


_SMALL = 1 << 12  # elements: a tensor this small is stood in for at its own shape


def _probe_shape(x: TensorProxy) -> tuple:
    """The shape of ``x``'s stand-in: its own where it is small (``F.glu`` halves a dimension that must be
    even), else each dimension cut to at most 2 elements."""
    shape = tuple(x.shape)
    return shape if math.prod(shape) <= _SMALL else tuple(min(d, 2) for d in shape)


def _torch_callables(sym_id) -> tuple:
    """The torch functions a symbol stands for: the one its id names (``"torch.nn.functional.silu"``,
    ``"torch.Tensor.add_"``), then those Thunder maps to it (``torch.celu``'s id names the function
    without ``inplace``; ``F.celu`` takes the arguments as traced)."""
    found = _CALLABLES.get(sym_id)
    if found is not None:
        return found
    named = []
    if isinstance(sym_id, str) and sym_id.startswith(_NOT_ASKED):
        found = _CALLABLES[sym_id] = ()  # (a collective, a stream, the generator: never run as a stand-in)
        return found
    if isinstance(sym_id, str) and sym_id.startswith("torch."):
        module, _, attr = sym_id.rpartition(".")
        owner, _, cls = module.rpartition(".")
        for get in (lambda: getattr(importlib.import_module(module), attr),
                    lambda: getattr(getattr(importlib.import_module(owner), cls), attr)):  # (a method: torch.Tensor.add_)
            try:
                named.append(get())
                break
            except (ImportError, AttributeError, ValueError):
                continue
    import thunder.torch as ltorch

    mapped = [fn for fn, sym in ltorch._torch_to_thunder_function_map.items() if getattr(sym, "id", None) == sym_id
              and not (getattr(fn, "__module__", None) or "").startswith(_NOT_ASKED)]
    found = _CALLABLES[sym_id] = tuple(dict.fromkeys(named + mapped))
    return found


def _stand_in(x):
    """``x`` with each tensor proxy replaced by a small tensor like it (``_probe_shape``), Thunder's dtypes and devices
    by torch's."""
    if isinstance(x, TensorProxy):
        device = x.device
        if device.devicetype is devices.DeviceType.CUDA and not torch.cuda.is_available():
            raise _NotAsked
        return torch.ones(_probe_shape(x), dtype=thunder_dtypes.to_torch_dtype(x.dtype),
                          device=devices.to_torch_device(device))
    if isinstance(x, (tuple, list)):
        return type(x)(_stand_in(y) for y in x)
    if isinstance(x, Proxy):
        raise _NotAsked
    if isinstance(x, thunder_dtypes.dtype):
        return thunder_dtypes.to_torch_dtype(x)
    if isinstance(x, devices.Device):
        return devices.to_torch_device(x)
    return x


def _ask_eager(b) -> str:
    """Eager's "no kernel" error for ``b``'s op on small operands, or "" (module Note)."""
    fns = _torch_callables(b.sym.id)
    if not fns:
        return ""
    try:
        args, kwargs = _stand_in(tuple(b.args)), {k: _stand_in(v) for k, v in b.kwargs.items()}
    except (_NotAsked, TypeError, ValueError):
        return ""
    device = next((a.device.type for a in args if isinstance(a, torch.Tensor)), "cpu")
    for fn in fns:
        try:
            with torch.no_grad(), torch.autocast(device, enabled=False):
                fn(*args, **kwargs)
        except TypeError:
            continue  # (this function does not take the arguments as traced: the next one)
        except (NotImplementedError, RuntimeError) as e:
            message = str(e).strip().splitlines()[0] if str(e).strip() else ""
            return message if _NO_KERNEL.search(message) else ""
        except Exception:  # noqa: BLE001 - the small run says nothing of this op's dtypes
            return ""
        return ""
    return ""
