"""Session 26's fuzz classes: ``x.item()`` as an operand and in Python decisions (gen_item.py), the dtype rules
of dtype_rules.py and refusals/tensor_arguments.py in the dtype generator (dtype_rule_stmts.py), and RNG
in-place methods in the edges generator (gen_edges.py, Note [random in-place methods]). Each class is generated
(its statements counted), and a few fixed seeds of each run through fusion_alias without a failure."""

import collections
import re

import pytest
import torch

import fusion_alias
from fusion_alias import fuzz
from fusion_alias.fuzz import dtype_rule_stmts
from fusion_alias.fuzz.driver import _expected_raise
from fusion_alias.fuzz import gen_edges
from fusion_alias.fuzz.gen_edges import RNG_METHODS, edge_class
from fusion_alias.fuzz.gen_item import DECISION_REFUSAL, DECISIONS, item_mode

needs_jit = pytest.mark.skipif(not hasattr(fusion_alias, "jit"), reason="fusion_alias.jit does not exist yet")


def _code(ps):
    return "\n".join(s.code for p in ps for s in p.stmts)


def _failures(report):
    return "\n\n".join(f"{f.status} [{f.schedule}]\n{f.shrunk_repro or f.repro}\n{f.detail}" for f in report.failures)


# --------------------------------------------------------------------------
# item(): Note [item() values in the fuzzer] (gen_item.py)
# --------------------------------------------------------------------------

# a piece of source of each decision kind (DECISIONS) and of the operand statements
DECISION_PIECES = {
    "if": r"^if .+ > \S+: \w+\.\w+_\(", "ternary": r" if .+ > \S+ else ", "max": r"(?<![.\w])max\(", "min": r"(?<![.\w])min\(",
    "int": r"(?<![.\w])int\(", "float": r"(?<![.\w])float\(", "round": r"(?<![.\w])round\(",
    "abs": r"(?<![.\w])abs\(", "bool": r"(?<![.\w])bool\(", "sorted": r"(?<![.\w])sorted\(\[",
}
OPERAND_PIECES = (
    r"^\w+\.(mul_|add_|sub_|fill_|clamp_|div_|lerp_)\(.*\.item\(\)",  # a number of a tensor's value, written in
    r"^t\d+ = .*\.item\(\)",  # ... and read out of place
    r"^n\d+ = \w+.*\.item\(\)$",  # a named number
    r"^\w+\[\d+\] = .*\.item\(\)",  # a setitem of one
    r"^\w+(\.\w+_\(|\[).*\bn\d+\b",  # a named number used by a later write
)


def _items(n=80, seed=40001):
    return [fuzz.generate_program(seed, i, generators=("item",)) for i in range(n)]


def test_item_generator_draws_operands_and_every_decision():
    ps = _items()
    assert all(p.kind == "item" for p in ps)
    modes = collections.Counter(item_mode(p) for p in ps)
    assert modes["operand"] >= 20 and modes["decision"] >= 20, modes
    decisions = [s for p in ps for s in p.stmts if s.must_refuse]
    kinds = collections.Counter(k for s in decisions for k, piece in DECISION_PIECES.items() if re.search(piece, s.code))
    assert set(kinds) == set(DECISIONS), kinds
    operand = "\n".join(s.code for p in ps for s in p.stmts if not s.must_refuse)
    for piece in OPERAND_PIECES:
        assert len(re.findall(piece, operand, re.M)) >= 3, piece
    # item() of memory the program wrote: the statement before reads the tensor it writes, or an alias of it
    assert sum(".item()" in s.code for s in decisions) >= 20
    for p in ps:  # a decision program holds a decision, and documents the DataDependentBranchError only
        decides = any(s.must_refuse for s in p.stmts)
        assert item_mode(p) == ("decision" if decides else "operand")
        assert p.refusals == ((DECISION_REFUSAL,) if decides else ())
        decision = re.compile(r"(?<![.\w])(max|min|int|float|round|abs|bool|sorted)\(|^if | if .*\.item\(\)|"
                              r" if n\d+ ")
        assert all(s.must_refuse or not decision.search(s.code) for s in p.stmts
                   if ".item()" in s.code or re.search(r"\bn\d+\b", s.code)), p.stmts


def test_item_generator_is_drawn_only_when_asked_for():
    assert all(fuzz.generate_program(40001, i).kind != "item" for i in range(40))
    assert all(fuzz.generate_program(40001, i, grad=True).kind != "item" for i in range(40))


def test_item_programs_agree_with_themselves_eagerly():
    report = fuzz.run_fuzz(programs=30, seed=40001, system="eager", generators=("item",))
    assert not report.failures and not report.jit_errors, _failures(report)
    assert report.ok >= 25, report.summary()


def _refuse(message, kind):
    def make_jit(fn, schedule):
        def run(*args):
            raise kind(message)
        return run
    return make_jit


def _first(mode):
    return next(p for p in _items(30) if item_mode(p) == mode)


@needs_jit
def test_a_decision_program_that_runs_or_an_operand_program_refused_is_a_failure():
    """A decision program whose jitted calls return (a system that runs it as eager does: every value right)
    is a missed rejection; eager, the stand-in, runs it. A DataDependentBranchError counts as refused only for a
    decision program (an operand program documents no refusal)."""
    from fusion_alias.item_branches import DataDependentBranchError

    decision, operand = _first("decision"), _first("operand")
    status, detail = fuzz.run_program(decision, "reads-first", make_jit=lambda fn, schedule: fn)
    assert status == "missed-rejection" and "must refuse" in detail, detail
    assert fuzz.run_program(decision, "reads-first", system="eager")[0] == "ok"
    message = ("fusion_alias: max() of a number computed from a tensor's value (x.item()) inside the compiled "
               "function is not supported: ...")
    for p, want in ((decision, "refused"), (operand, None)):
        status, detail = fuzz.run_program(p, "reads-first", make_jit=_refuse(message, DataDependentBranchError))
        assert status == "jit-raised", detail
        assert _expected_raise(p, "reads-first", detail, "fusion_alias", None, {p.name: ("ok", "")}) == want
    # another refusal of a decision program is a failure
    status, detail = fuzz.run_program(decision, "reads-first",
                                      make_jit=_refuse("fusion_alias: reshape: not supported", NotImplementedError))
    assert _expected_raise(decision, "reads-first", detail, "fusion_alias", None, {decision.name: ("ok", "")}) is None


@needs_jit
@pytest.mark.parametrize("grad", (False, True))
def test_item_generator_bounded(grad):
    """Fixed seeds: operand programs run as eager, decision programs are refused, with and without --grad."""
    report = fuzz.run_fuzz(seed=40001, only=[0, 1, 2, 4, 5, 6, 7, 8, 9, 10], generators=("item",), grad=grad,
                           log=print, do_shrink=False)  # (#3: test_item_fill_from_a_number_of_the_trace)
    print(report.summary())
    assert not report.failures and not report.jit_errors, _failures(report)
    assert report.ok >= (3 if grad else 5) * len(report.schedules), report.summary()
    assert report.refused_per_generator.get("item", 0) >= 3 * len(report.schedules), report.summary()


@needs_jit
def test_item_fill_from_a_number_of_the_trace():
    # session 26 campaign: x.fill_(v.item()) raised "fill_(): argument 'value' must be a Number or a 0-dim tensor,
    # not FloatProxy" where eager runs (inplace_lookasides.py's fill_ meta); fixed
    report = fuzz.run_fuzz(seed=40001, only=[3], generators=("item",), log=print, do_shrink=False)
    assert not report.failures, _failures(report)


# --------------------------------------------------------------------------
# dtype rules: Note [dtype-rule statements] (dtype_rule_stmts.py)
# --------------------------------------------------------------------------


def _record(monkeypatch):
    """The dtype-rule statements made while generating, as (class, raises, Stmt)."""
    made = []
    real = dtype_rule_stmts.RuleStatements._statement

    def statement(self, cls, raises):
        s = real(self, cls, raises)
        if s is not None:
            made.append((cls, raises, s))
        return s

    monkeypatch.setattr(dtype_rule_stmts.RuleStatements, "_statement", statement)
    return made


def test_dtype_generator_adds_every_rule_class_both_ways(monkeypatch):
    """Every class is kept in programs, where eager runs it (in the body) and where it raises (the last
    statement); the generator keeps one only where eager's outcome is the one drawn."""
    made = _record(monkeypatch)
    ps = [fuzz.generate_program(40002, i, generators=("dtype",)) for i in range(300)]
    kept = collections.Counter()
    for cls, raises, s in made:
        p = next((p for p in ps if any(t is s for t in p.stmts)), None)
        if p is not None:
            kept[cls, raises] += 1
            assert not raises or p.stmts[-1] is s  # (a raising one ends its program)
    for cls in dtype_rule_stmts.CLASSES:
        assert kept[cls, False] >= 5, (cls, kept)
        assert kept[cls, True] >= 1, (cls, kept)
    assert sum(kept[c, True] for c in dtype_rule_stmts.CLASSES) >= 20, kept
    # the operands are often aliases of the destination (the same memory)
    code = "\n".join(s.code for _, _, s in made)
    for piece in (r"alpha=True", r"alpha=0\.5", r"rounding_mode='floor'", r"true_divide_\(", r"atan2_\(",
                  r"copysign_\(", r"\.floor_\(\)", r"\.trunc_\(\)", r"\.ceil\(\)", r"\.round\(\)", r"\.abs\(\)",
                  r"\*\* True", r"pow_\(", r"lerp_\(", r"torch\.lerp\(", r"\.flatten\(\)\[0\]\)", r"addcdiv_\(",
                  r"addcmul_\(.*value=0\.5", r"logical_(and|or|xor)_?\((True|0|1|0\.5)\)",
                  r"logical_(and|or|xor)_?\(\w+", r" - \(\w+ > 0\)|sub_\(\(\w+ > 0\)\)|\(\w+ > 0\) - \w+",
                  r"clamp_\(0, (1e10|1e39)\)|fill_\(2\*\*40\)|hardtanh\(\w+, -",
                  r"functional\.(silu|gelu|softplus|elu|mish)\(", r"clamp_\(0, (2|0\.5)\)|clamp_\(min=-0\.5\)|clamp_max_\(2\.5\)|torch\.clamp\(\w+, False, True\)"):
        assert re.search(piece, code), piece


def test_dtype_rule_statements_raise_or_run_as_drawn():
    """The statements of each class against an environment of every kind of dtype (aliases among them): the
    outcome drawn is eager's, most of the time (an operand may partially overlap its destination)."""
    g = torch.Generator().manual_seed(0)
    bases = {"i": torch.randint(-8, 9, (4, 6), generator=g, dtype=torch.int32), "b": torch.rand(4, 6, generator=g) > 0.5,
             "f": torch.rand(4, 6, generator=g), "h": torch.rand(4, 6, generator=g).half(),
             "u": torch.randint(0, 17, (6,), generator=g, dtype=torch.uint8)}
    as_drawn = collections.Counter()
    for k in range(400):
        env = {n: t.clone() for n, t in bases.items()}
        env.update({"ti": env["i"][1:], "tb": env["b"].view(-1)[:6], "tf": env["f"].t()})
        rules = dtype_rule_stmts.RuleStatements(f"test:{k}", env, list(env))
        n = len(dtype_rule_stmts.CLASSES)
        cls, raises = dtype_rule_stmts.CLASSES[k % n], bool(k // n % 2)
        s = rules._statement(cls, raises)
        if s is None:
            continue
        try:
            exec(s.code, {"torch": torch}, env)
            raised = False
        except Exception:  # noqa: BLE001
            raised = True
        as_drawn[cls, raises, raised == raises] += 1
    for cls in dtype_rule_stmts.CLASSES:
        for raises in (False, True):
            good, bad = as_drawn[cls, raises, True], as_drawn[cls, raises, False]
            assert good >= 10 and good >= 3 * bad, (cls, raises, good, bad)


def test_dtype_rule_statements_keep_every_stream(monkeypatch):
    """Note [dtype-rule statements keep the stream]: without them, the same programs (statements and returns),
    these added."""
    from fusion_alias.fuzz import dtype_spellings

    # (session 34's reductions given a dtype draw a last statement where the rule statements drew none)
    monkeypatch.setattr(dtype_spellings, "P_REDUCTION_DTYPE", 0.0)
    cases = [(("dtype",), 20150, 40), (("dtype",), 7, 20), (("dtype",), 20710, 30), (None, 20123, 30)]
    drawn = {c: [fuzz.generate_program(c[1], i, generators=c[0] or fuzz.GENERATORS) for i in range(c[2])] for c in cases}
    monkeypatch.setattr(dtype_rule_stmts.RuleStatements, "extra", lambda self: None)
    monkeypatch.setattr(dtype_rule_stmts.RuleStatements, "raising", lambda self: [])
    added = 0
    for c, ps in drawn.items():
        for i, p in enumerate(ps):
            plain = fuzz.generate_program(c[1], i, generators=c[0] or fuzz.GENERATORS)
            rest = iter(p.stmts)
            assert all(any(s == t for t in rest) for s in plain.stmts), (c, i)  # plain's, in order, among p's
            assert p.returns[:len(plain.returns)] == plain.returns, (c, i)
            assert all(re.fullmatch(r"r\d+", r) for r in p.returns[len(plain.returns):]), (c, i)
            added += len(p.stmts) > len(plain.stmts)
    assert added >= 40


@needs_jit
@pytest.mark.parametrize("grad", (False, True))
def test_dtype_generator_with_rule_statements_bounded(grad):
    # (each with rule statements: eager runs them in #6 addcmul_, #9 lerp_, #13 pow, #15 div_ floor, and raises at
    # the last one of #11 (addcmul_ into an integer); #0's b ** True is refused by name)
    report = fuzz.run_fuzz(seed=40002, only=[0, 6, 9, 11, 13, 15], generators=("dtype",), grad=grad, log=print,
                           do_shrink=False)
    print(report.summary())
    assert not report.failures and not report.jit_errors, _failures(report)


# --------------------------------------------------------------------------
# RNG in-place methods: Note [random in-place methods] (gen_edges.py)
# --------------------------------------------------------------------------

RNG_INDICES = [11, 23, 53, 62, 71, 72, 78]  # the rng programs of seed 40001's first 100 edges programs


def test_edges_generator_draws_rng_methods_that_must_be_refused():
    ps = [fuzz.generate_program(40001, i, generators=("edges",)) for i in range(100)]
    rng = [i for i, p in enumerate(ps) if edge_class(p) == "rng"]
    assert rng == RNG_INDICES
    stmts = [s for i in rng for s in ps[i].stmts if s.must_refuse]
    methods = collections.Counter(re.search(r"\.(\w+_)\(", s.code).group(1) for s in stmts)
    assert methods["exponential_"] >= 5 and len(methods) >= 5, methods
    assert all("generator=torch.Generator().manual_seed(" in s.code for s in stmts)
    assert any(re.match(r"\w+\[.*\]\.\w+_\(", s.code) for s in stmts)  # through a view
    # no other class has one, but the store class's stores into an object argument (gen_edges.py, Note [a store
    # into an object argument])
    others = [(i, s) for i, p in enumerate(ps) if i not in rng for s in p.stmts if s.must_refuse]
    assert all(edge_class(ps[i]) == "store" and s.must_refuse == gen_edges.STORE_REFUSAL and re.match(r"b\.h\b", s.code)
               for i, s in others), others


@needs_jit
def test_edges_rng_programs_bounded():
    """exponential_ is refused by fusion_alias, the others by plain Thunder too; one that ran (here: as eager,
    every value right) would be a missed rejection (Note [statements fusion_alias must refuse])."""
    report = fuzz.run_fuzz(seed=40001, only=RNG_INDICES[:4], generators=("edges",), log=print, do_shrink=False)
    print(report.summary())
    assert not report.failures and not report.jit_errors, _failures(report)
    assert any("exponential_" in m for _, _, m in report.unsupported), report.unsupported
    statuses = []
    for i in RNG_INDICES:
        p = fuzz.generate_program(40001, i, generators=("edges",))
        status, detail = fuzz.run_program(p, "reads-first", make_jit=lambda fn, schedule: fn)
        statuses.append(status)
        assert status in ("missed-rejection", "both-raised") or not any(s.must_refuse for s in p.stmts), detail
    assert statuses.count("missed-rejection") >= 3, statuses
