"""Spellings of statements of the basic generator (``gen_basic._Gen``) that compare tensors by identity
(``is``, ``is not``, ``id()``) and index with Python lists, two classes no generator made before session 18.

Note [identity and list-key spellings keep the stream]
    Session 18. Session 17's hand probes found both classes wrong without a word (``tensor_identity.py``,
    Note [tensor identity in a trace]; ``fresh_results.py``, Note [indexing with a list copies]), and a
    session-18 hand probe found an ``is`` answer kept for calls where it differs (Note [identity answers
    are guarded]). Here:

    * ``identity``: a number of a statement spelled as a choice on an identity test between two tensor
      variables, ``(2.0 if a is b else 0.5)``, ``(... if t3 is not a else ...)``, ``(... if id(t3) ==
      id(a) else ...)``: the result of an out-of-place statement times such a choice (float results
      only: a Python float keeps their dtype), and the number operand of an in-place op (``x.mul_(0.5 if
      a is b else 2.0)``). The two variables are, drawn in turn, the result of an in-place op and the
      tensor it was called on (``t3 = a.add_(1)``: one object), two that share memory (``f(x, x)``, a
      view and its base, a hidden tensor and the argument it aliases in a later call of ``calls`` and
      ``hidden`` programs: the same object there, or not), or any two;
    * ``gathered``: an operand read through a Python list key that permutes its rows or columns
      (``x.add_(x[[3, 2, 1, 0]])``, ``y[:, [1, 0, 2]]``): a gather, new memory, of the same shape and
      dtype. In an in-place op only where the operand is apart from the destination or the same view
      of it (``gen_basic._Gen._maskable``): else eager's verdict on the op would change (a partial
      overlap rejected, a fresh gather accepted), and with it the program.

    They change values only, never a variable's shape, dtype or memory, nor whether eager accepts a
    statement; no draw of ``rng`` depends on a value. They are drawn from ``ident``, a fifth generator
    seeded from ``rng``'s state without drawing from it. So every program of every seed is the one it
    was, with some statements spelled so (``tests/test_fuzz.py::test_identity_and_list_key_spellings_keep_every_stream``).
"""

from __future__ import annotations

import random
import re

import torch

from fusion_alias.fuzz.hazard import _EXEC_GLOBALS, _overlaps


def predicate(ident: random.Random, env: dict, names: list[str], same_as: dict[str, str]) -> str | None:
    """An identity test between two tensor variables of ``names`` (``same_as``: the result of an in-place
    op -> the tensor it was called on), or None where there are fewer than two."""
    tensors = [v for v in names if isinstance(env.get(v), torch.Tensor)]
    if tensors and ident.random() < 0.25:  # Note [dtype tests among the identity tests]
        return dtype_test(ident, env, ident.choice(tensors))
    if len(tensors) < 2:
        return None
    r = ident.random()
    results = [(t, x) for t, x in same_as.items() if t in tensors and x in tensors]
    if results and r < 0.35:
        v, w = ident.choice(results)
    else:
        shared = [(v, w) for i, v in enumerate(tensors) for w in tensors[i + 1:] if _overlaps(env[v], env[w])]
        if shared and r < 0.8:
            v, w = ident.choice(shared)
        else:
            v, w = ident.sample(tensors, 2)
    if ident.random() < 0.5:
        v, w = w, v
    form = ident.choice(("is", "is", "is not", "id"))
    if form == "id":
        return f"id({v}) == id({w})"
    return f"{v} {form} {w}"


# Note [dtype tests among the identity tests]
# -------------------------------------------
# Session 28. Inside Thunder 0.2.6's trace ``x.dtype`` was a Thunder dtype, equal to no ``torch.dtype``, so
# ``if x.dtype == torch.float32:`` took the other branch, silently (trace_time_queries.py, Note [a tensor's
# dtype is a torch.dtype]). No generator compared dtypes; 25% of the tests drawn here are one now, true or
# false for the variable's dtype as it is.
_DTYPE_TESTS = (
    "{v}.dtype == torch.{d}", "{v}.dtype != torch.{d}", "{v}.dtype is torch.{d}",
    "{v}.dtype in (torch.{d}, torch.float16)", "{v}.is_floating_point()", "{v}.dtype.is_floating_point",
)


def dtype_test(ident: random.Random, env: dict, v: str) -> str:
    """A test of ``v``'s dtype against its own dtype or another."""
    own = str(env[v].dtype).removeprefix("torch.")
    d = own if ident.random() < 0.5 else ident.choice(("float32", "float64", "int64", "bool", "bfloat16"))
    return ident.choice(_DTYPE_TESTS).format(v=v, d=d)


def identity_factor(ident: random.Random, env: dict, names: list[str], same_as: dict[str, str], e: str) -> str:
    """``e`` (a float result) times a choice on an identity test, drawn with probability 0.2."""
    if ident.random() >= 0.2:
        return e
    p = predicate(ident, env, names, same_as)
    if p is None:
        return e
    a, b = ident.choice(((2.0, 0.5), (-1.0, 1.0), (3.0, 1.0)))
    return f"({e}) * ({a} if {p} else {b})"


def identity_number(ident: random.Random, env: dict, names: list[str], same_as: dict[str, str], number: str) -> str:
    """The number operand ``number`` of an in-place op, or (probability 0.2) a choice of it and another
    on an identity test."""
    if ident.random() >= 0.2:
        return number
    p = predicate(ident, env, names, same_as)
    if p is None:
        return number
    other = ident.choice(("-0.25", "2.0", "0.125"))
    return f"({number} if {p} else {other})"


def gathered(ident: random.Random, env: dict, v: str, p: float) -> str | None:
    """``v`` read through a list key that permutes its rows (or columns), drawn with probability ``p``;
    None where not drawn or ``v`` has nothing to permute."""
    if ident.random() >= p:
        return None
    t = env.get(v)
    if not isinstance(t, torch.Tensor) or t.dim() == 0:
        return None
    dims = [d for d in range(min(t.dim(), 2)) if t.shape[d] >= 2]
    if not dims:
        return None
    d = ident.choice(dims)
    perm = list(range(t.shape[d]))
    ident.shuffle(perm)
    return f"{v}[{perm}]" if d == 0 else f"{v}[:, {perm}]"


def gather_in(ident: random.Random, env: dict, e: str, v: str) -> str:
    """``e`` (an out-of-place expression over ``v``) with every read of ``v`` through one list key,
    drawn with probability 0.15."""
    g = gathered(ident, env, v, 0.15)
    if g is None:
        return e
    return re.sub(rf"(?<![\w.]){re.escape(v)}(?![\w\[])", lambda _m: g, e)


def if_same_result(env: dict, e: str, spelled: str) -> str:
    """``spelled`` where it evaluates (in ``env``, without writing: an out-of-place expression) to a result of
    ``e``'s shape, dtype and strides, else ``e``: an elementwise op of a gather follows the gather's layout,
    not its operand's (``b.t().clone()`` keeps ``b.t()``'s strides, ``b.t()[[1, 0]].clone()`` does not), and a
    later ``view`` or ``reshape`` of the result would then be accepted or a view where it was not."""
    if spelled == e:
        return e
    try:
        want = eval(e, dict(_EXEC_GLOBALS), dict(env))
        got = eval(spelled, dict(_EXEC_GLOBALS), dict(env))
    except Exception:  # noqa: BLE001 - eager rejects e: the statement is dropped, as it was
        return e
    if not (isinstance(want, torch.Tensor) and isinstance(got, torch.Tensor)):
        return e
    if want.shape != got.shape or want.dtype != got.dtype or want.stride() != got.stride():
        return e
    return spelled


# Note [list keys as write destinations keep the stream]
#     Session 20. ``x[[1, 2]] = y`` writes through a Python-list key: an ``index_put_`` into ``x``, not a copy
#     into a view (``x[[1, 2]]`` read is a gather, new memory; written, it is ``x``'s own rows). Session 18
#     probed it by hand only. A setitem statement of the basic generator whose first key is a slice, an int or
#     ``...`` (``x[1:3, 0] = y``, ``x[::2] = y``, ``x[2] = y``) is, with probability 0.3, spelled with its indices
#     as a list, in their order or permuted (``x[[2, 1], 0] = y``, ``x[[2]] = y``): the same elements of ``x``
#     written, values permuted at most (an int becomes a dim of 1, into which ``y`` broadcasts as well). Only where ``y`` is a number or shares no memory with ``x``: eager checks an overlap of
#     ``y`` with ``x`` differently for ``copy_`` and ``index_put_``, and its verdict must not change. Drawn
#     from ``list_dst``, a stream of its own (gen_basic._Gen), so every program of every seed is the one it was
#     (``tests/test_fuzz.py::test_list_key_destinations_keep_every_stream``).
_SETITEM = re.compile(r"(?P<x>\w+)\[(?P<first>[^,\]\[]*)(?P<rest>(?:, [^\]\[]*)?)\] = (?P<y>.+)")


def list_key_destination(list_dst: random.Random, env: dict, code: str) -> str:
    """``code`` (a setitem statement ``x[key] = y``), or (probability 0.3) the same with its first key spelled
    as a list of its indices (Note [list keys as write destinations keep the stream])."""
    if list_dst.random() >= 0.3:
        return code
    m = _SETITEM.fullmatch(code)
    x = env.get(m["x"]) if m is not None else None
    if m is None or not isinstance(x, torch.Tensor) or x.dim() == 0 or (m["first"] == "..." and m["rest"]):
        return code
    y = env.get(m["y"])
    if isinstance(y, torch.Tensor) and _overlaps(y, x):
        return code
    try:
        first = ":" if m["first"] == "..." else m["first"]
        rows = eval(f"_r[{first}]", {"_r": list(range(x.shape[0]))})
    except Exception:  # noqa: BLE001 - not a plain slice or an int
        return code
    rows = rows if isinstance(rows, list) else [rows]  # (x[2, 1:3] as x[[2], 1:3]: a dim of 1 more, y broadcasts)
    if not rows:
        return code
    if list_dst.random() < 0.5:
        list_dst.shuffle(rows)
    return f"{m['x']}[{rows}{m['rest']}] = {m['y']}"
