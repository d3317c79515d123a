"""Eager's argument checks of the dropout functions, made before fusion_alias's lookasides decide anything.

Note [a dropout's arguments are checked before the shortcut]
    ``F.dropout``, ``F.alpha_dropout``, ``F.feature_alpha_dropout`` and ``F.dropout1d/2d/3d`` check their
    probability first (``p < 0 or p > 1``: ValueError "dropout probability has to be between 0 and 1, but got
    1.5"), whatever ``training`` and ``inplace`` are, and ``F.dropout1d`` then checks its input's rank (2-D or
    3-D, RuntimeError). Only after that does eager decide that an evaluation-mode or ``p == 0`` call returns
    its input. fusion_alias's lookasides (inplace_lookasides.py: ``_dropout``, ``_feature_dropout``) took that
    shortcut first, and ``_dropout`` handed Thunder's ``ltorch.dropout`` the evaluation-mode call, which returns
    its input without a check, so (session 36 hand probe; plain ``thunder.jit`` raises eager's error in all)::

        def f(x):
            F.dropout(x, 1.5, training=False)            # eager: ValueError
            F.dropout2d(x, -0.5, training=False, inplace=True)
            F.dropout1d(torch.ones(6), 0.0, inplace=True) # eager: RuntimeError (a 1-D input)
            return x

    ran and returned ``x``, missed rejections. Each lookaside now calls ``check`` first, so the call raises
    eager's error with eager's message. A probability that is a proxy (a number Thunder traces as an input) is
    not compared: its value is not known while tracing, and Thunder's own decompositions check it where they
    run.
"""

from __future__ import annotations

from numbers import Number


def check(name: str, a, p) -> None:
    """Raise eager's error where ``F.<name>(a, p, ...)`` raises one before looking at ``training``/``inplace``."""
    if isinstance(p, Number) and not isinstance(p, complex) and (p < 0.0 or p > 1.0):
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if name == "dropout1d" and a.ndim not in (2, 3):
        raise RuntimeError(
            f"dropout1d: Expected 2D or 3D input, but received a {a.ndim}D input. Note that dropout1d exists to "
            "provide channel-wise dropout on inputs with 1 spatial dimension, a channel dimension, and an optional "
            "batch dimension (i.e. 2D or 3D inputs).")
