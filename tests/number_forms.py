"""What the tests of the hidden generator's number forms share (fuzz/hidden_numbers.py, the module Note's last
paragraphs): the forms drawn from streams of their own since session 38, each with its gate, in the order they
redraw a program's kind; forcing one of them; and the check every form's test makes of the programs it draws.

A test that pins the hidden stream (a digest, a program's statements) turns the later forms off with
``forms_off``: a form added later needs one line here (``LATER_FORMS``), none in those tests.
"""

from fusion_alias.fuzz import (hidden_copied_reads, hidden_function_args, hidden_methods, hidden_numbers,
                               hidden_opaque_reads, hidden_own_defaults, hidden_stale_reads, oracle)
from helpers import generated_programs

# (the session that added it, form, its gate), in the order ``hidden_numbers`` redraws a kind through them
LATER_FORMS = ((38, hidden_own_defaults, "P_OWN_DEFAULT"), (39, hidden_opaque_reads, "P_OPAQUE_READ"),
               (40, hidden_stale_reads, "P_STALE_READ"), (41, hidden_copied_reads, "P_COPIED_READ"))


def forms_off(monkeypatch, since: int = 38) -> None:
    """The gate of every form of ``LATER_FORMS`` added in session ``since`` or later 0."""
    for session, form, gate in LATER_FORMS:
        if session >= since:
            monkeypatch.setattr(form, gate, 0.0)


def force(monkeypatch, form, p: float = 1.0) -> None:
    """Every program holds one number, a ``number_default`` or a ``number_helper`` one (half each), which ``form``
    (one of ``LATER_FORMS``) redraws with probability ``p``; every other form off."""
    monkeypatch.setattr(hidden_numbers, "P_NUMBER", 1.0)
    monkeypatch.setattr(hidden_numbers, "KINDS", ("number_default",))
    monkeypatch.setattr(hidden_numbers, "P_HELPER", 0.5)
    monkeypatch.setattr(hidden_methods, "P_METHOD", 0.0)
    monkeypatch.setattr(hidden_function_args, "P_FUNCTION_ARG", 0.0)
    for _, other, gate in LATER_FORMS:
        monkeypatch.setattr(other, gate, p if other is form else 0.0)


def number_kind(p) -> str:
    """The kind of program ``p``'s number."""
    (kind,) = [k for h, k, _ in p.hidden if h == hidden_numbers.NAME]
    return kind


def check_every_kind_drawn(monkeypatch, form, seed: int, programs: int = 30) -> None:
    """Of ``programs`` programs of ``seed``: with ``form`` off each holds a kind it redraws; forced, each holds one of
    its kinds, with the same statements and arguments otherwise, read and installed as ``hidden_numbers`` says, and
    a last call with the first one's aliasing and another number (a stale number shows); every kind is drawn."""
    force(monkeypatch, form, 0.0)
    plain = generated_programs(("hidden",), seed, programs)
    force(monkeypatch, form)
    seen = set()
    for p, q in zip(plain, generated_programs(("hidden",), seed, programs)):
        assert number_kind(p) in form.PARENTS
        kind = number_kind(q)
        kept = tuple(st for st in p.stmts if st.must_refuse != hidden_numbers.CHANGED)  # (a base kind's only)
        assert kind in form.KINDS and kept == q.stmts and p.args == q.args
        seen.add(kind)
        src = oracle.program_source(q)
        assert hidden_numbers.install("n0", kind) in src and f"    n0 = {hidden_numbers.access('n0', kind)}" in src
        first, last = q.all_variants[0], q.all_variants[-1]  # (hidden_numbers._with_extra: a stale number shows)
        assert first.args == last.args and dict(first.hidden)["n0"] != dict(last.hidden)["n0"]
    assert seen == set(form.KINDS)
