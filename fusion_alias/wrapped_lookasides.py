"""Lending a lookaside that wraps what traced a torch function before: Thunder's symbol, or a lookaside lent
earlier (``out=``, out_arguments.py). One helper for the modules that change how one torch function traces
(clamp_ties, saturated_sigmoid, lerp_shapes, pool_ties, zero_norms, loss_defaults, the feature dropouts).

Note [the operand by eager's name]
----------------------------------
The lookasides lent here take the tensor operand first, by position (``def traced(a, *args, **kwargs)``), as
Thunder's symbols do. Eager also takes it by name: ``F.relu(input=x)``, ``torch.sigmoid(input=x)``,
``F.normalize(input=x, dim=0)``. Those raised ``TypeError: traced() missing 1 required positional argument:
'a'``, naming a function the user never wrote (plain ``thunder.jit`` raises Thunder's ``relu() got an
unexpected keyword argument 'input'``). A call of the torch function that passes nothing by position and its
first operand by eager's name for it (the first parameter of a Python function such as ``F.relu``, else
``input``, the name torch's functions give ``self``) now reaches the lookaside with that operand first::

    F.relu(input=x, inplace=True)   ->  traced(x, inplace=True)

A name eager does not take for it is left as it was (Thunder's error, or the lookaside's).
"""

from __future__ import annotations

import inspect

import thunder.torch as ltorch


def wrap_lookasides(executor, fn, wrap, *also, with_symbol: bool = False) -> None:
    """``executor._lookasides[key] = wrap(previous)`` for ``fn``, each of ``also`` and, with ``with_symbol``,
    Thunder's symbol for ``fn`` (what a tensor's method resolves to), ``previous`` being the lookaside lent
    before for that key or else Thunder's symbol. Nothing where Thunder has no symbol for ``fn``. The torch
    functions' lookasides also take their first operand by eager's name (Note [the operand by eager's name])."""
    original = ltorch._torch_to_thunder_function_map.get(fn)
    if original is None:
        return
    for key in (fn, *also, original) if with_symbol else (fn, *also):
        lookaside = wrap(executor._lookasides.get(key, original))
        executor._lookasides[key] = lookaside if key is original else _first_operand_by_name(lookaside, key)


def _first_operand_name(fn) -> str:
    """Eager's name for ``fn``'s first operand: its first parameter's, for a Python function that names it;
    ``input`` for torch's built-in functions (their ``self``) and for wrappers of ``*args``."""
    try:
        first = next(iter(inspect.signature(fn).parameters.values()), None)
    except (TypeError, ValueError):
        return "input"
    if first is None or first.kind not in (first.POSITIONAL_OR_KEYWORD, first.KEYWORD_ONLY):
        return "input"
    return first.name


def _first_operand_by_name(lookaside, fn):
    """``lookaside``, with ``fn``'s first operand moved first when a call passes it by eager's name and nothing
    by position (Note [the operand by eager's name])."""
    name = _first_operand_name(fn)

    def call(*args, **kwargs):
        if not args and name in kwargs:
            kwargs = dict(kwargs)
            args = (kwargs.pop(name),)
        return lookaside(*args, **kwargs)

    return call
