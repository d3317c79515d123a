"""The ``modules`` generator's buffers rebound, in the forward, to a view made in the call (``gen_modules.py``,
``modules_outside.py``).

Note [a buffer rebound to a view made in the call, generated]
    Session 44 (epilogue_stores.py, Note [a view stored over the buffer it views]): ``self.x = self.x.view(4)``,
    ``self.x = self.b[:]`` and ``self.run_mean = self.b.detach()`` (where the buffer already was that memory) left the
    buffer the object it was, where eager's is a new tensor object over the same memory. The generator rebound buffers
    only to new values (``m.ema = m.ema * 0.9 + ...``, Note [rebinding a buffer]) and to ``m.b.detach()``, and its
    driver compared which state names are one object, not whether a name is the object it was. Some programs' forward
    holds statements (each from ``_forms``, over the state the program's module has, shapes kept)::

        m.run_mean = m.run_mean.view(4)         m.mom = m.mom.view(16).view(4, 4)
        m.run_var = m.u[:]                      m.kv = m.kv[:]
        m.ema = m.b.detach()                    m.u = m.u.view(1, 4)[0]
        m.run_mean = m.run_var                  m.scale = m.scale.detach()   (a plain tensor attribute)

    sometimes under ``torch.no_grad()``, and before a later call ``m.u = m.u[:]`` or ``m.u = m.u.view(-1)`` (outside
    the compiled function). The driver of such a program (``with_object_checks``) also compares, for every state name
    after each call, whether it is the object it was before the call (``MARKER`` in the module's source says so).

    Drawn from a generator of its own, seeded from ``rng``'s state without drawing from it (``draw``): with
    ``P_VIEW_REBIND`` 0 every program is the one it was (the pinned streams set it to 0).
"""

from __future__ import annotations

import random

from fusion_alias.fuzz.own_stream_forms import OwnStreamForm, drawn
from fusion_alias.fuzz.program import Stmt

P_VIEW_REBIND = 0.1  # the form's probability in a program (tests set it to 0: the streams before session 45)
P_STMT = 0.3  # a forward statement of the form, where a program holds it
MARKER = "# (fuzz: buffers rebound to views made in the call: the driver compares each state tensor's object too)"
_MODES = ("", "", "with torch.no_grad(): ")


def _forms(mod) -> list[str]:
    """The form's statements over the state of ``mod`` (``gen_modules._Module``), each keeping the shape."""
    c, vecs = mod.c, [v for v in mod.vecs() if v != "m.b"]
    out = [f"m.u = m.u.view({c})", "m.u = m.u[:]", f"m.u = m.u.view(1, {c})[0]"]
    for v in vecs:
        if v in ("m.u",):
            continue
        out += [f"{v} = {v}.view({c})", f"{v} = {v}[:]", f"{v} = {v}.detach()", f"{v} = m.u[:]", f"{v} = m.u.view({c})",
                f"{v} = m.b.detach()", f"{v} = m.b.detach()[:]"]
        out += [f"{v} = {w}" for w in vecs if w != v and w != "m.scale"]
    for v in mod.mats()[1:]:  # (not the parameter m.w)
        out += [f"{v} = {v}.view({c * c}).view({c}, {c})", f"{v} = {v}[:]", f"{v} = {v}.t().t()", f"{v} = m.w.detach()[:]"]
    if "kv" in mod.buffers:
        out += ["m.kv = m.kv[:]", f"m.kv = m.kv.view({mod.rows}, {c})"]
    return out


class ViewRebinds(OwnStreamForm):
    """One program's form of buffers rebound to views made in the call, and the generator it draws from."""

    P_STMT, REBINDS, REBIND_COUNTS = P_STMT, ("m.u = m.u[:]", "m.u = m.u.view(-1)"), (0, 0, 1)
    PRELUDE = [MARKER, ""]

    def statement(self, body) -> tuple[Stmt, str | None]:
        """A forward statement rebinding a state tensor to a view (``body``: ``gen_modules._Body``)."""
        s = self.s
        return Stmt(f"{s.choice(_MODES)}{s.choice(_forms(body.mod))}", writes="m"), None


def draw(rng: random.Random) -> ViewRebinds | None:
    """The form of one program (None: the program holds none), from a generator seeded from ``rng``'s state without
    drawing from it."""
    return drawn(ViewRebinds, rng, "view rebinds", P_VIEW_REBIND)


def with_object_checks(driver: str) -> str:
    """The modules driver (``modules_source.MODULE_DRIVER``, rendered) also recording, per state name, whether it is
    the object it was before the call (module Note)."""
    before = "    install(hidden, m)\n"
    layout = "layout=state_layout(state),"
    assert driver.count(before) == 1 and driver.count(layout) == 1, "modules driver changed: update modules_view_rebinds"
    driver = driver.replace(before, before + "    before = module_state(m)\n")
    return driver.replace(layout, "layout=state_layout(state) + [(n, 'the object it was before the call', t is "
                                  "before.get(n)) for n, t in state.items()],")
