"""A property read through ``super()``, its getter interpreted as Python runs it, so that what it reads is tracked.

Note [a property read through super()]
--------------------------------------
Thunder 0.2.6's interpreter answers an attribute of a ``super`` object with the builtin ``getattr``
(``_object_getattribute_lookaside``): a property found that way runs its getter natively, and what the getter reads
(``self._scale``, ``Base.k``) is baked into the trace and checked by nothing::

    class Base:
        @property
        def scale(self): return self._scale
    class Sub(Base):
        @property
        def scale(self): return 1.0
        def get(self): return super().scale
    def f(x): return x * OBJ.get()          # f(x); OBJ._scale = 3.0; f(x)   eager: x * 3;  was: the first number

(session 41 probe; in a module's method too; plain ``thunder.jit`` too.) So while ``fusion_alias.jit`` traces, an
attribute of a ``super(C, o)`` object that is a ``property`` with a Python getter, found in the first class after
``C`` in ``o``'s MRO whose own dict holds the name, is the getter interpreted with ``o`` (wrapped with the
provenance ``super()`` was made from): its reads are paths, checked as any other read. The property itself is
recorded by its owner's dict entry, by identity (a property replaced compiles again); a property of torch's
classes is a constant, as torch's methods are (super_reads.py, Note [a number a module reads through super()]).
Other descriptors through ``super()`` stay as they were.
"""

from __future__ import annotations

import types

from thunder.core import interpreter
from thunder.core.interpreter import ProvenanceRecord, PseudoInst, WrappedValue, unwrap, wrap

from fusion_alias import context
from fusion_alias.mutable_defaults import user_class
from fusion_alias.opaque_reads import _const
from fusion_alias.type_reads import _reached_from_the_call as reached_from_the_call


def _found(sup: super, name: str):
    """``(index in the MRO, the entry)`` that ``super`` object ``sup`` finds for ``name``, or None."""
    this, owner = sup.__thisclass__, sup.__self_class__
    mro = getattr(owner, "__mro__", ())
    if this not in mro:
        return None
    for j in range(mro.index(this) + 1, len(mro)):
        entries = vars(mro[j])
        if name in entries:
            return j, entries[name]
    return None


def make_getattr_lookaside(fallback, record_class):
    """A ``getattr`` lookaside answering Note [a property read through super()], ``fallback`` for everything else;
    ``record_class(path, obj)`` records the property by its owner's dict entry."""

    def getattr_lookaside(obj, name, *default):
        if isinstance(obj, WrappedValue) and type(obj.value) is super and context.current().has_call:
            result = _property_value(obj, unwrap(name), record_class)
            if result is not None:
                return result
        return fallback(obj, name, *default)

    return getattr_lookaside


def _property_value(obj: WrappedValue, name, record_class):
    sup = obj.value
    pr = obj.provenance
    if (not isinstance(name, str) or sup.__self__ is None or pr is None or pr.inst is not PseudoInst.SUPER
            or len(pr.inputs) != 2):
        return None
    found = _found(sup, name)
    if found is None:
        return None
    j, entry = found
    if type(entry) is not property or type(entry.fget) is not types.FunctionType:
        return None
    owner = sup.__self_class__
    if not user_class(owner.__mro__[j]):
        return None  # (torch's property: a constant, module Note)
    obj_record = pr.inputs[1]
    if reached_from_the_call(obj_record):
        class_record = obj_record if isinstance(sup.__self__, type) else ProvenanceRecord(
            PseudoInst.LOAD_ATTR, inputs=[obj_record, _const("__class__")])
        mro_entry = ProvenanceRecord(PseudoInst.BINARY_SUBSCR, inputs=[
            ProvenanceRecord(PseudoInst.LOAD_ATTR, inputs=[class_record, _const("__mro__")]), _const(j)])
        record_class(ProvenanceRecord(PseudoInst.BINARY_SUBSCR, inputs=[
            ProvenanceRecord(PseudoInst.LOAD_ATTR, inputs=[mro_entry, _const("__dict__")]), _const(name)]), entry)
    return interpreter._interpret_call(entry.fget, wrap(sup.__self__, provenance=obj_record))
