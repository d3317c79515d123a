"""``a is b`` and ``id(a)`` on tensors of a traced program, answered as eager answers them where the
trace and the call tell.

Note [tensor identity in a trace]
---------------------------------
Thunder's interpreter runs the program's ``is`` (the ``IS_OP`` instruction) on its proxies, and a
proxy is a value, not eager's tensor object. Two ways it answered False where eager says True
(session 17 hand probe; plain ``thunder.jit`` too):

* an in-place op returns its own tensor: after ``y = x.add_(1)``, ``y is x``. The trace names the
  ``copy_``'s result ``t1``, a proxy of its own;
* the same tensor passed twice: ``f(x, x)`` with ``x is y`` in ``f``. The interpreter makes a proxy
  per argument (the computation merges them later), so ``x is y`` compared ``t_0`` with ``t_1``.

The first is a fact of the trace: an in-place method (its symbol's name ends in ``_``: ``add_``,
``copy_``, fusion_alias's ``sigmoid_``) returns its first argument, so each operand is followed back
through such results first, and two that reach the same proxy are one tensor. The second is a fact
of the call: an argument's proxy records where the interpreter found it (its provenance:
``args[0]``, ``kwargs['y']``, ``args[1]['k']``, the module's ``_parameters['w']``), so both are
looked up in the call's arguments (and the function or module called) and compared as eager compares
them. The compiled program then holds that answer, so the guard key says which of the call's
overlapping tensors are the very same object (guard.py, Note [what the guard key holds]): ``f(x,
x)`` and ``f(x, x.view(2))`` (one memory, one layout) get a program each. Globals and closure cells
are found too (through the function's ``__globals__`` and ``__closure__``), and every answer read from
a call's tensor is guarded (Note [identity answers are guarded]: the key above covers only tensors
the computation reads, and overlapping ones). Tensors eager returns as
themselves are followed too (Note [conversions that return their own tensor]).

``id(t)`` of a tensor follows the same two facts (the id of the call's tensor, or of the proxy an
in-place result leads back to), so ``id(x) == id(y)`` answers as ``x is y``. The handler replaces
Thunder's ``IS_OP`` handler and hands every other case to it; outside a call of
``fusion_alias.jit`` (``context.current().has_call`` False) it is Thunder's.
"""

from __future__ import annotations

import torch
import thunder.core.interpreter as interpreter
import thunder.core.prims as prims
from thunder.core import dtypes
from thunder.core.interpreter import PseudoInst
from thunder.core.proxies import TensorProxy
from thunder.core.trace import get_tracectx

from fusion_alias import context, out_arguments
from fusion_alias.object_shapes import CONTENTS, ScalarContents, shape_of
from fusion_alias.errors import AliasInputError


def _producers() -> dict:
    """name -> the symbol of the trace being recorded that made it."""
    producers = {}
    trace = get_tracectx()
    for bsym in trace.bound_symbols if trace is not None else ():
        out = bsym.output
        if isinstance(out, TensorProxy):
            producers[out.name] = bsym
    return producers


def _returns_its_first_argument(bsym) -> bool:
    """An in-place method, or a function given ``out=`` (out_arguments.py: its symbol's first argument is
    ``out``), or one that ends by writing its first argument (``F.relu(t, inplace=True)``): eager returns the
    tensor it wrote (Note [tensor identity in a trace])."""
    name = bsym.sym.name
    is_out = name.endswith("_out") and out_arguments._OUT_SYMBOLS.get(name[:-4]) is bsym.sym
    return ((is_out or (name.endswith("_") and not name.startswith("_")) or _ends_writing_its_first_argument(bsym))
            and bool(bsym.args) and isinstance(bsym.args[0], TensorProxy) and isinstance(bsym.output, TensorProxy))


# Note [a function that writes its first argument]
# ------------------------------------------------
# ``F.relu(t, inplace=True)`` (and ``hardtanh``, ``leaky_relu``, ``elu``, ``relu6``, ``silu``, ``threshold``,
# ``celu``, ``selu``, ``hardsigmoid``, ``hardswish``, ``mish``, ``rrelu`` with ``inplace=True``) returns ``t``
# itself in eager, but its symbol's name does not end in ``_``, so ``F.relu(t, inplace=True) is t`` answered
# False, silently (session 30 probe; plain ``thunder.jit`` too), and so did ``t.relu_() is t`` once ``relu_``
# was traced as ``relu(t, True)``. A symbol whose result is a ``copy_`` into its first argument, the last of
# its subsymbols, returns that argument, whatever its name.
def _ends_writing_its_first_argument(bsym) -> bool:
    out, args = bsym.output, bsym.args
    if not bsym.subsymbols or not args or not isinstance(args[0], TensorProxy) or not isinstance(out, TensorProxy):
        return False
    last = bsym.subsymbols[-1]
    for _ in range(8):  # (through composites that end in the write: ``ltorch._copy_``)
        if not isinstance(last.output, TensorProxy) or last.output.name != out.name:
            return False
        if last.sym.id is prims.PrimIDs.COPY_:
            return len(last.args) > 1 and getattr(last.args[1], "name", None) == args[0].name
        if not last.subsymbols:
            return False
        last = last.subsymbols[-1]
    return False


# Note [conversions that return their own tensor]
# ------------------------------------------------
# Eager returns some conversions as the very tensor they were called on, where nothing needs converting:
#
#     x = torch.randn(4)            # float32, on the CPU
#     x.conj() is x                 # True: a real tensor has no conjugate view
#     x.to(torch.float32) is x      # True (``type_as``, ``type``, ``cpu``, ``to(device)`` alike)
#     x.real is x, x.resolve_conj() is x, x.sum_to_size(4) is x, x.flatten(0, 0) is x
#     torch.atleast_1d(x) is x, x.to_dense() is x, torch.clamp(x, 0, 1, out=x) is x   # (an out= result: its out)
#
# Thunder traces each as a symbol with a new proxy, so ``x.conj() is x`` answered False and a program
# branching on it took eager's other branch (session 20 hand probe, a silent wrong value; plain
# ``thunder.jit`` too). Where the trace tells (dtypes, devices, shapes, ``copy=True`` absent) such a
# result is followed back to its operand, as an in-place result is. Where eager's answer depends on the
# call's layout or conjugate/negative bits (``x.contiguous()``, ``resolve_neg``, ``resolve_conj`` of a
# complex tensor) the identity test is refused: the guard keys neither for a tensor the program only
# compares.
_SAME_DTYPE_DEVICE = frozenset({"to", "type_as", "torch_type", "cpu", "float", "double", "half", "bfloat16",
                                "int", "long", "short", "bool", "byte", "char", "to_dense"})
_AT_LEAST = {"atleast_1d": 1, "atleast_2d": 2, "atleast_3d": 3}  # (of a tensor with as many dims: itself)
_REAL_ONLY = frozenset({"conj", "real", "resolve_conj"})
_BY_LAYOUT = frozenset({"contiguous", "resolve_neg", "resolve_conj"})


def _returns_itself(bsym, refuse: bool = True) -> bool:
    """A conversion eager returns as its operand, as far as the trace tells (Note [conversions that return
    their own tensor]); where eager's answer depends on what the trace does not hold, raises (``refuse``)
    or says False."""
    name, args, out = bsym.sym.name, bsym.args, bsym.output
    if not args or not isinstance(args[0], TensorProxy) or not isinstance(out, TensorProxy):
        return False
    a = args[0]
    if name in _REAL_ONLY and not dtypes.is_complex_dtype(a.dtype):
        return True
    if name in _BY_LAYOUT:
        if not refuse:
            return False
        raise AliasInputError(
            f"fusion_alias: an identity test (`is`, `id()`) of {name}() of a tensor is not supported: eager "
            f"returns the tensor itself or a new one by its layout or its conjugate/negative bits, which the "
            f"trace does not hold. Compare the tensors before the {name}() call")
    if name in _SAME_DTYPE_DEVICE:
        return (out.dtype == a.dtype and out.device == a.device and tuple(out.shape) == tuple(a.shape)
                and not bsym.kwargs.get("copy", False) and bsym.kwargs.get("memory_format") in (None, torch.preserve_format))
    if name == "sum_to_size":
        return tuple(out.shape) == tuple(a.shape)
    if name in _AT_LEAST:
        return a.ndim >= _AT_LEAST[name]
    if name == "flatten" and a.ndim >= 1 and len(args) >= 3 and all(isinstance(d, int) for d in args[1:3]):
        return args[1] % a.ndim == args[2] % a.ndim
    return False


def is_its_operand(bsym) -> bool:
    """Whether eager returns ``bsym``'s result as its first argument itself, as far as the trace tells
    (``_returns_itself`` without its refusal: False where eager's answer follows the layout or the
    conjugate/negative bits)."""
    return _returns_itself(bsym, refuse=False)


def _tensor_of(p: TensorProxy, producers: dict) -> TensorProxy:
    """``p`` followed back through in-place results and conversions that return their operand (Note
    [conversions that return their own tensor]) to the tensor eager returns."""
    for _ in range(len(producers) + 1):
        bsym = producers.get(p.name)
        if bsym is None or not (_returns_its_first_argument(bsym) or _returns_itself(bsym)):
            return p
        p = bsym.args[0]
    return p


def _stands_for(p: TensorProxy, producers: dict, ctx):
    """What ``p`` is in eager: the call's tensor it stands for, followed back through in-place results
    (Note [tensor identity in a trace]), or else the proxy it leads back to. A call's tensor found is
    recorded on ``ctx`` (Note [identity answers are guarded])."""
    p = _tensor_of(p, producers)
    found = _in_call(p, ctx)
    if isinstance(found, torch.Tensor):
        ctx.identity_records.append((getattr(p, "history", None), found))
        return found
    return p


# Note [identity answers are guarded]
# -----------------------------------
# An ``is`` (or ``id()``) answer is a Python bool the trace holds: the compiled program runs one side
# of the branch on every later call it is used for. The guard key relates only the tensors the
# *computation* reads, and Thunder's prologue hands the computation none that the program merely
# compares:
#
#     G = x
#     def f(a): return a * 2 if a is G else a * 3
#
# unpacks ``G`` in the prologue but passes only ``a`` on, so ``f(x)`` then ``f(y)`` (a new tensor,
# ``a is G`` now False) reused the program of ``f(x)`` and returned ``2 y`` (session 18 hand probe;
# also a module's parameter tied or untied between calls, ``self.w is self.v``; arguments are keyed
# whole, so ``f(x, x)``/``f(x, y)`` were right). So each compilation records every call tensor an
# identity answer was read from, by its provenance (``ctx.identity_records``), and the program is
# kept only for calls where the same provenances reach tensors that are the same objects in the
# same pattern (``identity_pattern``; ``api._GuardedPrologue`` checks it before anything runs).
# A ``.grad`` read as None from a call's tensor that requires no grad is such an answer too: the
# record is kept with these, and the pattern says which of the tensors requires no grad and has a
# ``.grad`` (trace_time_queries.py, Note [.grad of a tensor that requires no grad]).


def identity_pattern(records, ctx) -> tuple:
    """For each provenance of ``records`` (``(record, tensor)`` pairs), the index of the first one that
    reaches the same tensor object in the call of ``ctx`` (Note [identity answers are guarded])."""
    memo: dict = {}  # (Note [paths followed once per call])
    found = [_follow(record, ctx, FOLLOW_DEPTH, memo) for record, _ in records]
    return _pattern(found)


def recorded_pattern(records) -> tuple:
    """``identity_pattern`` of the tensors the compilation read the answers from."""
    return _pattern([t for _, t in records])


def _pattern(objs) -> tuple:
    first: dict[int, int] = {}
    out = []
    for i, o in enumerate(objs):
        if o is None:  # (outside_reads.py: a None read, kept apart from a number or a path not found)
            out.append("None")
        elif not isinstance(o, torch.Tensor):
            shape = shape_of(o)  # (outside_reads.py, Note [the shape of a container read from outside the arguments])
            out.append(-1 if shape is None else shape)
        else:
            j = first.setdefault(id(o), i)
            out.append((j, "has .grad") if not o.requires_grad and o.grad is not None else j)
    return tuple(out)


def same_tensor(a: TensorProxy, b: TensorProxy) -> bool:
    """Eager's ``a is b`` for two proxies of the trace being recorded, as far as the trace tells
    (Note [tensor identity in a trace])."""
    if a is b:
        return True
    producers, ctx = _producers(), context.current()
    a, b = _stands_for(a, producers, ctx), _stands_for(b, producers, ctx)
    return a is b or (isinstance(a, TensorProxy) and isinstance(b, TensorProxy) and a.name == b.name)


_NOT_FOUND = object()
FOLLOW_DEPTH = 32  # (attributes and subscripts followed from the call: a module's submodule's list's entry ...)


def _in_call(p: TensorProxy, ctx):
    """The tensor of the call that ``p`` stands for, when its provenance is a path into the call's
    arguments or the function or module called (items and attributes); else ``_NOT_FOUND``."""
    return _follow(getattr(p, "history", None), ctx, FOLLOW_DEPTH)


# Note [paths followed once per call]
# -----------------------------------
# A guarded program's records share their prefixes: the 17 records of an 8-block ``nn.Sequential`` (the
# modules' tables, a LayerNorm's ``normalized_shape``, a Linear's None bias, ...) are paths like
# ``fn._modules['3']._modules['fc'].bias``, 193 steps to follow at every call, 116 of them distinct. A call's
# pattern follows each step once (``memo``, keyed by the record, which the guard holds), and the loop reads
# a record's two inputs without a call per constant key: 190 -> ~100 us a call there (load ~1.5).
_CONST, _SUBSCR, _ATTR = PseudoInst.CONSTANT, PseudoInst.BINARY_SUBSCR, PseudoInst.LOAD_ATTR


def _follow(record, ctx, depth: int, memo: dict | None = None):
    if record is None or depth == 0:
        return _NOT_FOUND
    inst = record.inst
    if inst is _CONST:
        return record.value
    if memo is not None:
        found = memo.get(id(record), _UNSEEN)
        if found is not _UNSEEN:
            return found
    if inst is PseudoInst.INPUT_ARGS:
        found = ctx.args
    elif inst is PseudoInst.INPUT_KWARGS:
        found = ctx.kwargs
    elif inst is PseudoInst.INPUT_FN:
        found = ctx.fn if ctx.fn is not None else _NOT_FOUND
    elif (inst is _SUBSCR or inst is _ATTR) and len(record.inputs) == 2:
        of_record, key_record = record.inputs
        of = _follow(of_record, ctx, depth - 1, memo)
        key = key_record.value if key_record.inst is _CONST else _follow(key_record, ctx, depth - 1, memo)
        if of is _NOT_FOUND or key is _NOT_FOUND:
            found = _NOT_FOUND
        elif key is CONTENTS:  # (opaque_reads.py, Note [a container an opaque builtin reads])
            found = ScalarContents(of)
        else:
            try:
                found = of[key] if inst is _SUBSCR else getattr(of, key)
            except Exception:
                found = _NOT_FOUND
    else:
        found = _NOT_FOUND
    if memo is not None:
        memo[id(record)] = found
    return found


_UNSEEN = object()


_thunder_is_op = interpreter._default_opcode_handler_map["IS_OP"]


def _is_op(inst, /, stack, **kwargs):
    b, a = stack[-1], stack[-2]
    if isinstance(a, TensorProxy) and isinstance(b, TensorProxy) and context.current().has_call:
        try:
            same = same_tensor(a, b)
        except AliasInputError as e:  # (Note [conversions that return their own tensor]: raised as the program's)
            return interpreter.do_raise(e)
        stack.pop()
        stack.pop()
        stack.append(not same if inst.arg == 1 else same)
        return None
    return _thunder_is_op(inst, stack=stack, **kwargs)


def _id(obj, /):
    """``id(obj)``, of a tensor as eager's: the id of what it stands for (``_stands_for``), so that ids
    compare as ``is`` (``id(x.add_(1)) == id(x)``)."""
    if isinstance(obj, TensorProxy) and context.current().has_call:
        return id(_stands_for(obj, _producers(), context.current()))
    return id(obj)


def register(executor) -> None:
    """Answer ``IS_OP`` and ``id()`` on tensors as eager does, in calls of ``fusion_alias.jit``."""
    interpreter._default_opcode_handler_map["IS_OP"] = _is_op
    executor._lookasides[id] = _id
