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
from thunder.core.interpreter import PseudoInst, WrappedValue, unwrap, wrap

from fusion_alias import context
from fusion_alias.mutable_defaults import user_class
from fusion_alias.super_reads import _mro_entry, class_record_of, dict_entry_record, found_after
from fusion_alias.type_reads import _reached_from_the_call as reached_from_the_call


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
    owner = sup.__self_class__
    found = found_after(owner, sup.__thisclass__, name)
    if found is None:
        return None
    j, entry = found
    if type(entry) is not property or type(entry.fget) is not types.FunctionType:
        return None
    if not user_class(owner.__mro__[j]):
        return None  # (torch's property: a constant, module Note)
    obj_record = pr.inputs[1]
    if reached_from_the_call(obj_record):
        owner_record = _mro_entry(class_record_of(obj_record, sup.__self__), j)
        record_class(dict_entry_record(owner_record, name), entry)
    return interpreter._interpret_call(entry.fget, wrap(sup.__self__, provenance=obj_record))
