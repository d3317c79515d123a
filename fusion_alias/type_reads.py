"""A class the program reaches through ``type(o)``, respelled as ``o.__class__`` so that Thunder's prologue checks
what the program reads of it.

Note [a class reached through type()]
-------------------------------------
Thunder 0.2.6's interpreter runs ``type(o)`` opaquely (its ``_type_lookaside``): the class it returns has an
``OPAQUE`` provenance, which is no path from the call, so what the program reads of it (``type(o).k``,
``type(self).SCALE`` in a module's ``forward``, ``getattr(type(o), "k")``, ``vars(type(o))["k"]``) is baked into the
trace and checked by nothing. ``o.__class__.k`` reads the same number through a path, which the prologue checks::

    class Cfg: k = 2.0
    def f(x, o): return x.mul_(type(o).k)      # f(x, o); Cfg.k = 3.0; f(x, o)   eager: x * 3;  was: x * 2

(session 38 probe; plain ``thunder.jit`` too.) So the class of ``type(o)``, where ``o`` is reached by a path from
the call and the class is the user's (mutable_defaults.user_class: not torch's, Thunder's, numpy's or Python's own,
whose attributes a program does not set between calls), gets the provenance ``o.__class__``: Thunder's prologue
then checks each number read of it, and outside_reads.py records the class itself (a call with an object of
another class compiles anew: object_shapes.py, Note [an object's class]).
"""

from __future__ import annotations

import os

import torch
from thunder.core import interpreter, jit_ext
from thunder.core.interpreter import ProvenanceRecord, PseudoInst, WrappedValue, unwrap, wrap, wrap_const
from thunder.core.proxies import Proxy, TensorProxy

from fusion_alias import context
from fusion_alias.mutable_defaults import user_class


def _is_type_call(fn_record) -> bool:
    fn = fn_record.value if fn_record.inst is PseudoInst.CONSTANT else None
    return getattr(fn, "__name__", None) == "_type_lookaside" and getattr(fn, "__module__", None) == (
        "thunder.core.interpreter")


def _reached_from_the_call(record) -> bool:
    """Whether ``record`` is the call's function or arguments or a path from them (Thunder's
    ``should_register_for_prologue`` below its top level, where a bare argument or the module called counts)."""
    try:
        return jit_ext.should_register_for_prologue(record, _toplevel=False)
    except Exception:
        return False


def _class_of(obj_record) -> ProvenanceRecord:
    return ProvenanceRecord(PseudoInst.LOAD_ATTR, inputs=[obj_record, ProvenanceRecord(
        PseudoInst.CONSTANT, inputs=[], value="__class__")])


def respell_type(value, record) -> None:
    """Give ``value``, the class ``type(o)`` returned, the provenance ``o.__class__`` where ``o`` is reached from
    the call and the class is the user's; another class (torch's ``nn.ReLU``) is only recorded by that path,
    ``record(path, cls)`` (module Note; Note [the class an isinstance asks about])."""
    pr = value.provenance
    if pr is None or pr.inst is not PseudoInst.OPAQUE or len(pr.inputs) != 3:
        return
    fn, args, kwargs = pr.inputs
    if not _is_type_call(fn) or args.inst is not PseudoInst.BUILD_TUPLE or len(args.inputs) != 1:
        return
    if kwargs.inst is not PseudoInst.CONSTANT or kwargs.value:
        return
    cls = value.value
    if not isinstance(cls, type) or not _reached_from_the_call(args.inputs[0]):
        return
    if user_class(cls):
        value.provenance = _class_of(args.inputs[0])
    else:
        record(_class_of(args.inputs[0]), cls)


# Note [the class an isinstance asks about]
# -----------------------------------------
# ``isinstance(m, nn.ReLU)`` of a module given as an argument or held in a global dict, and ``type(m) is nn.ReLU``,
# are answered while tracing too; a module's guard holds no class (module_tables.py guards the modules the program
# calls, by the path it reached them), so ``f(x, nn.Tanh())`` after ``f(x, nn.ReLU())`` ran the ReLU branch again,
# silently (session 38 probe; plain ``thunder.jit`` too). So ``isinstance(o, ...)`` and ``type(o)`` of an object
# reached from the call (not a tensor: Thunder's proxies answer for themselves) record ``o.__class__`` as
# outside_reads.py records any class it reads: the program runs only for calls where that path reaches the same
# class. (A plain object's shape holds its class already: object_shapes.py, Note [an object's class].)
_thunder_isinstance = jit_ext._general_jit_lookaside_map[isinstance]  # (answers for Thunder's proxies)


def isinstance_lookaside(record):
    """Thunder's ``isinstance`` lookaside, recording the class of its first argument by ``record(path, cls)``
    where it is reached from the call (Note [the class an isinstance asks about])."""

    def lookaside(obj, cls, /):
        if isinstance(obj, WrappedValue) and context.current().has_call:
            o = obj.value
            # (asked by the user's code only: Thunder's own interpreted code asks ``isinstance`` of the arguments
            # it unpacks, ``xs`` of ``xs[0]``, and every program with a list argument paid a guarded prologue)
            if (not isinstance(o, (torch.Tensor, Proxy)) and _reached_from_the_call(obj.provenance)
                    and _called_from_the_users_code()):
                record(_class_of(obj.provenance), type(o))
        return _thunder_isinstance(obj, cls)

    return lookaside



# Note [the type of a tensor]
# ---------------------------
# Thunder 0.2.6's ``type`` lookaside answers ``type(x)`` of a tensor with the class of its proxy: in the program,
# ``type(x) is torch.Tensor`` was False and ``type(x).__name__`` was ``"TensorProxy"``, so the other branch ran,
# silently (session 38 probe; plain ``thunder.jit`` too), where its ``isinstance`` answers for the tensor the proxy
# stands for. So ``type(x)`` of a tensor proxy, called from the user's code, answers that tensor's class
# (``torch.Tensor``, ``nn.Parameter`` for a parameter), as Thunder's ``isinstance`` does. Called from Thunder's or
# torch's code it answers the proxy's class as before: Thunder's interpreter finds a tensor's operator methods with
# ``type(a).__mul__`` (its ``_binary_op``), which must be the proxy's. ``x.__class__`` and ``getattr(x, "__class__")``
# read the proxy's class the same way (an attribute read: Thunder's ``getattr`` lookaside), and answer the same
# (session 39 probe: ``x.__class__ is torch.Tensor`` was False, ``w.__class__.__name__`` was ``"TensorProxy"``).
_thunder_type = interpreter._default_lookaside_map[type]
_LIBRARY_FILES = (os.sep + "thunder" + os.sep, os.sep + "torch" + os.sep)


def _called_from_the_users_code() -> bool:
    frame = interpreter.get_interpreterruntimectx().peek_frame_stack()
    return frame is not None and not any(part in frame.code.co_filename for part in _LIBRARY_FILES)


def type_lookaside(*args, **kwargs):
    """Thunder's ``type`` lookaside, answering a tensor proxy's tensor class in the user's code (Note [the type of a
    tensor])."""
    if (len(args) == 1 and not kwargs and isinstance(args[0], WrappedValue) and isinstance(args[0].value, TensorProxy)
            and context.current().has_call and _called_from_the_users_code()):
        x = args[0]
        cls = getattr(x, "python_typ", None)
        cls = cls if isinstance(cls, type) and issubclass(cls, torch.Tensor) else torch.Tensor
        return wrap(cls, provenance=ProvenanceRecord(PseudoInst.LOOKASIDE, inputs=[wrap_const(type).provenance,
                                                                                      x.provenance]))
    return _thunder_type(*args, **kwargs)


_thunder_getattr = jit_ext._general_jit_lookaside_map[getattr]


def getattr_lookaside(obj, name, *default):
    """Thunder's ``getattr`` lookaside, answering ``x.__class__`` of a tensor proxy as ``type(x)`` in the user's code
    (Note [the type of a tensor])."""
    if (isinstance(obj, WrappedValue) and isinstance(obj.value, TensorProxy) and unwrap(name) == "__class__"
            and context.current().has_call and _called_from_the_users_code()):
        return type_lookaside(obj)
    return _thunder_getattr(obj, name, *default)
