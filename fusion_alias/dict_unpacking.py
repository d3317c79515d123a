"""``{**D}``: a dict unpacked into a new one keeps the paths of its values.

Note [a dict unpacked into a new one]
-------------------------------------
Thunder 0.2.6's interpreter runs ``DICT_UPDATE`` (the bytecode of ``{**D}`` and ``{**D, "z": 1}``) on the bare
values, outside its own tracking, so each value copied into the new dict has no path from the call: a number read
from it was baked into the trace and checked by nothing::

    D = {"k": 2.0}
    def f(x): return x.mul_({**D}["k"])     # f(x); D["k"] = 3.0; f(x)   eager: x * 3;  was: x * 2

(session 40 probe; plain ``thunder.jit`` too; ``dict(D)``, ``D.copy()``, ``h(**D)`` were right: the interpreter
runs those through its dict wrappers, which keep each value's path ``D["k"]``, and Thunder's prologue checks it.)
While ``fusion_alias.jit`` traces, ``DICT_UPDATE`` runs the same way: the new dict's ``update`` is interpreted with
the wrapped operands, as Thunder's own ``DICT_MERGE`` (``h(**D)``) does. Other tracing (plain ``thunder.jit`` in the
same process) keeps Thunder's handler.
"""

from __future__ import annotations

from thunder.core import interpreter
from thunder.core.interpreter import INTERPRETER_SIGNALS

from fusion_alias import context

_OPCODE = "DICT_UPDATE"


def _update(target, source):
    target.update(source)


def _handler(thunders):
    def dict_update(inst, /, stack, **kwargs):
        if not context.current().has_call:
            return thunders(inst, stack=stack, **kwargs)
        source = stack.pop_wrapped()
        target = stack.getitem_wrapped(-inst.arg)
        if interpreter._interpret_call(_update, target, source) is INTERPRETER_SIGNALS.EXCEPTION_RAISED:
            return INTERPRETER_SIGNALS.EXCEPTION_RAISED
        return None

    return dict_update


def register() -> None:
    """Install the ``DICT_UPDATE`` handler of Note [a dict unpacked into a new one] (once)."""
    handlers = interpreter._default_opcode_handler_map
    current = handlers[_OPCODE]
    if getattr(current, "_fusion_alias", False):
        return
    handler = _handler(current)
    handler._fusion_alias = True
    handlers[_OPCODE] = handler
