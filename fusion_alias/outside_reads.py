"""What the program reads of Python objects outside its arguments, guarded like an identity answer:
a None, the shape of a list, a dict or a plain object (its length, its keys, its attribute names), and
a function, a class, a dtype or an enum member itself.

Note [a None read from a global, a closure or an attribute]
-----------------------------------------------------------
Thunder's interpreter decides ``if G is None:`` (or ``if self.extra is not None``) while tracing, and
Thunder 0.2.6's prologue checks the numbers, strings and tensors it read from the call's objects, but
not a None: it proxies none, and the read is only a sharp edge (``jit_ext._general_jit_wrap_callback``).
So a program compiled while a module's optional tensor was None kept running without it once the user
set it::

    class M(nn.Module):
        def forward(self, x):
            if self.extra is None: return x * 1     # m(x); m.extra = torch.full((3,), 7.); m(x)
            return x + self.extra                   # eager: x + 7;  was: x * 1 (plain thunder.jit too)

(session 32 probe; globals, closure cells and attributes of argument objects alike.)

Note [the shape of a container read from outside the arguments]
---------------------------------------------------------------
The same holds for what the program asks of a list, a dict or an object it reaches that way: ``"m" in
STATE``, ``len(self.past)``, ``if LST:``, ``STATE.get("m")``, ``hasattr(H, "w")``, ``getattr(H, "w",
None)`` are answered while tracing and checked by nothing; the lazily initialised state of an optimizer
(``if p not in self.state: self.state[p] = torch.zeros_like(p)``) or a cache that fills up kept the
answer of the first call (session 32 probe, plain ``thunder.jit`` too).

And for objects the prologue does not check that the program branches on or calls: an enum member
(``if MODE is Mode.A``), a function (``ACT = torch.relu``, a module's ``self.act = F.gelu``, a helper the
user redefines), a class, a dtype (``x.to(DT)``).

So while ``fusion_alias.jit`` compiles, each such value the interpreter reads through a path of
attributes and subscripts from the function or module called, or from an argument object, is recorded
with the identity answers (tensor_identity.py, Note [identity answers are guarded]): a None as None,
a list or tuple by its length, a dict by its keys, a plain object by its attribute names, a function,
class, dtype or enum member as itself, each as it was when read (object_shapes.py, ``Shape``). The
program is kept only for calls where the same paths read the same (``tensor_identity._pattern``);
another call compiles its own program. This is coarser than the question asked (any key added to a
dict the program reads compiles again), never finer. Not recorded: what the arguments' guard key holds
already (subscripts of plain tuples, lists and dicts of the arguments: guard.py, Note [an argument that
is None]); Python's own tables (``__dict__``, ``__globals__``, a closure, defaults) and a module's
parameters, buffers and submodules, whose tensors Thunder's prologue checks itself; torch's bookkeeping
(every module's ``_compiled_call_impl``, read at each module call: ``_is_table``; its hook dicts,
submodules and attribute count are guarded: module_tables.py, Note [hooks added or removed between
calls]); an
attribute of a Python module (``torch.relu``, ``zip``); a path the guard could not follow again; and a
path already recorded. Each recorded path costs about a microsecond a call.
"""

from __future__ import annotations

import types
from collections.abc import Iterator

import torch
from thunder.core import jit_ext
from thunder.core.interpreter import INTERPRETER_CALLBACKS, PseudoInst

from fusion_alias import context, dict_unpacking, module_tables, tensor_identity
from fusion_alias.errors import TracingRefusal
from fusion_alias.object_shapes import BY_IDENTITY, NOT_PLAIN, Shape, is_opaque_value, shape_of
from fusion_alias.opaque_reads import respell_opaque_read
from fusion_alias.super_properties import make_getattr_lookaside
from fusion_alias.super_reads import is_super_read, respell_super_read
from fusion_alias.trace_time_queries import _covered_by_arguments
from fusion_alias.type_reads import getattr_lookaside, isinstance_lookaside, respell_type, type_lookaside

_thunder_wrap_callback = jit_ext.general_jit_callbacks[INTERPRETER_CALLBACKS.WRAP_CALLBACK]

# attributes whose values are Python's or torch's own tables (Note [the shape of a container ...])
_TABLES = frozenset({"__dict__", "__globals__", "__closure__", "__defaults__", "__kwdefaults__", "__builtins__",
                     "_parameters", "_buffers", "_modules", "__self__", "__code__"})


def _path(record, depth: int = 16):
    """A hashable spelling of a provenance path (to record each path once); None past ``depth``."""
    if record is None or depth == 0:
        return None
    if record.inst is PseudoInst.CONSTANT:
        value = record.value
        return ("const", value if isinstance(value, (str, int)) else id(value))
    return (record.inst, tuple(_path(i, depth - 1) for i in record.inputs))


# what every ``nn.Module`` holds for torch's own bookkeeping (hooks, ``_compiled_call_impl``, ...): torch's state,
# not the program's, and read by every module call (recording them cost 27 us a call per module)
_MODULE_BOOKKEEPING = frozenset(vars(torch.nn.Module())) | frozenset(
    name for name, value in vars(torch.nn.Module).items() if not callable(value))  # (``_compiled_call_impl``)


def _is_table(record, ctx) -> bool:
    """Whether ``record`` reads one of Python's or torch's own tables, or torch's bookkeeping (a module's hooks,
    the hooks every module shares in ``torch.nn.modules.module``'s globals): not the program's state."""
    if len(record.inputs) != 2 or record.inputs[1].inst is not PseudoInst.CONSTANT:
        return False
    name = record.inputs[1].value
    if record.inst is PseudoInst.LOAD_ATTR:
        if name in _TABLES:
            return True
        if name in _MODULE_BOOKKEEPING:
            module = tensor_identity._follow(record.inputs[0], ctx, tensor_identity.FOLLOW_DEPTH)
            if not isinstance(module, torch.nn.Module):
                return False
            if name in module_tables.MODULE_TABLES and module_tables.note(module, record.inputs[0], ctx):
                _record_module(record.inputs[0], module, ctx)  # (module_tables.py, Note [a submodule replaced ...])
            return True
        return False
    if record.inst is PseudoInst.BINARY_SUBSCR and isinstance(name, str):
        if name in _TABLES:
            return True  # (``fn.__globals__["__builtins__"]``: the builtins' dict, read by every call of a builtin)
        of = tensor_identity._follow(record.inputs[0], ctx, tensor_identity.FOLLOW_DEPTH)
        return isinstance(of, dict) and str(of.get("__name__", "")).startswith(("torch.", "thunder."))  # (a module's globals)
    return False


def _through_builtins(record) -> bool:
    """Whether ``record`` reaches its object through ``__builtins__`` (a function's builtins: the module, as in
    ``__main__``, or its dict, with ``__dict__`` between)."""
    for _ in range(tensor_identity.FOLLOW_DEPTH):
        if record is None or len(record.inputs) != 2:
            return False
        key = record.inputs[1]
        if key.inst is PseudoInst.CONSTANT and key.value == "__builtins__":
            return True
        record = record.inputs[0]
    return False


def _from_the_call(record) -> bool:
    """Whether ``record`` is a path of attributes and subscripts from what the call was given (Thunder's
    ``should_register_for_prologue``, which fails on some constants it is never asked about itself: a
    ``functools.partial`` has no ``__name__``)."""
    try:
        return jit_ext.should_register_for_prologue(record)
    except Exception:
        return False


# Note [the methods and the function called]
# -------------------------------------------
# ``o.go(x)`` reads ``o.go.__func__`` (Thunder's interpreter binds the method itself): with ``C.go`` replaced
# on the class, the path reaches another function, and ``m.act`` of a module's class likewise. So a
# ``__func__`` read is recorded like any function, except a method torch or Thunder define (every module call
# reads ``m.__call__.__func__``, ``m._call_impl.__func__`` and, for torch's modules, ``forward``: torch's code,
# not the program's, and about a microsecond a call each), and the ``forward`` of a module the program called,
# which its module tables guard with the module's class (module_tables.py, Note [forward replaced on the
# class]: ``Net.forward = f``, torch's ``nn.Linear.forward`` too). The function
# called itself (``fusion_alias.jit(f)``) is reached by no attribute path: the jitted callable checks its code
# and defaults at each call (``object_shapes.function_parts``; api.py), outside the prologue, which a program
# that reads only its arguments does not guard (guarding it cost 10-15% of a call at 256 inputs).
_LIBRARIES = ("torch.", "thunder.")


def _guarded_method(record, obj, ctx) -> bool:
    """Whether ``record`` reads ``__func__`` of a method torch or Thunder define, or of the ``forward`` of a module
    the program called, which its module tables guard (module_tables.py, Note [forward replaced on the class])
    (Note [the methods and the function called])."""
    if not (record.inst is PseudoInst.LOAD_ATTR and len(record.inputs) == 2
            and record.inputs[1].inst is PseudoInst.CONSTANT and record.inputs[1].value == "__func__"):
        return False
    if str(getattr(obj, "__module__", "")).startswith(_LIBRARIES):
        return True
    method = record.inputs[0]
    if not (method.inst is PseudoInst.LOAD_ATTR and len(method.inputs) == 2 and method.inputs[1].inst is
            PseudoInst.CONSTANT and method.inputs[1].value == "forward" and ctx.module_tables is not None):
        return False
    module = tensor_identity._follow(method.inputs[0], ctx, tensor_identity.FOLLOW_DEPTH)
    return (isinstance(module, torch.nn.Module) and id(module) in ctx.module_tables.modules
            and "forward" not in vars(module))


# Note [an iterator that outlives the call]
# -----------------------------------------
# An iterator the program reaches from outside (a global generator, ``itertools.count()``, ``iter(LIST)``
# kept in a global or an attribute, an iterator given as an argument) is advanced while tracing: Thunder's
# interpreter runs ``next(IT)`` (or a ``for`` over it) once, the trace keeps the value, and every later call
# returned it again, silently (session 36 probe; plain ``thunder.jit`` too)::
#
#     COUNTER = itertools.count()
#     def f(x): return x.add_(next(COUNTER))      # eager: + 0, + 1, + 2, ...;  was: + 0 at every call
#
# Nothing outside can be guarded into being advanced, so such an iterator is refused as it is read, with what
# to do instead. An iterator the function makes itself (``iter(LIST)``, ``zip(a, b)``) is a new one at each
# call, as in eager: it is not read from outside, and runs.
def _refuse_iterator(obj) -> None:
    raise TracingRefusal(
        f"fusion_alias: the function reads an iterator that outlives the call (a {type(obj).__name__} from a "
        "global, a closure, an attribute or an argument): not supported. Thunder 0.2.6 advances it once, while "
        "tracing, and every later call would reuse the values of that first call (Note [an iterator that "
        "outlives the call], outside_reads.py). Draw the values outside and pass them as arguments, or pass the "
        "container and iterate it inside."
    )


def _wrap_callback(value):
    if isinstance(value.value, type) and context.current().has_call:  # (type_reads.py, Note [a class reached
        respell_type(value, _record_class)  # through type()])
    elif is_super_read(value.provenance) and context.current().has_call:
        respell_super_read(value, _record_class, _record_contents)  # (super_reads.py, Note [a number read through super()])
    elif value.provenance.inst is PseudoInst.OPAQUE and context.current().has_call:
        respell_opaque_read(value, _record_contents)  # (opaque_reads.py, Note [a dict or an attribute read through an
        # opaque call], Note [a container an opaque builtin reads])
    result = _thunder_wrap_callback(value)  # (first: it respells a module's ``__dict__[k]`` as its attribute)
    obj = value.value
    if isinstance(obj, Iterator):
        ctx = context.current()
        if ctx.has_call and _from_the_call(value.provenance) and not _is_table(value.provenance, ctx):
            _refuse_iterator(obj)
    if (obj is None or type(obj) in (list, tuple, dict) or isinstance(obj, BY_IDENTITY)
            or (hasattr(obj, "__dict__") and not isinstance(obj, NOT_PLAIN)) or is_opaque_value(obj)):
        ctx = context.current()
        if ctx.has_call and _from_the_call(value.provenance):
            _record(value.provenance, obj, ctx)
    return result


def _plain_object(obj) -> bool:
    """Note [an argument object's attribute names]: the arguments' guard key covers the plain tuples, lists
    and dicts of the arguments, not the attributes of an object among them, and Thunder's prologue checks the
    attributes the program read, not one it found missing. ``o.count = getattr(o, "count", 0) + 1`` of an
    argument ``o`` compiled ``o.count = 1`` into the epilogue at the first call and kept setting 1, where eager
    counts (session 33 probe; plain ``thunder.jit`` too): an argument object's attribute names are recorded as
    any other object's."""
    return type(obj) not in (list, tuple, dict) and hasattr(obj, "__dict__") and not isinstance(obj, NOT_PLAIN)


def _record(record, obj, ctx) -> None:
    if _is_table(record, ctx) or (_covered_by_arguments(record, ctx) and not _plain_object(obj)):
        return
    if _guarded_method(record, obj, ctx):
        return
    answer = None if obj is None else shape_of(obj)
    if answer is None and obj is not None:
        return
    path = _path(record)
    if path is None or path in ctx.outside_paths:
        return
    if tensor_identity._follow(record, ctx, tensor_identity.FOLLOW_DEPTH) is not obj:
        return  # (a path the guard could not follow at the next call: it would compile again at each)
    if (isinstance(obj, BY_IDENTITY) or is_opaque_value(obj)) and (_through_builtins(record) or isinstance(
            tensor_identity._follow(record.inputs[0], ctx, tensor_identity.FOLLOW_DEPTH), types.ModuleType)):
        return  # (``torch.relu``, ``torch.strided``, ``zip``, ``NotImplemented``: a Python module's, not the program's)
    ctx.outside_paths.add(path)
    ctx.identity_records.append((record, None if obj is None else Shape(answer)))


def _record_module(record, module, ctx) -> None:
    """Guard ``module``, called by the program, by the path it was reached by (module_tables.py, Note [a
    submodule replaced between calls])."""
    path = _path(record)
    if path is None or path in ctx.outside_paths or tensor_identity._follow(
            record, ctx, tensor_identity.FOLLOW_DEPTH) is not module:
        return
    ctx.outside_paths.add(path)
    ctx.identity_records.append((record, Shape(shape_of(module))))


def _record_contents(record, answer) -> None:
    """Record the scalar contents ``answer`` of a container an opaque builtin read, by ``record`` (its path to
    ``object_shapes.CONTENTS``: opaque_reads.py, Note [a container an opaque builtin reads])."""
    ctx = context.current()
    path = _path(record)
    if path is not None and path not in ctx.outside_paths:
        ctx.outside_paths.add(path)
        ctx.identity_records.append((record, Shape(answer)))


def _record_class(record, cls) -> None:
    """Record class ``cls`` read by path ``record`` (type_reads.py, Note [the class an isinstance asks about])."""
    _record(record, cls, context.current())


def register(executor) -> None:
    """Record what calls of ``fusion_alias.jit`` read of objects outside their arguments (Note [a None read
    from a global, a closure or an attribute], Note [the shape of a container read from outside the
    arguments])."""
    jit_ext.general_jit_callbacks[INTERPRETER_CALLBACKS.WRAP_CALLBACK] = _wrap_callback
    dict_unpacking.register()  # ``{**D}`` keeps its values' paths (Note [a dict unpacked into a new one])
    jit_ext._general_jit_lookaside_map[isinstance] = isinstance_lookaside(_record_class)
    jit_ext._general_jit_lookaside_map[type] = type_lookaside  # (type_reads.py, Note [the type of a tensor])
    # (``x.__class__``: the same Note; a property through ``super()``: super_properties.py, its Note)
    jit_ext._general_jit_lookaside_map[getattr] = make_getattr_lookaside(getattr_lookaside, _record_class)
