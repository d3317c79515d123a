"""``generate_program(seed, index)``: pick a generator, make the inputs, grow a
body statement by statement against live eager runs of every call's aliasing.

Note [a body valid for every call]
    A program may be called with several aliasings (``Program.variants``). Its
    body is grown on variant 0: a statement eager rejects there is dropped. The
    same statement is then run on every other variant's inputs: if eager rejects
    it there, that call is expected to raise (the oracle checks the jitted call
    raises too) and the variant is not followed further; if its result is
    ill-defined there (an operand overlapping its destination at other indices,
    Note [partial overlap within one op]) and eager does not raise, the statement
    is dropped, because eager's answer would be arbitrary. So every call of the
    program either has one eager answer or an eager error.
"""

from __future__ import annotations

import random
import re
import warnings
from typing import Sequence

import torch

from fusion_alias.fuzz import (gen_aliasing, gen_autocast, gen_dtype, gen_edges, gen_fresh, gen_item, gen_layout,
                               gen_modules, gen_nograd, gen_order, gen_strided, gen_ties, gen_train, hidden_numbers,
                               out_spellings)
from fusion_alias.fuzz import complex_fills, dropout_args, max_dims
from fusion_alias.fuzz import einsum_view_forms, saving_inplace
# ForeachFnGen's statements (Note [out-of-place foreach functions in the fuzzer]) and session 46's einsum and saving forms,
# each from a stream of its own (einsum_view_forms.py, saving_inplace.py)
from fusion_alias.fuzz.saving_inplace import SavingInplaceGen
from fusion_alias.fuzz.gen_basic import _gen_inputs, _Gen
from fusion_alias.fuzz.hazard import _exec_stmt, _ill_defined, eager_env
from fusion_alias.fuzz.program import GENERATORS, Program, Stmt

# relative frequency of each generator when several are enabled
_WEIGHTS = {"basic": 3, "dtype": 2, "layout": 2, "hidden": 2, "calls": 2, "strided": 1, "fresh": 1, "train": 4, "edges": 1, "modules": 0,
            "order": 0, "autocast": 0, "nograd": 0, "item": 0, "ties": 0}
# drawn among others only in gradient mode (alone, with ``generators=("train",)``, in either mode): the
# streams without --grad stay the ones of the fuzzer before it existed
_GRAD_ONLY = ("train",)
# drawn only alone (``generators=("modules",)``, ``--generator modules``): adding them to the mix would change
# every default stream, and with it the programs behind every seed the docs and tests name
_ASKED_ONLY = ("modules", "order", "autocast", "nograd", "item", "ties")


def _basic_inputs(rng: random.Random) -> dict:
    bases, args = _gen_inputs(rng)
    return {"bases": bases, "args": args}


_MAKERS = {
    # kind: (inputs(rng) -> Program fields, statement maker class, rate of a final statement eager rejects
    #        relative to error_rate)
    "basic": (_basic_inputs, SavingInplaceGen, 1.0),
    "dtype": (gen_dtype.dtype_inputs, gen_dtype.DtypeGen, 6.0),
    "layout": (gen_layout.layout_inputs, gen_layout.LayoutGen, 4.0),
    "hidden": (gen_aliasing.hidden_inputs, SavingInplaceGen, 1.0),
    "calls": (gen_aliasing.calls_inputs, SavingInplaceGen, 1.0),
    "strided": (gen_strided.strided_inputs, gen_strided.StridedGen, 2.0),
    "fresh": (gen_fresh.fresh_inputs, gen_fresh.FreshGen, 1.0),
    "edges": (gen_edges.edges_inputs, gen_edges.EdgesGen, 6.0),
    "order": (gen_order.order_inputs, gen_order.OrderGen, 1.0),
    "autocast": (_basic_inputs, gen_autocast.AutocastGen, 1.0),
    "item": (gen_item.item_inputs, gen_item.ItemGen, 1.0),
    "ties": (gen_ties.ties_inputs, gen_ties.TiesGen, 1.0),
}
# a generator's last word on the program it grew (its documented refusals: gen_item.py, gen_ties.py)
_FINISH = {"item": gen_item.finish, "ties": gen_ties.finish, "hidden": hidden_numbers.finish}


def generate_program(
    seed: int,
    index: int,
    max_stmts: int = 8,
    error_rate: float = 0.05,
    generators: Sequence[str] = GENERATORS,
    grad: bool = False,
) -> Program:
    """Program ``index`` of the stream for ``seed`` (deterministic for given ``generators``).

    One generator of ``generators`` is drawn per program (with one, none is drawn,
    so ``generators=("basic",)`` gives the stream of the fuzzer before the other
    generators existed). Statements are validated one by one against eager runs
    (Note [a body valid for every call]). With probability ``error_rate`` (higher
    for the dtype and layout generators) the program ends in a statement eager
    rejects: the jitted program must then raise too. ``grad``: the programs are run with
    ``--grad``; the ``train`` generator is drawn among others only then.
    """
    unknown = set(generators) - set(GENERATORS)
    if unknown or not generators:
        raise ValueError(f"fuzz: unknown generators {sorted(unknown)}; expected some of {GENERATORS}")
    rng = random.Random(f"fusion_alias.fuzz:{seed}:{index}")
    if len(generators) == 1:
        kind = generators[0]
    else:
        weights = [0 if (g in _GRAD_ONLY and not grad) or g in _ASKED_ONLY else _WEIGHTS[g] for g in generators]
        if not any(weights):
            raise ValueError(f"fuzz: generators {sorted(generators)} are drawn among others only with grad=True")
        kind = rng.choices(list(generators), weights)[0]
    token = out_spellings.GRAD.set(grad)  # (out_spellings.py, Note [out= spellings keep the stream])
    try:
        return _program_of_kind(kind, seed, index, rng, max_stmts, error_rate, grad)
    finally:
        out_spellings.GRAD.reset(token)


def _program_of_kind(kind: str, seed: int, index: int, rng: random.Random, max_stmts: int, error_rate: float,
                     grad: bool) -> Program:
    if kind == "train":  # Note [training calls in the fuzzer]: whole programs of one class, not grown
        return gen_train.train_program(f"seed {seed} #{index}", rng)
    if kind == "modules":  # Note [module programs]: a module class, a forward, calls on one module object
        return gen_modules.modules_program(f"seed {seed} #{index}", rng, grad=grad, max_stmts=max_stmts)
    if kind == "nograd":  # Note [memory shared with another gradient]: whole programs, checked against eager
        return gen_nograd.nograd_program(f"seed {seed} #{index}", rng, grad=grad)
    make_inputs, gen_class, bad_factor = _MAKERS[kind]
    fields = make_inputs(rng)
    p = Program(name=f"seed {seed} #{index}", input_seed=rng.randrange(2**31), stmts=(), returns=(), **fields)
    if kind != "basic":
        p = p.replace(kind=kind)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        p = _grow(p, rng, gen_class, max_stmts, min(1.0, error_rate * bad_factor))
    p = _FINISH[kind](p) if kind in _FINISH else p
    p = saving_inplace.finish(einsum_view_forms.finish(p))  # (their forms' returns and tag; no draw)
    p = dropout_args.finish(p, rng)  # (dropout_args.py, Note [a dropout's arguments in the fuzzer])
    p = complex_fills.finish(p, rng)  # (complex_fills.py, Note [a complex fill value in the fuzzer])
    return max_dims.finish(p, rng)  # (max_dims.py, Note [a max's dim in the fuzzer])


def _grow(p: Program, rng: random.Random, gen_class: type, max_stmts: int, error_rate: float) -> Program:
    envs = [eager_env(p, v) for v in range(len(p.all_variants))]
    env = envs[0]
    inputs = [v for v in env if isinstance(env[v], torch.Tensor)]
    live = [True] * len(envs)  # variants whose eager run has not raised yet
    gen = gen_class(rng, env, list(inputs))
    if hasattr(gen, "configure"):  # a generator that grows around a class drawn with the inputs (gen_edges)
        gen.configure(p)
    stmts: list[Stmt] = []
    # statements a generator adds without drawing from rng (gen_dtype.py: Note [dtype-rule statements keep the
    # stream], dtype_rule_stmts.py): they count for no slot, attempt or return draw
    extras: list[Stmt] = []
    extra = getattr(gen, "extra_statement", None) if len(envs) == 1 else None
    n = rng.randint(2, max_stmts)
    attempts = 0
    while len(stmts) - len(extras) < n and attempts < 20 * n:
        attempts += 1
        s = gen.statement()
        if _ill_defined(s, env) and not getattr(gen, "keeps_ill_defined", False):
            continue  # (the order generator keeps them: Note [programs whose eager answer depends on memory order])
        if len(envs) > 1 and not _defined_in_variants(p, stmts, s, envs, live):
            continue
        try:
            _exec_stmt(s, env)
        except Exception:  # noqa: BLE001
            if s.target is not None:
                env.pop(s.target, None)
            continue
        stmts.append(s)
        if s.target is not None:
            gen.names.append(s.target)
        for v in range(1, len(envs)):
            if live[v]:
                try:
                    _exec_stmt(s, envs[v])
                except Exception:  # noqa: BLE001 - eager rejects this call: the jitted one must too
                    live[v] = False
        if extra is not None and (e := extra()) is not None and not _ill_defined(e, env) and _runs(e, env):
            stmts.append(e)
            extras.append(e)
    rejected = False
    if rng.random() < error_rate:
        bad = gen.bad_inplace()
        try:
            for s in bad[:-1]:
                _exec_stmt(s, env)
            _exec_stmt(bad[-1], env)
        except Exception:  # noqa: BLE001 - the expected outcome
            stmts += bad
            gen.names += [s.target for s in bad if s.target is not None]
            rejected = True
    if extra is not None and not rejected and (bad := gen.extra_raising()):
        try:
            for s in bad:
                _exec_stmt(s, env)
        except Exception:  # noqa: BLE001 - the expected outcome (the env is read no more)
            stmts += bad
            extras += bad
    # returns: some intermediates and some inputs
    intermediates = [v for v in gen.names if v not in inputs]
    k = rng.choice((1, 1, 2, 2, 3))
    rets: list[str] = []
    for _ in range(k):
        pool = intermediates if intermediates and rng.random() < 0.7 else inputs
        v = rng.choice(pool)
        if v not in rets:
            rets.append(v)
    if p.kind != "basic":  # (not for basic: its stream stays the one of the fuzzer before the other generators)
        own = [s for s in stmts if not any(s is e for e in extras)]
        more = [v for v in getattr(gen, "extra_returns", list)() if v in intermediates]
        rets += [v for v in dict.fromkeys(more + _sinks(own, intermediates)) if v not in rets][: max(0, 5 - len(rets))]
        rets += [s.target for s in extras if s.target is not None][-3:]
    return p.replace(stmts=tuple(stmts), returns=tuple(rets))


def _runs(s: Stmt, env: dict) -> bool:
    """Run ``s`` on ``env``; whether eager ran it (else its target is unbound again)."""
    try:
        _exec_stmt(s, env)
    except Exception:  # noqa: BLE001
        if s.target is not None:
            env.pop(s.target, None)
        return False
    return True


# an identity test of identity_spellings.py: compares two tensors, reads no value of either
# (one side may be a conversion eager returns as the tensor itself: dtype_spellings.py)
_SIDE = r"\w+(?:\.conj\(\)|\.real|\.resolve_conj\(\)|\.to\(torch\.\w+\)|\.type_as\(\w+\))?"
_IDENTITY_TEST = re.compile(rf"\bif (?:id\({_SIDE}\) == id\({_SIDE}\)|{_SIDE} is (?:not )?{_SIDE}) else\b")


def _sinks(stmts: list[Stmt], intermediates: list[str]) -> list[str]:
    """The intermediates no later statement reads or views, last first: values that
    would otherwise be computed and never compared with eager."""
    used = set()
    for s in stmts:
        code = _IDENTITY_TEST.sub("", s.code)  # (Note [identity and list-key spellings keep the stream])
        used |= set(re.findall(r"\b\w+\b", code.split(" = ", 1)[-1] if s.target else code))
    return [v for v in reversed(intermediates) if v not in used]


def _defined_in_variants(p: Program, stmts: list[Stmt], s: Stmt, envs: list[dict], live: list[bool]) -> bool:
    """Whether ``s`` has one eager answer (or an eager error) on every live later variant."""
    for v in range(1, len(envs)):
        if not live[v] or not _ill_defined(s, envs[v]):
            continue
        trial = eager_env(p, v)  # a fresh run: the live env must not see s if s is dropped
        try:
            for earlier in stmts:
                _exec_stmt(earlier, trial)
            _exec_stmt(s, trial)
        except Exception:  # noqa: BLE001 - eager rejects it: a defined outcome
            continue
        return False
    return True
