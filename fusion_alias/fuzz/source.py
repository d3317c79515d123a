"""Rendering a program as Python source: ``make_inputs()``, ``def prog(...)``
and ``make_jit(fn, schedule)`` (Note [the repro is what ran])."""

from __future__ import annotations

from fusion_alias.fuzz.program import Program


def _make_inputs_source(p: Program) -> str:
    lines = [
        "def make_inputs():",
        f"    g = torch.Generator().manual_seed({p.input_seed})",
    ]
    for name, shape in p.bases:
        if p.grad:  # a leaf that requires grad, and the base: a non-leaf eager may write into
            lines.append(f"    {name}_leaf = (torch.rand({shape!r}, generator=g) * 2 - 1).requires_grad_()")
            lines.append(f"    {name} = {name}_leaf * 1")
        else:
            lines.append(f"    {name} = torch.rand({shape!r}, generator=g) * 2 - 1")
    bases = ", ".join(n for n, _ in p.bases)
    args = ", ".join(e for _, e in p.args)
    if p.grad:
        leaves = ", ".join(f"{n}_leaf" for n, _ in p.bases)
        lines.append(f"    return [{bases}], [{args}], [{leaves}]")
    else:
        lines.append(f"    return [{bases}], [{args}]")
    return "\n".join(lines) + "\n"


def _prog_source(p: Program) -> str:
    lines = [f"def prog({', '.join(p.params)}):"]
    lines += [f"    {s.code}" for s in p.stmts]
    lines.append(f"    return ({''.join(r + ', ' for r in p.returns).rstrip()})")
    return "\n".join(lines) + "\n"


def _make_jit_source(system: str, unsafe: bool) -> str:
    if system == "fusion_alias":
        extra = ", unsafe_ignore_hazards=True" if unsafe else ""
        body = (
            "    import fusion_alias\n"
            f'    return fusion_alias.jit(fn, backend="reference", schedule=schedule{extra})\n'
        )
    elif system == "thunder":
        body = "    import thunder\n    return thunder.jit(fn)\n"
    elif system == "thunder-skip":
        body = "    import thunder\n    return thunder.jit(fn, skip_inplace_alias_updates=True)\n"
    elif system == "eager":
        body = "    return fn\n"
    else:  # a Python callable given to the API; not renderable
        body = "    raise NotImplementedError('custom system under test: supply make_jit')\n"
    return "def make_jit(fn, schedule):\n" + body
