"""The edges generator: the classes found by hand-written probes (session 11) that no other
generator draws, each fixed by a refusal or by code that only hand tests covered.

Note [one class per program, and the refusals it may get]
    A program draws one class (``CLASSES``) and grows a body around it; its
    ``Program.refusals`` lists the refusals documented for that class (docs/limits.md),
    as pieces of their messages. The oracle counts a fusion_alias refusal of such a
    program as refused only when its message holds one of them; any other refusal is
    a failure (Note [what a raise of the jitted call counts as], driver.py):

        class          what it writes                                   documented refusal
        small_int      int8/uint8/int16: wraparound, casts, copy_       none: must match eager
                       between dtypes, zero_/fill_, bool results,
                       a.view(torch.uint8) (same size, other dtype)
        int_ops        integer addcmul/addcdiv/lerp, x - bool tensor    addcmul's float value
                       (eager raises or truncates)                      ("casts the value")
        memory_format  to(memory_format=), contiguous(channels_last)    to(memory_format=);
                       of inputs and intermediates (f32, f16, bf16,     contiguous() of a layout
                       int8, uint8), then writes (through views too)    made inside the program
        bool_key       x[True], x[:, False], x[True] = v; a third of    indexing with a Python bool
                       the programs: x[x > 0] = v, masked_fill_ (run)
        unfold         Tensor.unfold (reads; writes with step >= size)  Tensor.unfold
                       and F.unfold (must run)
        store          l.append(t), l[0] = t, d["k"] = t into a list    a tensor stored into
                       or dict argument                                 its argument
        index_put      h.index_put_((idx,), v), torch.index_put(...,    with --grad, index_put of
                       accumulate=True), h[idx] = v                     values that require grad
        foreach_alias  torch._foreach_*_ with a 0-dim value that        any clear refusal (needless
                       aliases a written tensor;                        ones today): never a wrong
                       broadcast_tensors(y, y)[0].add_(1)               value
        rng            x[1:].exponential_(generator=g), uniform_,       Tensor.exponential_ (and
                       normal_, bernoulli_, ... of written memory       the other RNG methods, which
                       (session 26; Note [random in-place methods])     plain Thunder lacks too)

    Note [random in-place methods]: ``exponential_`` is refused by name (inplace_lookasides.py, Note
    [exponential_ is refused]: Thunder draws other numbers than eager's generator), the other RNG methods
    (``uniform_``, ``normal_``, ``bernoulli_``, ``random_``, ``cauchy_``, ``log_normal_``, ``geometric_``) as
    methods Thunder lacks. Each is drawn with ``generator=torch.Generator().manual_seed(k)`` so eager's values
    are the same from run to run (the eager-against-eager harness), and carries ``Stmt.must_refuse``: a jitted
    call that returns is a missed rejection (oracle.py, Note [statements fusion_alias must refuse]). The
    class is drawn (probability 0.08) from a stream of its own seeded from ``rng``'s state, before the
    other classes' draw, so every other program of every seed is the one it was.

    Note [int32 views of float32]: the plain statements of every class (``_plain``) are spelled,
    some of the time, through a ``view(dtype)`` of the same element size (session 16): a view
    ``t = x.transpose(0, 1).view(torch.int32).view(torch.float32)`` (or through ``.detach()``),
    a write ``x.view(torch.int32).add_(1)`` (``mul_(2)``, ``neg_()``, ``zero_()``; of an int32
    tensor through ``view(torch.float32)``), a read ``(x.view(torch.int32) * 2).view(torch.float32)``
    (a float32 view of an int32 result in the layout eager gives it). Drawn from the basic
    generator's ``spell`` stream, with the shapes, dtypes and memory of every variable unchanged,
    so every seed's program is the one it was (gen_basic.py, Note [mask spellings keep the stream]).

    With ``--grad`` the refusals of calls that compute gradients (docs/limits.md, Autograd)
    are documented for every class. The entries of list/dict arguments are compared after
    the call like the arguments themselves (oracle.py), so a store that ran but was lost
    shows as a mismatch, not as a pass. A raise plain ``thunder.jit`` makes too stays
    "unsupported by Thunder" whatever the class.
"""

from __future__ import annotations

import random
import types

import torch

from fusion_alias.fuzz import dtype_spellings
from fusion_alias.fuzz.gen_basic import _Gen, _index_expr
from fusion_alias.fuzz.hazard import _has_internal_overlap, _overlaps
from fusion_alias.fuzz.own_stream_forms import own_stream
from fusion_alias.fuzz.program import PARAM_NAMES, Stmt

CLASSES = ("small_int", "int_ops", "memory_format", "bool_key", "unfold", "store", "index_put", "foreach_alias",
           "rng")
_CLASS_WEIGHTS = (3, 2, 3, 1, 1, 1, 1, 1)  # (of all but rng: Note [random in-place methods])
RNG_METHODS = ("exponential_()", "exponential_(lambd=2.0)", "uniform_(-1.0, 1.0)", "normal_(0.0, 0.5)",
               "bernoulli_(0.5)", "random_(0, 5)", "cauchy_()", "log_normal_()", "geometric_(0.5)")

# Note [a store into an object argument]
# --------------------------------------
# The ``store`` class's list or dict argument is, in ``P_OBJECT_STORE`` of its programs, held by an object
# argument instead (``b = types.SimpleNamespace(h=[])``, then ``b.h.append(t)``), drawn from a stream of its own
# (every other program is the one it was). Session 37: such a store left TensorProxies in ``b.h`` after the call,
# silently, or raised Thunder's "expected Tensor, got TensorProxy" (leaked_proxies.py). The oracle compares list
# and dict arguments after the call, not an object's attributes, so the store carries ``Stmt.must_refuse``: a
# jitted call that returns is a missed rejection. (``STORE_REFUSAL`` is a piece of the refusal's message.)
P_OBJECT_STORE = 0.4
STORE_REFUSAL = "stores a tensor into its argument"

# Note [one class per program, and the refusals it may get]: pieces of the documented refusals' messages
REFUSALS = {
    "small_int": (),
    "int_ops": ("casts the value to the integer type", "thunder 0.2.6's trace says"),  # (dtype_rules.py, Note [a result
    # type Thunder infers from a 0-d tensor's history]: an int8 addcmul of a 0-d int64 tensor, edges seed 37606 #38)
    "memory_format": ("tensor.to(memory_format=", ".contiguous() returns", "cannot tell whether"),
    "bool_key": ("indexing with a python bool",),
    "unfold": ("tensor.unfold is not supported",),
    "store": ("stores a tensor into its argument",),
    "index_put": ("index_put (accumulate=",),
    "foreach_alias": ("not supported", "unsupported"),
    # (the others too: where plain Thunder fails first for another reason, their refusal is not "unsupported by Thunder")
    "rng": tuple(dict.fromkeys(f"tensor.{m.split('(')[0]} is not supported" for m in RNG_METHODS)),
}
GRAD_REFUSALS = ("computes gradients", "require grad")
# ... and in every class, the documented refusal of an identity test of ``contiguous()`` (or ``resolve_neg()``, a
# complex ``resolve_conj()``; docs/limits.md), whose answer follows the call's layout: the identity spelling
# (dtype_spellings.identity_factor) is drawn in every edges program (session 36: ``--grad`` seed 31056 #17,
# ``a is not t0.real`` of ``t0 = a.contiguous(memory_format=torch.channels_last)``, counted as a jit error)
IDENTITY_REFUSALS = ("an identity test (`is`, `id()`) of",)

_SMALL_INT = ("int8", "uint8", "int16")
_INT = ("int8", "int16", "int32", "int64")
_FLAT = ((4, 6), (4, 4), (6,), (2, 3, 4))
_NCHW = (2, 3, 4, 5)  # channels_last examples: a base of (2, 4, 5, 3) permuted is an NCHW channels_last argument


def edge_class(p) -> str | None:
    """The class a program of this generator was drawn for (None for other generators)."""
    return dict(p.tags).get("edge_class") if p.kind == "edges" else None


def edges_inputs(rng: random.Random) -> dict:
    if random.Random(str(rng.getstate()[1][:16]) + ":rng-class").random() < 0.08:  # (Note [random in-place
        cls = "rng"  # methods])
    else:
        cls = rng.choices(CLASSES[:-1], _CLASS_WEIGHTS)[0]
    shape = rng.choice(_FLAT)
    bases, dtypes = [("x0", shape)], []
    args = [("a", "x0")]
    if cls in ("small_int", "int_ops"):
        dtypes.append(("x0", rng.choice(_SMALL_INT if cls == "small_int" else _INT)))
        other = rng.choice(_SMALL_INT + ("float32", "int32", "bool") if cls == "small_int" else _INT + ("bool",))
        bases.append(("x1", shape))
        if other != "float32":
            dtypes.append(("x1", other))
        args.append(("b", "x1"))
        if rng.random() < 0.4:  # a view of a as a third argument
            args.append(("c", rng.choice(("x0[0]", "x0.view(-1)", "x0[1:]") if len(shape) > 1 else ("x0[1:]",))))
    elif cls == "memory_format":
        n, c, h, w = _NCHW
        bases = [("x0", (n, h, w, c) if rng.random() < 0.6 else _NCHW)]
        dtype = rng.choices(("float32", "float16", "bfloat16", "int8", "uint8"), (6, 1, 1, 1, 1))[0]
        if dtype != "float32":  # (small dtypes in channels_last copies and views)
            dtypes.append(("x0", dtype))
        args = [("a", "x0.permute(0, 3, 1, 2)" if bases[0][1] != _NCHW else "x0")]
        if rng.random() < 0.4:
            args.append(("b", "x0"))  # the base itself (NHWC view of the same memory, or the same tensor)
    elif cls == "store":
        held = rng.choice(("[]", "[x0[0] * 0]", "{}", "{'k': x0[0] * 0}"))
        if own_stream(rng, "edges-object-store").random() < P_OBJECT_STORE:  # Note [a store into an object argument]
            held = f"__import__('types').SimpleNamespace(h={held})"
        args.append(("b", held))
    elif cls == "index_put":
        bases = [("x0", (4, 6)), ("x1", (2, 6))]
        args = [("a", "x0"), ("b", "x1")]
    elif rng.random() < 0.5:  # a view of a
        args.append(("b", rng.choice(("x0", "x0[0]", "x0.view(-1)")) if len(shape) > 1 else "x0[1:]"))
    return {"bases": tuple(bases), "args": tuple(args), "dtypes": tuple(dtypes),
            "tags": (("edge_class", cls),), "refusals": REFUSALS[cls]}


class EdgesGen(_Gen):
    """Statements of the program's class (about half), among plain views, writes and reads."""

    def __init__(self, rng, env, names):
        super().__init__(rng, env, names)
        self.cls = "small_int"  # the program's class: ``configure``
        self.lists = [v for v, t in env.items() if isinstance(t, (list, dict))]
        self.objects = [v for v, t in env.items() if isinstance(t, types.SimpleNamespace)]
        self.functional_unfold = self.masks_only = False
        # dtype_spellings.py, Note [conjugate views and identity tests in dtype programs keep the stream]
        self.dtype_spell = random.Random(str(rng.getstate()[1][:16]) + ":edges-identity")

    def configure(self, p) -> None:
        """Take the class drawn with the program's inputs (``edges_inputs``)."""
        self.cls = edge_class(p)
        # a third of the unfold programs use F.unfold only: a Tensor.unfold gets the whole program refused
        self.functional_unfold = self.cls == "unfold" and self.rng.random() < 0.35
        # ... and a third of the bool_key programs use bool tensor masks only
        self.masks_only = self.cls == "bool_key" and self.rng.random() < 0.35

    def dtype(self, v: str) -> str:
        return str(self.env[v].dtype).removeprefix("torch.")

    def pick(self, writable: bool = False) -> str:
        """As the basic generator's, among the tensors with elements (``x[False]`` has none)."""
        names = self.names
        self.names = [v for v in names if self.env[v].numel() > 0] or names
        try:
            return super().pick(writable)
        finally:
            self.names = names

    def statement(self) -> Stmt:
        if self.rng.random() < 0.55:
            return getattr(self, f"_{self.cls}")()
        return self._plain()

    # --- plain statements that every class mixes in (well supported: no refusal expected) ---

    def _plain(self) -> Stmt:
        rng, x = self.rng, self.pick()
        kind = rng.choices(("view", "write", "read"), (2, 3, 3))[0]
        sh = self.shape(x)
        if kind == "view" and sh:
            t = self.fresh()
            e = rng.choice([f"{x}{_index_expr(rng, sh)}"] + ([f"{x}.transpose(0, 1)"] if len(sh) >= 2 else [])
                           + [f"{x}.unsqueeze(0)"])
            if self.dtype(x) in ("float32", "int32") and self.spell_drawn(0.3):  # Note [int32 views of float32]
                other = "int32" if self.dtype(x) == "float32" else "float32"
                e = self.spell.choice((f"{e}.view(torch.{other}).view(torch.{self.dtype(x)})",
                                       f"{e}.detach().view(torch.{other}).view(torch.{self.dtype(x)})"))
            return Stmt(f"{t} = {e}", target=t, view_of=x)
        if kind == "write":
            x = self.pick(writable=True)
            y = self.operand(x, inplace=True)
            op = rng.choice(("add_(1)", "mul_(2)", "neg_()", "zero_()", f"add_({y})", f"copy_({y})"))
            reads = (x, y) if self._is_var(y) and y in op else (x,)
            if op.startswith("copy_"):
                reads = (y,) if self._is_var(y) else ()
            if op in ("add_(1)", "mul_(2)", "neg_()", "zero_()") and self.dtype(x) in ("float32", "int32") \
                    and self.spell_drawn(0.3):  # Note [int32 views of float32]
                other = "int32" if self.dtype(x) == "float32" else "float32"
                return Stmt(f"{x}.view(torch.{other}).{op}", reads=reads, writes=x)
            return Stmt(f"{x}.{op}", reads=reads, writes=x)
        t = self.fresh()
        e = rng.choice((f"{x} + 0", f"{x} * 2", f"{x}.sum()", f"{x}.clone()", f"{x} > 0"))
        if e in (f"{x} + 0", f"{x} * 2") and self.dtype(x) == "float32" and self.spell_drawn(0.3):
            e = f"({x}.view(torch.int32){e[len(x):]}).view(torch.float32)"  # Note [int32 views of float32]
        e = dtype_spellings.identity_factor(self.dtype_spell, self.env, self.names, self.same_as, e)
        return Stmt(f"{t} = {e}", target=t, reads=(x,))

    # --- the classes ---

    def _small_int(self) -> Stmt:
        rng = self.rng
        x = self.pick(writable=True)
        y = self.operand(x, inplace=True)
        t = self.fresh()
        kind = rng.choices(("wrap", "cast", "fill", "copy", "bool", "reinterpret", "unary"), (4, 3, 2, 3, 2, 2, 2))[0]
        if kind == "wrap":
            op = rng.choice(("mul_(100)", "add_(120)", "sub_(200)", "mul_(37)", f"mul_({y})", f"add_({y})"))
            if rng.random() < 0.3:
                return Stmt(f"{t} = {x} * {rng.choice((50, 127, 255, -3))}", target=t, reads=(x,))
            return Stmt(f"{x}.{op}", reads=(x, y) if y in op else (x,), writes=x)
        if kind == "cast":
            to = rng.choice(("int8", "uint8", "int16", "int32", "float32", "bool", "float16"))
            return Stmt(f"{t} = {x}.to(torch.{to})", target=t, reads=(x,))
        if kind == "fill":
            return Stmt(rng.choice((f"{x}.zero_()", f"{x}.fill_(5)", f"{x}.fill_(-3)", f"{x}.fill_(255)",
                                    f"{x}.fill_({y}.flatten()[0])" if self._is_var(y) else f"{x}.fill_(7)")),
                        reads=(y,) if self._is_var(y) else (), writes=x)
        if kind == "copy":
            src = rng.choice([v for v in self.names if self.shape(v) == self.shape(x)] or [x])
            if rng.random() < 0.3:
                return Stmt(f"{x}.copy_({src} * 40)", reads=(src,), writes=x)
            return Stmt(f"{x}.copy_({src})", reads=(src,), writes=x)
        if kind == "bool":
            e = rng.choice((f"{x} > {y}", f"{x} == {y}", f"{x}.bool()", f"~({x} > 0)", f"({x} > 0) & ({x} < 5)",
                            f"torch.where({x} > 0, {x}, {y})"))
            return Stmt(f"{t} = {e}", target=t, reads=(x, y) if self._is_var(y) else (x,))
        if kind == "reinterpret" and self.dtype(x) in ("int8", "uint8"):
            other = "uint8" if self.dtype(x) == "int8" else "int8"
            if rng.random() < 0.5:
                return Stmt(f"{x}.view(torch.{other}).add_(100)", reads=(x,), writes=x)
            return Stmt(f"{t} = {x}.view(torch.{other})", target=t, view_of=x)
        return Stmt(f"{x}.{rng.choice(('neg_()', 'abs_()', 'bitwise_not_()', 'clamp_(-3, 3)', 'floor_divide_(3)'))}",
                    reads=(x,), writes=x)

    def _int_ops(self) -> Stmt:
        rng = self.rng
        x = self.pick(writable=True)
        y = self.operand(x, inplace=True)
        y = y if self._is_var(y) else x
        t = self.fresh()
        value = rng.choice(("2", "3", "-1", "0.5", "1.5"))
        e = rng.choice((f"{x}.addcmul_({y}, {y}, value={value})", f"torch.addcmul({x}, {y}, {x}, value={value})",
                        f"{x}.addcdiv_({y}, {y}.abs() + 1)", f"{x}.lerp_({y}, 0.5)", f"torch.lerp({x}, {y}, 0.5)",
                        f"{x} - ({y} > 0)", f"{x}.sub_({y} > 0)", f"({x} > 0) - {y}", f"{x} + ({y} > 0)",
                        f"{x}.addcmul_({y}, {y})"))
        reads = (x, y)
        if e.startswith(f"{x}.") and e[len(x) + 1:].split("(")[0].endswith("_"):
            return Stmt(e, reads=reads, writes=x)
        return Stmt(f"{t} = {e}", target=t, reads=reads)

    def _memory_format(self) -> Stmt:
        rng = self.rng
        x = rng.choice([v for v in self.names if self.env[v].dim() == 4] or self.names)
        t = self.fresh()
        if self.env[x].dim() != 4:
            return self._plain()
        fmt = rng.choice(("torch.channels_last", "torch.channels_last", "torch.contiguous_format",
                          "torch.preserve_format"))
        src = rng.choice((x, x, f"({x} * 2)", f"{x}.permute(0, 2, 3, 1).permute(0, 3, 1, 2)"))
        kind = rng.choices(("contiguous", "to", "write", "read"), (4, 2, 4, 2))[0]
        if kind == "contiguous":
            return Stmt(f"{t} = {src}.contiguous(memory_format={fmt})", target=t, view_of=x)
        if kind == "to":
            return Stmt(f"{t} = {src}.to(memory_format={fmt})", target=t, view_of=x)
        if kind == "write":  # (through a view too: the NHWC view of a channels_last tensor, a channel)
            w = self.pick(writable=True)
            op = rng.choice(("add_(1.0)", "mul_(2.0)", "zero_()", "[0] = 0.5", "[:, 1] = -1.0", "[..., 0].neg_()")
                            + ((".permute(0, 2, 3, 1)[0].mul_(2.0)", ".transpose(1, 3)[:, 0].add_(1.0)")
                               if self.env[w].dim() == 4 else ()))
            if op.startswith("."):
                return Stmt(f"{w}{op}", reads=(w,), writes=w)
            code = f"{w}{op}" if op.startswith("[") else f"{w}.{op}"
            return Stmt(code, reads=() if " = " in code else (w,), writes=w)
        e = rng.choice((f"{x} + 0", f"{x}.sum((2, 3))", f"{x}.view(-1)" if self.env[x].is_contiguous() else f"{x} * 1"))
        return Stmt(f"{t} = {e}", target=t, reads=(x,))

    def _bool_key(self) -> Stmt:
        rng = self.rng
        x = self.pick(writable=True)
        t = self.fresh()
        nd = self.env[x].dim()
        if self.masks_only:  # the neighbours: bool tensor masks, which must run (x[mask] reads: Thunder lacks them)
            v = rng.choice(("0.5", "-1.0"))
            if rng.random() < 0.5 and nd:
                mask = ", ".join(rng.choice(("True", "False")) for _ in range(self.shape(x)[0]))
                return Stmt(f"{x}[torch.tensor([{mask}])] = {v}", writes=x)
            w = rng.choice((x, f"{x}.t()" if nd == 2 else x))
            return Stmt(rng.choice((f"{w}[{w} > 0] = {v}", f"{w}.masked_fill_({w} < 0, {v})")), reads=(x,), writes=x)
        key = rng.choice(("[True]", "[False]", "[True, 0]" if nd else "[True]", "[:, True]" if nd else "[True]",
                          "[:, False]" if nd else "[False]", "[..., True]"))
        kind = rng.choice(("read", "view", "write", "setitem"))
        if kind == "read":
            return Stmt(f"{t} = {x}{key} * 2", target=t, reads=(x,))
        if kind == "view":
            return Stmt(f"{t} = {x}{key}", target=t, view_of=x)
        if kind == "write":
            return Stmt(f"{x}{key}.{rng.choice(('add_(1.0)', 'mul_(2.0)', 'zero_()'))}", reads=(x,), writes=x)
        return Stmt(f"{x}{key} = {rng.choice(('0.5', '-1.0'))}", writes=x)

    def _unfold(self) -> Stmt:
        rng = self.rng
        x = self.pick()
        sh = self.shape(x)
        t = self.fresh()
        if not sh:
            return self._plain()
        d = rng.randrange(len(sh))
        n = sh[d]
        size = rng.randint(1, n)
        step = rng.randint(1, n)
        if self.functional_unfold or rng.random() < 0.2:  # the functional one (im2col): must run
            e = (f"{x}[None, None], (2, 2)" if len(sh) == 2 and min(sh) >= 2 else f"{x}.reshape(1, 1, 1, -1), (1, 2)")
            return Stmt(f"{t} = torch.nn.functional.unfold({e})", target=t, reads=(x,))
        kind = rng.choice(("view", "read", "write"))
        if kind == "write":  # windows apart (step >= size), so eager's write is defined
            step = max(step, size)
            w = self.pick(writable=True)
            if self.env[w].dim() > d and self.shape(w)[d] >= size:
                return Stmt(f"{w}.unfold({d}, {size}, {step}).{rng.choice(('add_(1.0)', 'mul_(2.0)', 'zero_()'))}",
                            reads=(w,), writes=w)
        if kind == "view":
            return Stmt(f"{t} = {x}.unfold({d}, {size}, {step})", target=t, view_of=x)
        return Stmt(f"{t} = {x}.unfold({d}, {size}, {step}).sum(-1)", target=t, reads=(x,))

    def _store(self) -> Stmt:
        rng = self.rng
        # (a list or dict argument, or one held by an object argument: Note [a store into an object argument])
        held = [(v, self.env[v], None) for v in self.lists] + [(f"{v}.h", self.env[v].h, STORE_REFUSAL) for v in self.objects]
        if not held:
            return self._plain()
        holder, value, must_refuse = held[0]
        x = self.pick()
        e = rng.choice((f"{x} * 2", f"{x} + 1", x, f"{x}[0]"))
        if isinstance(value, dict):
            return Stmt(f"{holder}[{rng.choice(('k', 'new'))!r}] = {e}", reads=(x,), must_refuse=must_refuse)
        if value and rng.random() < 0.5:
            return Stmt(f"{holder}[0] = {e}", reads=(x,), must_refuse=must_refuse)
        return Stmt(f"{holder}.append({e})", reads=(x,), must_refuse=must_refuse)

    def _index_put(self) -> Stmt:
        rng = self.rng
        h = rng.choice([v for v in self.names if self.shape(v) == (4, 6)] or ["a"])
        vals = [v for v in self.names if self.shape(v) in ((2, 6), (6,))]
        if h not in self.env or not vals:
            return self._plain()
        v = rng.choice(vals)
        v_expr = rng.choice((v, f"{v} * 2", f"{v}.detach()"))
        idx = rng.choice(("torch.tensor([0, 2])", "torch.tensor([3, 1])", "torch.tensor([1, 1])"))
        acc = rng.choice(("True", "False"))
        if idx.endswith("[1, 1])") and acc == "False":
            idx = "torch.tensor([1, 2])"  # (duplicate indices without accumulate: eager's choice is arbitrary)
        t = self.fresh()
        code = rng.choice((f"{h}.index_put_(({idx},), {v_expr}, accumulate={acc})",
                           f"{t} = torch.index_put({h}, ({idx},), {v_expr}, accumulate={acc})",
                           f"{h}[{idx}] = {v_expr}", f"{h}.index_add_(0, {idx}, {v_expr} if {v_expr}.dim() == 2 else {v_expr}.expand(2, 6))"))
        if code.startswith(f"{t} = "):
            return Stmt(code, target=t, reads=(h, v))
        return Stmt(code, reads=(h, v), writes=h)

    def _foreach_alias(self) -> Stmt:
        rng = self.rng
        x = self.pick(writable=True)
        others = [v for v in self.names if not _has_internal_overlap(self.env[v])]
        y = rng.choice(others)
        scalar_of = rng.choice(self.names)
        zero_dim = f"{scalar_of}[{', '.join('0' for _ in self.shape(scalar_of))}]" if self.shape(scalar_of) else scalar_of
        kind = rng.choice(("foreach", "foreach", "broadcast", "broadcast_other"))
        if kind == "foreach":
            op = rng.choice(("add_", "mul_", "sub_"))
            lst = f"[{x}]" if rng.random() < 0.5 or y == x else f"[{x}, {y}]"
            value = rng.choice((zero_dim, f"{zero_dim} * 1"))
            return Stmt(f"torch._foreach_{op}({lst}, {value})", reads=tuple(dict.fromkeys((x, y, scalar_of))), writes=x)
        if kind == "broadcast":
            return Stmt(f"torch.broadcast_tensors({x}, {x})[{rng.choice((0, 1))}].{rng.choice(('add_(1.0)', 'mul_(2.0)'))}",
                        reads=(x,), writes=x)
        if _overlaps(self.env[x], self.env[y]) or not self._broadcasts_into(y, x):
            y = x
        return Stmt(f"torch.broadcast_tensors({x}, {y})[0].add_(1.0)", reads=(x,), writes=x)

    def _rng(self) -> Stmt:
        """An RNG in-place method into written memory (a view of an argument, often), drawn from a generator
        of its own (Note [random in-place methods])."""
        rng = self.rng
        x = self.pick(writable=True)
        if not self.env[x].is_floating_point():
            return self._plain()
        sh = self.shape(x)
        w = rng.choice((x, x, f"{x}{_index_expr(rng, sh)}" if sh else x))
        method = rng.choice(RNG_METHODS[:2] if rng.random() < 0.5 else RNG_METHODS[2:])  # (exponential_: half)
        g = f"generator=torch.Generator().manual_seed({rng.randrange(100)})"
        call = f"{method[:-1]}{', ' if method[-2] != '(' else ''}{g})"
        why = f"Tensor.{method.split('(')[0]}: not eager's generator stream (inplace_lookasides.py)"
        if w == x and rng.random() < 0.3:
            t = self.fresh()
            self.same_as[t] = x
            return Stmt(f"{t} = {x}.{call}", target=t, writes=x, inplace_result=True, must_refuse=why)
        return Stmt(f"{w}.{call}", writes=x, must_refuse=why)  # (it reads no value of x)

    def _broadcasts_into(self, v: str, x: str) -> bool:
        try:
            return tuple(torch.broadcast_shapes(self.shape(v), self.shape(x))) == self.shape(x)
        except RuntimeError:
            return False

    def bad_inplace(self) -> list[Stmt]:
        """A statement of the class that eager rejects (overflowing fills, integer lerp/addcdiv, a bool
        subtrahend, view(-1) of a channels_last tensor), else the plain ones."""
        rng, x = self.rng, self.pick(writable=True)
        if self.cls == "small_int":
            return [Stmt(f"{x}.{rng.choice(('fill_(300)', 'fill_(-200)', 'add_(0.5)', 'div_(2)'))}", reads=(x,), writes=x)]
        if self.cls == "int_ops":
            y = rng.choice(self.names)
            return [Stmt(rng.choice((f"{x}.lerp_({y}, 0.5)", f"{x}.addcdiv_({y}, {y}.abs() + 1)", f"{x}.sub_({y} > 0)")),
                         reads=(x, y), writes=x)]
        if self.cls == "memory_format":
            cl = [v for v in self.names if self.env[v].dim() == 4 and not self.env[v].is_contiguous()]
            if cl:
                v = rng.choice(cl)
                return [Stmt(f"{v}.view(-1).add_(1.0)", reads=(v,), writes=v)]
        return super().bad_inplace()
