"""Spellings of statements of the dtype generator (``gen_dtype.DtypeGen``): conjugate views and identity tests,
two classes no generator made before session 20.

Note [conjugate views and identity tests in dtype programs keep the stream]
    Session 20. A session-20 hand probe found ``x.conj() is x`` of a real ``x`` answered False inside a compiled
    function, where eager returns ``x`` itself (also ``x.to(x.dtype)``, ``type_as``, ``x.real``: tensor_identity.py,
    Note [conversions that return their own tensor]): a silent wrong branch. Docs/limits.md listed conjugate
    views and identity tests in the ``dtype`` generator as never generated. Here:

    * ``conj_view``: a view statement (``t3 = x[1:3]``, ``t3 = x.detach().t()``) with ``.conj()`` after its
      receiver (``t3 = x.conj()[1:3]``): of a complex ``x`` a conjugate view of the same memory, sizes and
      strides (writes through it land in ``x`` conjugated), of any other dtype ``x`` itself, so the
      statement is the one it was. Drawn with probability 0.2;
    * ``identity_factor``: an out-of-place result of a floating or complex dtype times a choice on an
      identity test between two tensor variables (``identity_spellings.predicate``), one side of it, as often
      as not, a conversion eager may return as the tensor itself (``v.conj()``, ``v.to(torch.<v's dtype>)``,
      ``v.type_as(v)``, ``v.real``, ``v.resolve_conj()`` of a real ``v``). Drawn with probability 0.25, kept
      only where the result has ``e``'s shape, dtype and strides (``identity_spellings.if_same_result``).

    A conjugate view changes the values of a complex variable, never its shape, dtype or memory, nor (for the
    elementwise ops of this generator) whether eager accepts a later statement; an identity factor changes
    values only. Both are drawn from ``dtype_spell``, a generator of its own seeded from ``rng``'s state
    without drawing from it, after every draw of ``rng`` for the statement. So every program of every seed is
    the one it was, with some statements spelled so
    (``tests/test_fuzz.py::test_conj_and_identity_spellings_of_dtype_programs_keep_every_stream``).
"""

from __future__ import annotations

import random
import re

import torch

from fusion_alias.fuzz import identity_spellings

# a view statement of gen_basic._Gen.view: [with torch.no_grad(): ]t = x[.detach()]<view op>
_VIEW = re.compile(r"(?P<head>(?:with torch\.no_grad\(\): )?\w+ = )(?P<recv>\w+(?:\.detach\(\))?)(?P<rest>[.\[].*)")

# conversions eager returns as the tensor itself for some dtypes (Note [conversions that return their own tensor])
_SELF_FORMS = ("{v}.conj()", "{v}.to(torch.{dtype})", "{v}.type_as({v})", "{v}.real", "{v}.resolve_conj()")


def conj_view(dtype_spell: random.Random, code: str) -> str:
    """``code`` (a view statement), or (probability 0.2) the same with ``.conj()`` after its receiver."""
    if dtype_spell.random() >= 0.2:
        return code
    m = _VIEW.fullmatch(code)
    if m is None:
        return code
    return f"{m['head']}{m['recv']}.conj(){m['rest']}"


# Note [conversion views in dtype programs keep the stream]
#     Session 21. Writes through a conversion eager returns as the tensor itself (``x.cpu()``, ``x.type_as(x)``,
#     ``x.sum_to_size(x.shape)``) were refused with gradients ("cannot express as views of one tensor") and run
#     since session 21 (autograd_functionalize.py, Note [a conversion eager returns as itself]); no generator made
#     them but ``conj_view``'s ``.conj()``. ``conversion_view`` spells a view statement's receiver (``t3 =
#     x[1:3]``) with probability 0.15 through one (``t3 = x.cpu()[1:3]``): of a CPU tensor each is ``x`` itself,
#     so the statement is the one it was. Drawn from ``conversion``, a stream of its own (after ``conj_view``'s
#     draws), so every program of every seed keeps its statements
#     (``tests/test_fuzz.py::test_conversion_views_of_dtype_programs_keep_every_stream``).
_CONVERSIONS = (".cpu()", ".to('cpu')", ".type_as({v})", ".sum_to_size({v}.shape)", ".type({v}.dtype)")


def conversion_view(conversion: random.Random, code: str) -> str:
    """``code`` (a view statement), or (probability 0.15) the same with a conversion eager returns as the tensor
    itself after its receiver (Note [conversion views in dtype programs keep the stream])."""
    if conversion.random() >= 0.15:
        return code
    m = _VIEW.fullmatch(code)
    if m is None:
        return code
    form = conversion.choice(_CONVERSIONS).format(v=m["recv"].removesuffix(".detach()"))
    return f"{m['head']}{m['recv']}{form}{m['rest']}"


def _side(dtype_spell: random.Random, env: dict, v: str) -> str:
    """``v``, or (probability 0.5) a conversion of ``v`` eager may answer with ``v`` itself."""
    if dtype_spell.random() >= 0.5:
        return v
    t = env[v]
    forms = [f for f in _SELF_FORMS if not (t.is_complex() and f.endswith("resolve_conj()"))]
    return dtype_spell.choice(forms).format(v=v, dtype=str(t.dtype).removeprefix("torch."))


def identity_factor(dtype_spell: random.Random, env: dict, names: list[str], same_as: dict[str, str], e: str) -> str:
    """``e`` (an out-of-place expression), or (probability 0.25) ``(e) * (a if <identity test> else b)`` where
    ``e`` is of a floating or complex dtype and the spelling keeps its shape, dtype and strides."""
    if dtype_spell.random() >= 0.25:
        return e
    p = identity_spellings.predicate(dtype_spell, env, names, same_as)
    if p is None:
        return e
    m = re.fullmatch(r"(\w+) (is not|is) (\w+)|id\((\w+)\) == id\((\w+)\)", p)
    if m is None:
        return e
    if m[1] is not None:
        p = f"{_side(dtype_spell, env, m[1])} {m[2]} {_side(dtype_spell, env, m[3])}"
    else:
        p = f"id({_side(dtype_spell, env, m[4])}) == id({_side(dtype_spell, env, m[5])})"
    a, b = dtype_spell.choice(((2.0, 0.5), (-1.0, 1.0), (3.0, 1.0)))
    spelled = f"({e}) * ({a} if {p} else {b})"
    try:
        result = eval(e, dict(identity_spellings._EXEC_GLOBALS), dict(env))
    except Exception:  # noqa: BLE001 - eager rejects e: left as it is
        return e
    if not isinstance(result, torch.Tensor) or not (result.is_floating_point() or result.is_complex()):
        return e
    return identity_spellings.if_same_result(env, e, spelled)


# Note [special and huge numbers in dtype programs]
#     Session 32. With ``--special-values`` (source.py, Note [special values in the inputs]) a third of the number
#     operands of a dtype program (``DtypeGen._constant``, ``_divisor``, the dtype-rule ``number_range``
#     statements) become a number chosen for the dtype of the tensor it meets: NaN, the infinities and -0.0, the
#     dtype's extremes, -1 and 0, and numbers past what the dtype holds (``x.add_(2**31)`` of an int32 ``x``,
#     ``x.fill_(300)`` of a uint8 one, ``x.mul_(2**63)`` of an int64 one, ``x.add_(1e300)`` of a float16 one,
#     ``2**64``, past every integer type). Eager decides by the op, not only by the number (checked, torch 2.9.1):
#
#         int32 x.add_(2**31), x + 2**31    wraps (the number is taken modulo 2**32)
#         int32 x.fill_(2**31), x[0] = 2**31, x.clamp_(0, 2**31)     raises "value cannot be converted ... overflow"
#         int8  x.add_(300)                 wraps; x.fill_(300) raises; x // 2**31 raises (the divisor wraps to 0)
#         float16 x.add_(1e300)             inf; x.fill_(1e300), x.clamp_(max=1e5) raise; x[0] = 1e300 gives inf
#         float32 x[0] = 1e300              raises (float16 does not); x.fill_(2**63) runs
#         any x.add_(2**64)                 raises OverflowError ("int too big to convert")
#
#     The oracle compares as always: a statement eager runs must give eager's value, one eager raises at (kept
#     only as a program's last, ``bad_inplace``) must raise. Drawn from ``dtype_special`` (and the rule statements'
#     ``special``), streams of their own seeded from ``rng``'s state without drawing from it, after every draw of
#     the statement: without the option no stream draws and every program of every seed is the one it was.
#     A divisor is never 0 or -1 (``INT_MIN // -1`` traps in C); one taken modulo 2**bits to 0 (``x // 2**31`` of an
#     int8 ``x``) makes eager raise "ZeroDivisionError": kept only as a program's last statement, like every raise.
def special_number(special: random.Random, dtype: torch.dtype, divisor: bool = False) -> str:
    """A special or out-of-range number for an operand meeting a ``dtype`` tensor (Note [special and huge numbers
    in dtype programs]); ``divisor``: neither 0 nor -1."""
    nonfinite = ["float('nan')", "float('inf')", "-float('inf')"]
    if dtype is torch.bool:
        pool = ["2", "-1", "256", "2**63", "2**64", "0.0"] + nonfinite[:1]
    elif dtype.is_complex:
        pool = nonfinite + ["1e300", "2**63", "-0.0"]
    elif dtype.is_floating_point:
        pool = nonfinite + ["-0.0", "1e300", "-1e300", "1e5", "65504.0", "1e39", "2**63", "2**64", "1e-40", "5e-324"]
    else:
        info = torch.iinfo(dtype)
        pool = [str(info.max), str(info.min), str(info.max + 1), str(info.min - 1), "300", "2**31", "2**63",
                "2**64", "1e300"] + nonfinite
        if not divisor:
            pool += ["-1", "0"]
    if divisor:
        pool = [n for n in pool if n not in ("0", "0.0", "-0.0", "-1")]
    return special.choice(pool)


# Note [reductions given a dtype in dtype programs]
#     Session 34 (fusion_alias/reduction_dtypes.py, Note [a dtype= eager refuses]): no generator gave a reduction a
#     ``dtype=``, and a hand probe found ``x.mean(dtype=torch.int64)``, ``torch.softmax(x, 0, dtype=torch.int32)``
#     running where eager raises. An out-of-place statement of the dtype generator (``t = x.sum(0)``, ``t = x + y``)
#     is, with probability ``P_REDUCTION_DTYPE``, replaced by a reduction of its ``x`` given a ``dtype=`` of any dtype
#     (``sum``, ``prod``, ``mean``, ``nansum``, ``cumsum``, ``softmax``, ``log_softmax``; eager refuses some, and those
#     are kept at the generator's error rate, as every statement eager refuses). Drawn from ``reduce_dtype``, a stream
#     of its own seeded from ``rng``'s state without drawing from it, after the statement's draws: with
#     ``P_REDUCTION_DTYPE`` 0 every program is the one it was (the streams older tests pin set it so).
P_REDUCTION_DTYPE = 0.15
_REDUCTION_DTYPES = ("float16", "bfloat16", "float32", "float64", "int32", "int64", "int8", "uint8", "bool", "complex64")
_REDUCTIONS = ("{x}.sum(dtype={d})", "{x}.sum(0, dtype={d})", "torch.sum({x}, -1, keepdim=True, dtype={d})",
               "{x}.prod(dtype={d})", "torch.prod({x}, 0, dtype={d})", "{x}.mean(dtype={d})",
               "torch.mean({x}, 0, keepdim=True, dtype={d})", "{x}.nansum(dtype={d})", "{x}.cumsum(0, dtype={d})",
               "torch.softmax({x}, -1, dtype={d})", "{x}.log_softmax(0, dtype={d})")


def reduction_dtype(reduce_dtype: random.Random, x: str, e: str) -> str:
    """``e`` (a reduction of ``x``), or (probability ``P_REDUCTION_DTYPE``) a reduction of ``x`` given a ``dtype=``
    (Note [reductions given a dtype in dtype programs])."""
    if P_REDUCTION_DTYPE <= 0 or reduce_dtype.random() >= P_REDUCTION_DTYPE:
        return e
    d = "torch." + reduce_dtype.choice(_REDUCTION_DTYPES)
    return reduce_dtype.choice(_REDUCTIONS).format(x=x, d=d)


# ... and (probability ``P_REDUCTION_DTYPE``, of the programs whose last statement is not already one eager raises
# at) a last statement eager refuses for its ``dtype=`` alone: a missed rejection shows only where eager's raise is
# the program's last (a later statement both raise at hides it), and the generator keeps a statement eager refuses
# at its error rate only, so these are drawn here, after the dtype-rule ones (``DtypeGen.extra_raising``).
_REFUSED_REDUCTIONS = ("{x}.mean(dtype=torch.int64)", "torch.mean({x}, 0, dtype=torch.bool)",
                       "torch.softmax({x}, -1, dtype=torch.int32)", "{x}.log_softmax(0, dtype=torch.int64)",
                       "torch.nn.functional.softmax({x}, -1, dtype=torch.int16)", "{x}.cumsum_(0, dtype=torch.{other})")


def refused_reduction(reduce_dtype: random.Random, env: dict, names: list[str]) -> tuple[str, str] | None:
    """(a reduction statement's expression eager refuses for its ``dtype=``, the variable it reduces), or None."""
    tensors = [v for v in names if isinstance(env.get(v), torch.Tensor)]
    if P_REDUCTION_DTYPE <= 0 or not tensors or reduce_dtype.random() >= P_REDUCTION_DTYPE:
        return None
    x = reduce_dtype.choice(tensors)
    own = str(env[x].dtype).removeprefix("torch.")
    other = reduce_dtype.choice([d for d in _REDUCTION_DTYPES if d != own])
    return reduce_dtype.choice(_REFUSED_REDUCTIONS).format(x=x, other=other), x


# Note [an in-place scan given its own dtype in dtype programs]
#     Session 35: ``x.cumsum_(0, dtype=torch.<other>)`` is drawn (eager refuses it: ``refused_reduction``), but not
#     the form eager runs, ``x.cumsum_(dim, dtype=<x's own dtype>)`` (the ``dtype=`` of an in-place scan must be the
#     tensor's own). A unary in-place statement of the dtype generator is, with probability ``P_SCAN_DTYPE``, that
#     scan (drawn from ``scan_dtype``, a stream of its own seeded from ``rng``'s state without drawing from it: with
#     ``P_SCAN_DTYPE`` 0 every program is the one it was).
P_SCAN_DTYPE = 0.15


def scan_with_dtype(scan_dtype: random.Random, e: str, x: str, dtype: str, nd: int) -> str:
    """``e`` (a unary in-place op of ``x``), or (probability ``P_SCAN_DTYPE``) ``x.cumsum_(dim, dtype=<x's
    dtype>)`` (Note [an in-place scan given its own dtype in dtype programs])."""
    if P_SCAN_DTYPE <= 0 or scan_dtype.random() >= P_SCAN_DTYPE:
        return e
    dim = scan_dtype.choice((0, -1)) if nd >= 1 else 0
    return f"{x}.cumsum_({dim}, dtype=torch.{dtype})"
