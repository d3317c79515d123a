"""Reads of an object's dict or attributes that Thunder runs opaquely, respelled as the path they read, so that
Thunder's prologue checks what the program reads through them.

Note [a dict or an attribute read through an opaque call]
---------------------------------------------------------
Thunder 0.2.6's interpreter runs a builtin it has no lookaside for opaquely: ``vars(o)``, a class dict's
``mappingproxy.__getitem__`` (``type(o).__dict__["k"]``), ``object.__getattribute__(o, "k")``, ``C.mro()``. The
value returned has an ``OPAQUE`` provenance, which is no path from the call, so a number read through it is baked
into the trace and checked by nothing::

    class Cfg: k = 2.0
    def f(x, o): return x.mul_(vars(type(o))["k"])     # f(x, o); Cfg.k = 3.0; f(x, o)   eager: x * 3;  was: x * 2

(session 39 probe; plain ``thunder.jit`` too; ``o.__dict__["k"]`` and ``type(o).k`` were right: paths.) Each of
these reads what a path reads, so its result gets that path's provenance, where its operands are reached from the
call (Thunder's prologue then checks each number read, outside_reads.py records each class and object read):

- ``vars(X)``                                   ->  ``X.__dict__``
- ``P[k]``, ``P.get(k[, d])`` of a class's dict  ->  ``P[k]`` (``get`` only where ``k`` is in ``P``: otherwise the
  default is the program's own value, and the class's attribute names are guarded: object_shapes.py, Note [a
  class's attribute names])
- ``object.__getattribute__(o, k)``, ``type.__getattribute__(C, k)``  ->  ``o.k`` (where ``o``'s class does not
  define its own ``__getattribute__``/``__getattr__``: there ``o.k`` may answer otherwise)
- ``C.mro()``                                   ->  ``C.__mro__`` (where the metaclass keeps ``type.mro``; a tuple
  where ``mro()`` gives a list: entries are read by index alike)

Note [an attribute read through attrgetter]: ``operator.attrgetter("k")(o)`` (``"a.b"``: ``o.a.b``) reads what the
path ``o.k`` reads, as ``getattr`` does: that path, where the getter is reached from the call (Thunder records the
call as ``attrgetter.__call__(getter, o)``; a getter the program made is a new one at each call). One with several names returns a tuple that no path spells, and
is left as it was (session 40 probe: ``x * attrgetter("scale")(cfg)`` kept its first value, plain ``thunder.jit`` too).

Thunder records an opaque call's positional arguments in reverse order (its own unpacking of ``__getitem__``
reads them so); the operands below are read that way.
"""

from __future__ import annotations

import operator

from thunder.core.interpreter import ProvenanceRecord, PseudoInst

from fusion_alias import context, tensor_identity
from fusion_alias.object_shapes import CONTENTS, scalar_contents
from fusion_alias.type_reads import _called_from_the_users_code
from fusion_alias.type_reads import _reached_from_the_call as reached_from_the_call

_MAPPINGPROXY = type(type.__dict__)
_SUBSCRIPTS = {_MAPPINGPROXY.__getitem__, _MAPPINGPROXY.get}
_ATTRGETTER_CALL = operator.attrgetter.__call__
_NEW_GETTER = operator.attrgetter.__new__


def _const(value) -> ProvenanceRecord:
    return ProvenanceRecord(PseudoInst.CONSTANT, inputs=[], value=value)


def _function(record):
    """The function an opaque call called: its constant, or what its path reaches."""
    if record.inst is PseudoInst.CONSTANT:
        return record.value
    found = tensor_identity._follow(record, context.current(), tensor_identity.FOLLOW_DEPTH)
    return None if found is tensor_identity._NOT_FOUND else found


def _plain_getattr(obj) -> bool:
    """Whether ``obj.k`` is ``object.__getattribute__(obj, "k")`` (``type.__getattribute__`` for a class)."""
    cls = type(obj)
    if isinstance(obj, type):
        return cls.__getattribute__ is type.__getattribute__ and "__getattr__" not in vars(cls)
    return cls.__getattribute__ is object.__getattribute__ and not hasattr(cls, "__getattr__")


def _getter_names(record) -> tuple | None:
    """The names of the ``operator.attrgetter`` that ``record`` reaches from the call (its identity is guarded:
    object_shapes.BY_IDENTITY), or that the program made of constant names; None for any other."""
    if record.inst is PseudoInst.OPAQUE and len(record.inputs) == 3 and _function(record.inputs[0]) is _NEW_GETTER:
        operands = _operands(record.inputs[1])  # (attrgetter.__new__(attrgetter, *names))
        if (operands and len(operands) > 1 and _function(operands[0]) is operator.attrgetter
                and all(n.inst is PseudoInst.CONSTANT and type(n.value) is str for n in operands[1:])):
            return tuple(n.value for n in operands[1:])
        return None
    getter = tensor_identity._follow(record, context.current(), tensor_identity.FOLLOW_DEPTH)
    if type(getter) is operator.attrgetter and reached_from_the_call(record):
        return getter.__reduce__()[1]
    return None


def _operands(args) -> list | None:
    if args.inst is PseudoInst.CONSTANT and args.value == ():
        return []
    if args.inst is not PseudoInst.BUILD_TUPLE:
        return None
    return list(reversed(args.inputs))  # (module Note: recorded in reverse)


def _path_of(fn, fn_record, operands, value):
    """The provenance the read ``fn(*operands)`` returning ``value`` reads, or None (module Note)."""
    if fn is vars and len(operands) == 1:
        return ProvenanceRecord(PseudoInst.LOAD_ATTR, inputs=[operands[0], _const("__dict__")])
    if len(operands) >= 2 and operands[1].inst is PseudoInst.CONSTANT and isinstance(operands[1].value, str):
        key = operands[1].value
        if fn in _SUBSCRIPTS and len(operands) <= 3:
            mapping = tensor_identity._follow(operands[0], context.current(), tensor_identity.FOLLOW_DEPTH)
            if isinstance(mapping, _MAPPINGPROXY) and key in mapping and mapping[key] is value:
                return ProvenanceRecord(PseudoInst.BINARY_SUBSCR, inputs=[operands[0], operands[1]])
        elif fn in (object.__getattribute__, type.__getattribute__) and len(operands) == 2:
            obj = tensor_identity._follow(operands[0], context.current(), tensor_identity.FOLLOW_DEPTH)
            if obj is not tensor_identity._NOT_FOUND and _plain_getattr(obj) and getattr(obj, key, None) is value:
                return ProvenanceRecord(PseudoInst.LOAD_ATTR, inputs=[operands[0], operands[1]])
        return None
    if fn is _ATTRGETTER_CALL and len(operands) == 2:  # Note [an attribute read through attrgetter]
        names = _getter_names(operands[0])
        if names is not None and len(names) == 1:
            path = operands[1]
            for part in names[0].split("."):
                path = ProvenanceRecord(PseudoInst.LOAD_ATTR, inputs=[path, _const(part)])
            return path
        return None
    if (not operands and getattr(fn, "__name__", None) == "mro" and isinstance(getattr(fn, "__self__", None), type)
            and type(fn.__self__).mro is type.mro and fn_record.inst is PseudoInst.LOAD_ATTR):
        return ProvenanceRecord(PseudoInst.LOAD_ATTR, inputs=[fn_record.inputs[0], _const("__mro__")])
    return None


# Note [a container an opaque builtin reads]
# ------------------------------------------
# Other builtins read a whole container opaquely and return what no path spells: ``sum(SCALES)``, ``max(L)``,
# ``sorted(L)[0]``, ``operator.itemgetter(0)(L)``. Thunder's prologue checks
# nothing of the entries (the container itself is recorded by its length or keys: outside_reads.py)::
#
#     SCALES = [2.0]
#     def f(x): return x.mul_(sum(SCALES))      # f(x); SCALES[0] = 3.0; f(x)   eager: x * 3;  was: x * 2
#
# (session 39 probe; plain ``thunder.jit`` too). So an opaque call made by the user's code records each operand
# reached from the call that holds only Python numbers, strings, bools and Nones (a list, tuple, set, dict,
# mappingproxy or dict view: object_shapes.scalar_contents, up to 10,000 entries) by those contents, compared by
# value at each call (the path followed to ``object_shapes.CONTENTS``); the program runs only for calls where they
# are the same, another call compiles its own. Coarser than the read (any entry changed compiles again), never
# finer. A container holding a tensor or an object is not recorded this way (its tensors are the prologue's).
def _record_contents(operands, record, class_dicts_only: bool = False) -> None:
    ctx = context.current()
    for op in operands:
        if op.inst is PseudoInst.CONSTANT or not reached_from_the_call(op):
            continue
        obj = tensor_identity._follow(op, ctx, tensor_identity.FOLLOW_DEPTH)
        if class_dicts_only and type(obj) is not _MAPPINGPROXY:
            continue
        contents = None if obj is tensor_identity._NOT_FOUND else scalar_contents(obj)
        if contents is not None:
            record(ProvenanceRecord(PseudoInst.BINARY_SUBSCR, inputs=[op, _const(CONTENTS)]), ("contents", contents))


# Note [a class's dict the interpreter copies]
# --------------------------------------------
# ``dict(vars(Cfg))`` and ``{**vars(Cfg)}`` copy a class's dict in Thunder's own code (its ``dict`` lookaside, the
# ``update`` of ``DICT_MERGE``/``DICT_UPDATE``), which reads the mappingproxy opaquely, key by key: the keys come
# from an iterator, so no read is a path, and the copy's values had none. A number read from the copy was baked into
# the trace and checked by nothing::
#
#     class Cfg: k = 2.0
#     def f(x): return x * dict(vars(Cfg))["k"]     # f(x); Cfg.k = 3.0; f(x)   eager: x * 3;  was: x * 2
#
# (session 41 probe, ``{**vars(Cfg)}`` alike; plain ``thunder.jit`` too.) So an opaque read Thunder's code makes of
# a class's dict reached from the call records that dict's contents as the user's own opaque calls do (Note [a
# container an opaque builtin reads]; Note [a class's dict read whole], object_shapes.py): any class attribute
# changed compiles again. Only class dicts: the interpreter reads other containers opaquely for its own bookkeeping
# (a module program reads no class dict this way; probed on ``nn.Sequential(Linear, ReLU, LayerNorm)``).


def respell_opaque_read(value, record) -> None:
    """Give ``value``, returned by an opaque call that reads a dict or an attribute of what the call reached, the
    provenance of the path it reads (module Note); else, for a call the user's code made, record the scalar contents
    of the containers it read by ``record(path, answer)`` (Note [a container an opaque builtin reads])."""
    pr = value.provenance
    if pr is None or pr.inst is not PseudoInst.OPAQUE or len(pr.inputs) != 3:
        return
    fn_record, args, kwargs = pr.inputs
    if kwargs.inst is not PseudoInst.CONSTANT or kwargs.value:
        return
    operands = _operands(args)
    if operands is None:
        return
    fn = _function(fn_record)  # (None: a function the program made, ``operator.itemgetter(0)`` inline)
    path = None if fn is None else _path_of(fn, fn_record, operands, value.value)
    if path is not None and reached_from_the_call(path):
        value.provenance = path
    elif _called_from_the_users_code():
        _record_contents(operands, record)
    elif getattr(fn, "__objclass__", None) is _MAPPINGPROXY:  # Note [a class's dict the interpreter copies]
        _record_contents(operands, record, class_dicts_only=True)
