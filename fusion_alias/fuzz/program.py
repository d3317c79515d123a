"""The fuzzer's data model: a program is base tensors, arguments over them,
tensors it reaches without arguments, the aliasing of each call, and a list of
statements over variable names (see Note [the repro is what ran] in the
package docstring)."""

from __future__ import annotations

import dataclasses

SYSTEMS = ("fusion_alias", "thunder", "thunder-skip", "eager")
PARAM_NAMES = ("a", "b", "c", "d")
CONSTANTS = (0.5, -0.25, 2.0, 0.75, -1.5, 0.125)

# The generators (generate_program picks one per program; see generator.py):
#   basic   float32 inputs that share memory, view / in-place / out-of-place statements
#   dtype   f16, bf16, f64, int32/int64, bool, complex64 bases; integer division, in-place type promotion
#   layout  reshape / flatten / repeat / expand().reshape() of layouts that are not viewable (copies)
#   hidden  tensors reached without arguments: globals, closure cells, module buffers, argument attributes
#   calls   one program called with changing aliasing of same-shaped inputs
#   strided writes into as_strided views whose elements overlap each other (refused), and their neighbours
#   fresh   in-place ops reading a fresh result of the tensor they write (x.div_(x.norm())), which must run
#   train   training calls (gen_train.py): a call under torch.no_grad() with an input that requires grad,
#           writes through diagonal() with gradients (refused), a write under grad mode then one under
#           no_grad read by the loss after the call, a running statistic of x.detach() over several steps;
#           drawn by default only with --grad (Note [training calls in the fuzzer])
#   edges   the classes of the session-11 probes (gen_edges.py): int8/uint8/int16, integer addcmul/lerp,
#           memory formats, Python bool keys, Tensor.unfold, stores into list/dict arguments, index_put
#           of values that require grad, foreach/broadcast_tensors aliasing; refusals only as documented
#   modules an nn.Module reached as the callable, an argument or a global: parameters that are views of one flat
#           tensor, tied weights, buffers, a global; optimizer/EMA/running-stat/KV-cache writes, .data, grad-mode
#           context managers; one module object per side over calls with changing aliasing (gen_modules.py);
#           drawn only when asked for (--generator modules), so the default streams stay as they were
#   order   in-place ops whose operand overlaps what they write at other indices (kept where eager runs them
#           in memory order: fusion_alias must refuse or match), written into views fusion_alias does not
#           replay (adjoint, as_strided; swapaxes, narrow until session 21) and results that keep a layout (a.t() * 2), and
#           masked_scatter_ from itself (gen_order.py); drawn only when asked for (--generator order)
#   autocast the basic generator's statements and products of 2-D tensors, about half under a bfloat16 torch.autocast
#           (gen_autocast.py); drawn only when asked for (--generator autocast)
#   nograd  a host that requires grad and arguments of its memory with another gradient (made under no_grad,
#           detached) or its own, changing from call to call; leaves that are views; copies of a tensor's own
#           values from another gradient, writes under no_grad read by views taken before them, index_fill_
#           with an index of its own memory (gen_nograd.py); drawn only when asked for (--generator nograd)
#   item    x.item() of tensors written in place (or views of written memory) as numbers in arithmetic, which must
#           run, and in Python decisions (if, max, int(), ...), which must be refused (gen_item.py); drawn only when
#           asked for (--generator item)
#   ties    tie-heavy bases (multiples of 1/2 and 1/4, exact zeros, zero rows) read and written through views by
#           ops whose gradient is decided at ties and zeros: max/min(dim), amax, prod, pow(0), normalize, clamp,
#           minimum, lerp, round, remainder... (gen_ties.py); drawn only when asked for (--generator ties)
GENERATORS = ("basic", "dtype", "layout", "hidden", "calls", "strided", "fresh", "train", "edges", "modules", "order",
              "autocast", "nograd", "item", "ties")
# how a float base is made with --grad (Program.base_grad; absent: "nonleaf", ``x_leaf * 1``; "leaf_view": a leaf
# that is a view of values that do not require grad, gen_nograd.py)
BASE_GRAD_KINDS = ("nonleaf", "leaf", "none", "leaf_view")

# Kinds of hidden tensors (Program.hidden); see source.py for how each is rendered.
HIDDEN_KINDS = ("global", "global_dict", "closure", "buffer", "attr")
ATTR_HOLDER = "o"  # the parameter whose attributes hold the "attr" tensors


@dataclasses.dataclass(frozen=True)
class Stmt:
    """One line of a program body.

    ``code`` is the full Python line (``t0 = a.t()``, ``a.tanh_()``,
    ``a[:, 1] = b``). ``target`` is the name it binds (or None), ``reads``
    the variables whose *values* it reads, ``writes`` the variable it mutates
    in place (or None), ``view_of`` the variable whose memory a view shares,
    ``inplace_result`` whether ``target`` is the result of the in-place op
    (and so has the identity of ``writes``). ``must_refuse``: why fusion_alias
    must refuse any program holding this statement (a Python decision on an
    ``item()``: gen_item.py); a jitted call that returns is a missed rejection
    (oracle.py, Note [statements fusion_alias must refuse]).
    """

    code: str
    target: str | None = None
    reads: tuple[str, ...] = ()
    writes: str | None = None
    view_of: str | None = None
    inplace_result: bool = False
    must_refuse: str | None = None


Exprs = tuple[tuple[str, str], ...]  # (name, expression over the bases)


@dataclasses.dataclass(frozen=True)
class Variant:
    """The aliasing of one call: every argument and hidden tensor as an expression over the bases.

    The bases are the same on every call (same seed, same values); only which memory each
    argument and hidden tensor is changes. Shapes are the same in every variant.
    """

    args: Exprs
    hidden: Exprs = ()
    # ``modules`` only: statements run on the call's module ``m`` after its arguments are made, rebinding
    # a parameter or buffer (of a submodule too) between calls (gen_modules.py, Note [state rebound between calls])
    state: tuple[str, ...] = ()


@dataclasses.dataclass(frozen=True)
class Program:
    """A generated program: base tensors, arguments derived from them, body.

    Call sequence (Note [calls with changing aliasing]): variant 0 (``args``,
    ``hidden``), variant 0 again (the cached call), then each of ``variants``,
    then variant 0 once more when there are any; every call is compared with
    eager on fresh inputs of its own variant.
    """

    name: str  # e.g. "seed 1 #17"
    input_seed: int
    bases: tuple[tuple[str, tuple[int, ...]], ...]  # (name, shape)
    args: Exprs  # (param name, expression over bases)
    stmts: tuple[Stmt, ...]
    returns: tuple[str, ...]
    grad: bool = False  # bases derived from leaves that require grad; gradients compared too
    kind: str = "basic"  # the generator that made it (GENERATORS)
    dtypes: tuple[tuple[str, str], ...] = ()  # (base name, torch dtype name) where not float32
    hidden: tuple[tuple[str, str, str], ...] = ()  # (variable, kind in HIDDEN_KINDS, expression over bases)
    variants: tuple[Variant, ...] = ()  # aliasings of the later calls
    # Note [training calls in the fuzzer] (gen_train.py); the defaults are the plain --grad oracle
    base_grad: tuple[tuple[str, str], ...] = ()  # (base, kind in BASE_GRAD_KINDS) where not "nonleaf"
    no_grad_call: bool = False  # eager and jitted called under torch.no_grad(); no backward
    loss_reads_args: bool = False  # the loss also reads the arguments that require grad, after the call
    carried: tuple[str, ...] = ()  # bases made on the first call and passed again (mutated) on every later one
    check_requires_grad: bool = False  # requires_grad of outputs, arguments and bases compared with eager
    # Note [one class per program, and the refusals it may get] (gen_edges.py): None, any clear refusal of
    # fusion_alias counts as refused; a tuple, only one whose message holds one of these (lowercase) pieces
    refusals: tuple[str, ...] | None = None
    tags: tuple[tuple[str, str], ...] = ()  # (key, value) a generator records (gen_edges: its class)
    # the variant index of each call where not the default order (gen_aliasing.py, Note [calls that come back to an
    # aliasing]); empty: ``calls``' default
    call_order: tuple[int, ...] = ()

    @property
    def params(self) -> tuple[str, ...]:
        return tuple(p for p, _ in self.args)

    @property
    def hidden_names(self) -> tuple[str, ...]:
        return tuple(h for h, _, _ in self.hidden)

    def dtype_of(self, base: str) -> str:
        return dict(self.dtypes).get(base, "float32")

    def grad_kind_of(self, base: str) -> str:
        return dict(self.base_grad).get(base, "nonleaf")

    @property
    def all_variants(self) -> tuple[Variant, ...]:
        """Variant 0 (``args``/``hidden``) followed by ``variants``."""
        return (Variant(self.args, tuple((h, e) for h, _, e in self.hidden)),) + self.variants

    @property
    def calls(self) -> tuple[int, ...]:
        """The variant index of each call, in order."""
        if self.call_order:
            return self.call_order
        later = tuple(range(1, len(self.variants) + 1))
        return (0, 0) + later + ((0,) if later else ())

    def replace(self, **kw) -> "Program":
        return dataclasses.replace(self, **kw)


class StatementBuilder:
    """The statements of one program as a generator draws them: fresh temporaries and appended statements
    (shared by the builders of gen_train.py and gen_nograd.py)."""

    def __init__(self, rng):
        self.rng = rng
        self.stmts: list[Stmt] = []
        self.counter = 0

    def tmp(self) -> str:
        t = f"t{self.counter}"
        self.counter += 1
        return t

    def add(self, code: str, **kw) -> None:
        self.stmts.append(Stmt(code, **kw))
