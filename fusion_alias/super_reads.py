"""A number read through ``super()``, respelled as the path it reads, so that Thunder's prologue checks it.

Note [a number read through super()]
------------------------------------
Thunder 0.2.6's interpreter gives ``super().k`` the provenance ``SUPER(C, o).k``, a path its prologue does not
follow: the number is baked into the trace and checked by nothing::

    class Base: k = 2.0
    class C(Base):
        k = 3.0
        def get(self): return super().k
    def f(x): return x.mul_(OBJ.get())        # f(x); Base.k = 5.0; f(x)   eager: x * 5;  was: x * 2

(session 40 probe; plain ``thunder.jit`` too). ``super(C, o).k`` reads ``k`` from the first class after ``C`` in
``type(o).__mro__`` whose own dict has it. Where that entry is the plain value read (a number, a string, a bool,
None: no descriptor), the value gets the provenance ``o.__class__.__mro__[j].k``, which the prologue checks at each
call, and ``o.__class__`` is recorded as a class read (object_shapes.py, Note [a class's attribute names]: the
attribute names of every class of its MRO), so a ``k`` set on a class between ``C`` and the owner, or ``o``'s class
changed, compiles again. ``super(C, cls).k`` in a classmethod reads ``cls.__mro__`` alike. A method called through
``super()`` (``super().scale()``, its body inlined in the trace) is recorded as the function in its owner's dict, by
identity and code (object_shapes.py, Note [a function's code and defaults]): replacing ``Base.scale`` compiles again.
Other reads through ``super()`` (descriptors) are left as they were.

Note [a number a module reads through super()]
----------------------------------------------
A module's path cannot be respelled so: Thunder's prologue reaches ``torch.nn.Module`` as a module's ``__class__``,
where the number is not (a failure at the first call), and a number a module's ``forward`` read through ``super()``
kept its first value (session 40 probe; plain ``thunder.jit`` too)::

    class Scaled(nn.Module): factor = 2.0
    class MyScaled(Scaled):
        factor = 5.0
        def forward(self, x): return x * super().factor    # m(x); Scaled.factor = 3.0; m(x)   eager: x * 3

So the value keeps its provenance, and fusion_alias's own guard, which follows paths from the module called,
records by its contents (opaque_reads.py, Note [a container an opaque builtin reads]) the dict of each class
``super()`` looked in, from the one after ``C`` to the one the value was found in (``o.__class__.__mro__[i].__dict__``):
any attribute of those classes changed or added (a ``factor`` set on a class in between, which ``super()`` would
then find first) compiles again. Coarser than the read, never finer. A method a module calls through ``super()``
(``super().scale()``) is recorded as for any object, by fusion_alias's guard too (it kept its first body after
``Base.scale`` was replaced, silently: session 41 probe), where the class that holds it is the user's: a method of
torch's (``super().forward(x)`` in a subclass of ``nn.Linear``) is a constant, as torch's functions and classes are
everywhere else (mutable_defaults.py, ``user_class``); its two records cost 8-11 us a call.
"""

from __future__ import annotations

import types

import torch
from thunder.core.interpreter import ProvenanceRecord, PseudoInst

from fusion_alias import context, tensor_identity
from fusion_alias.object_shapes import CONTENTS, scalar_contents
from fusion_alias.mutable_defaults import user_class
from fusion_alias.opaque_reads import _const
from fusion_alias.type_reads import _reached_from_the_call as reached_from_the_call

_PLAIN = (int, float, complex, bool, str, type(None))


def _attr(record, name: str) -> ProvenanceRecord:
    return ProvenanceRecord(PseudoInst.LOAD_ATTR, inputs=[record, _const(name)])


def is_super_read(record) -> bool:
    """Whether ``record`` is ``SUPER(C, o).<name>``."""
    return (record is not None and record.inst is PseudoInst.LOAD_ATTR and len(record.inputs) == 2
            and record.inputs[0].inst is PseudoInst.SUPER)


def found_after(owner: type, cls: type, name: str) -> tuple | None:
    """``(j, entry)``: what ``super(cls, o).<name>`` finds, with ``owner`` ``o``'s class (or ``o``, a class): the
    first class after ``cls`` in ``owner.__mro__`` whose own dict holds ``name`` (its index) and the entry; None
    where none does."""
    mro = getattr(owner, "__mro__", ())
    if cls not in mro:
        return None
    for j in range(mro.index(cls) + 1, len(mro)):
        entries = vars(mro[j])
        if name in entries:
            return j, entries[name]
    return None


def class_record_of(obj_record, obj) -> ProvenanceRecord:
    """The path to the class ``super()``'s MRO is taken from: ``obj`` itself where it is a class, else its
    ``__class__``."""
    return obj_record if isinstance(obj, type) else _attr(obj_record, "__class__")


def dict_entry_record(owner_record, name: str) -> ProvenanceRecord:
    """The path ``<owner>.__dict__[name]``: an entry recorded as the object it is."""
    return ProvenanceRecord(PseudoInst.BINARY_SUBSCR, inputs=[_attr(owner_record, "__dict__"), _const(name)])


def _mro_entry(class_record, i: int) -> ProvenanceRecord:
    return ProvenanceRecord(PseudoInst.BINARY_SUBSCR, inputs=[_attr(class_record, "__mro__"), _const(i)])


def _record_owner_dict(owner_record, owner: type, record_contents) -> None:
    """Record the contents of ``owner``'s dict, reached by ``owner_record``, by ``record_contents(path, answer)``
    (Note [a number a module reads through super()]), where the guard finds that dict again by the path."""
    contents = scalar_contents(vars(owner))
    if contents is None or tensor_identity._follow(owner_record, context.current(),
                                                   tensor_identity.FOLLOW_DEPTH) is not owner:
        return  # (a class's ``__dict__`` is a new mappingproxy at each read: the class is compared)
    dict_record = _attr(owner_record, "__dict__")
    record_contents(ProvenanceRecord(PseudoInst.BINARY_SUBSCR, inputs=[dict_record, _const(CONTENTS)]),
                    ("contents", contents))


def respell_super_read(value, record_class, record_contents) -> None:
    """Give ``value``, read as ``super(C, o).<name>``, the provenance of the path it reads, and record ``o``'s class
    by ``record_class(path, cls)`` (module Note); nothing where the read is not a plain value or a method found that
    way. A number a module reads: record the dicts of the classes ``super()`` looked in by ``record_contents(path,
    answer)`` instead (Note [a number a module reads through super()])."""
    sup, name_record = value.provenance.inputs
    if name_record.inst is not PseudoInst.CONSTANT or type(name_record.value) is not str or len(sup.inputs) != 2:
        return
    name = name_record.value
    plain = type(value.value) in _PLAIN
    cls_record, obj_record = sup.inputs
    if not reached_from_the_call(obj_record):
        return
    ctx = context.current()
    cls = tensor_identity._follow(cls_record, ctx, tensor_identity.FOLLOW_DEPTH)
    obj = tensor_identity._follow(obj_record, ctx, tensor_identity.FOLLOW_DEPTH)
    if not isinstance(cls, type) or obj is tensor_identity._NOT_FOUND:
        return
    owner = obj if isinstance(obj, type) else type(obj)
    mro = owner.__mro__
    looked_up = found_after(owner, cls, name)
    if looked_up is None:
        return
    j, found = looked_up
    class_record = class_record_of(obj_record, obj)
    owner_record = _mro_entry(class_record, j)
    if plain and found is value.value:
        if isinstance(obj, torch.nn.Module):  # Note [a number a module reads through super()]
            for i in range(mro.index(cls) + 1, j + 1):  # (the classes super() looked in, the owner last)
                _record_owner_dict(_mro_entry(class_record, i), mro[i], record_contents)
            return
        value.provenance = _attr(owner_record, name)
    elif type(found) is types.FunctionType:  # (a method: recorded as the function it is, by its own dict entry)
        if isinstance(obj, torch.nn.Module) and not user_class(mro[j]):
            return  # (``super().forward(x)`` of an ``nn.Linear``: torch's, a constant: module Note)
        record_class(dict_entry_record(owner_record, name), found)
    else:
        return  # (a descriptor, or a value super() does not return as it is)
    record_class(class_record, owner)
