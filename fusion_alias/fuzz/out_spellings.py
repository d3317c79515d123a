"""In-place statements of the basic generator (``gen_basic._Gen.inplace``) spelled with an ``out=`` argument:
``x.add_(y)`` as ``torch.add(x, y, out=x)``, a class no generator made before session 19.

Note [out= spellings keep the stream]
    Session 19. ``torch.add(a, b, out=o)`` is a write into ``o`` (fusion_alias/out_arguments.py, Note [out= is
    an in-place op]); Thunder 0.2.6 raised a TypeError on it, so no program of the fuzzer had one. Here an
    in-place statement of an op torch also has as a function with ``out`` (``add_``, ``mul_``, ``sub_``,
    ``hypot_``, ``tanh_``, ...) is, with probability 0.15, written as that function storing into the tensor
    the in-place op writes (``t3 = torch.mul(x, 0.5, out=x)``, ``torch.tanh(x.detach(), out=x.detach())``).

    Eager gives both spellings the same verdict and values where every tensor is float32 and the operands
    broadcast to the destination's shape (the only case spelled): TensorIterator checks ``out`` against each
    operand as it checks ``self`` (a partial overlap is rejected either way), casts alike, and both return
    the destination itself. They differ in two cases, never spelled: an operand of another shape (the
    in-place op raises where ``out=`` resizes ``x``), and gradients (``out=`` with an argument that requires
    grad is rejected, the in-place op is not). The generator does not know the second while it grows a
    program (eager validates statements without gradients), so ``generate_program(grad=True)`` sets
    :data:`GRAD` and nothing is spelled then: every ``--grad`` program is the one it was.

    The draws come from ``out_spell``, a generator of its own seeded from ``rng``'s state without drawing from it,
    after every other draw of the statement (``_detach_prefix`` included). So every program of every seed is
    the one it was, with some in-place statements spelled so
    (``tests/test_fuzz.py::test_out_spellings_keep_every_stream``).
"""

from __future__ import annotations

import contextvars
import random
import re

import torch

from fusion_alias.fuzz.hazard import _EXEC_GLOBALS

GRAD: contextvars.ContextVar[bool] = contextvars.ContextVar("fusion_alias_fuzz_grad", default=False)

# in-place methods whose torch function takes ``out`` (and fusion_alias traces it: out_arguments._ELEMENTWISE)
_FUNCTIONS = frozenset({"add", "sub", "mul", "hypot", "tanh", "sin", "cos", "exp", "neg", "abs", "clamp",
                        "clamp_min", "clamp_max", "sigmoid"})
_INPLACE = re.compile(r"(?P<target>\w+ = )?(?P<recv>(?P<x>\w+)(?:\.detach\(\))?)\.(?P<op>\w+)_\((?P<args>.*)\)")


def _operands(args: str, env: dict):
    """The values of ``args`` (a call's argument text), evaluated in ``env`` without writing anything, or None."""
    if not args:
        return [], {}
    try:
        return eval(f"_call({args})", {**_EXEC_GLOBALS, "_call": lambda *a, **k: (list(a), k)}, dict(env))
    except Exception:  # noqa: BLE001 - eager rejects the operands: not spelled
        return None


def out_form(out_spell: random.Random, env: dict, code: str) -> str:
    """``code`` (an in-place statement, ``[t = ]x[.detach()].op_(args)``), or (probability 0.15) the same
    statement as ``[t = ]torch.op(x[.detach()], args, out=x[.detach()])`` where eager answers both alike
    (module Note)."""
    if out_spell.random() >= 0.15 or GRAD.get():
        return code
    m = _INPLACE.fullmatch(code)
    if m is None or m["op"] not in _FUNCTIONS:
        return code
    x = env.get(m["x"])
    found = _operands(m["args"], env)
    if not isinstance(x, torch.Tensor) or x.dtype is not torch.float32 or found is None:
        return code
    tensors = [a for a in (*found[0], *found[1].values()) if isinstance(a, torch.Tensor)]
    if any(t.dtype is not torch.float32 for t in tensors):
        return code
    try:
        if torch.broadcast_shapes(x.shape, *(t.shape for t in tensors)) != x.shape:
            return code
    except RuntimeError:
        return code
    recv, args = m["recv"], m["args"]
    call = f"torch.{m['op']}({recv}, {args}, out={recv})" if args else f"torch.{m['op']}({recv}, out={recv})"
    return (m["target"] or "") + call
