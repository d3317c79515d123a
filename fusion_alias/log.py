"""``FUSION_ALIAS_LOG``: what each compile decided, in the spirit of ``TORCH_LOGS``.

    FUSION_ALIAS_LOG=regions python train.py     # per compile: regions, write-backs, cut reasons
    FUSION_ALIAS_LOG=regions,graph python ...    # and every hazard edge, safe or not
    FUSION_ALIAS_LOG=all python ...

Each name is a Python logger under ``fusion_alias``: ``fusion_alias.regions``
and ``fusion_alias.graph``. The variable (read at import) attaches a handler
that writes to stderr and sets the level to INFO; a program can do the same
with :func:`set_logs` (``fusion_alias.log.set_logs(regions=True)``), or
configure the loggers with ``logging`` as it does any other. Off, their level
is WARNING, so a program's ``logging.basicConfig(level=logging.INFO)`` does
not turn them on (``logging.getLogger("fusion_alias.regions").setLevel(logging.INFO)``
does).

What one compile of seed h (inputs ``(x, x[0, 0])``) prints::

    [fusion_alias.regions] h: 3 regions, 8 ops (3 outside regions)
      FusionAlias0  stage 0  2 ops  writes back t0 -> a
      FusionAlias1  stage 1  2 ops  writes back t2 -> b
      FusionAlias2  stage 2  1 op
      cut before FusionAlias1: raw: `t1 = copy_(t0, a)` -> `t2 = tanh(b)`: write of a then read of b ...
"""

from __future__ import annotations

import logging
import os
import sys

LOG_NAMES = ("regions", "graph")
ENV_VAR = "FUSION_ALIAS_LOG"

regions_log = logging.getLogger("fusion_alias.regions")
graph_log = logging.getLogger("fusion_alias.graph")
_LOGGERS = {"regions": regions_log, "graph": graph_log}
_HANDLER_TAG = "_fusion_alias_log_handler"
_OPS_SHOWN = 8  # ops listed per region


def _parse(spec: str) -> set[str]:
    names = {s.strip().lstrip("+") for s in spec.split(",") if s.strip()}
    if "all" in names:
        return set(LOG_NAMES)
    unknown = names - set(LOG_NAMES)
    if unknown:
        print(f"fusion_alias: {ENV_VAR}: unknown log name(s) {sorted(unknown)}; known: {', '.join(LOG_NAMES)}, all",
              file=sys.stderr)
    return names & set(LOG_NAMES)


def set_logs(regions: bool = False, graph: bool = False, stream=None) -> None:
    """Turn the logs on or off, as ``FUSION_ALIAS_LOG`` does (``stream``: default stderr)."""
    for name, on in (("regions", regions), ("graph", graph)):
        logger = _LOGGERS[name]
        for h in [h for h in logger.handlers if getattr(h, _HANDLER_TAG, False)]:
            logger.removeHandler(h)
        if on:
            handler = logging.StreamHandler(stream if stream is not None else sys.stderr)
            handler.setFormatter(logging.Formatter("[%(name)s] %(message)s"))
            setattr(handler, _HANDLER_TAG, True)
            logger.addHandler(handler)
            logger.setLevel(logging.INFO)
            logger.propagate = False
        else:
            # WARNING, not NOTSET: a program's logging.basicConfig(level=INFO) must not turn these on
            logger.setLevel(logging.WARNING)
            logger.propagate = True


def wants_regions() -> bool:
    """Whether any log needs the pass's report (cheap: called on every compile)."""
    return regions_log.isEnabledFor(logging.INFO) or graph_log.isEnabledFor(logging.INFO)


def format_report(report) -> str:
    """The ``regions`` log text of one compile (a ``report.PartitionReport``)."""
    nodes = report.nodes
    n_out = len(report.outside)
    lines = [
        f"{report.function}: {len(report.regions)} region{'s' if len(report.regions) != 1 else ''}, "
        f"{len(nodes)} ops ({n_out} outside regions)"
    ]
    for r in report.regions:
        wb = "; ".join(f"{v} -> {d}" for v, d in r.writebacks)
        size = f"{len(r.nodes)} op{'s' if len(r.nodes) != 1 else ''}"
        phase = " backward" if r.backward else ""
        lines.append(f"  {r.name}  stage {r.stage}{phase}  {size}"
                     + (f"  writes back {wb}" if wb else "  writes nothing back"))
        shown = [nodes[i].label for i in r.nodes[:_OPS_SHOWN]]
        more = len(r.nodes) - len(shown)
        lines.append("      " + "; ".join(shown) + (f"; ... ({more} more)" if more > 0 else ""))
    if report.alias_groups:
        lines.append("  may share memory: " + "; ".join("{" + ", ".join(g) + "}" for g in report.alias_groups))
    for c in report.cuts:
        lines.append(f"  cut before FusionAlias{c.region}: {c.describe(nodes)}")
    return "\n".join(lines)


def format_graph(report) -> str:
    nodes = report.nodes
    lines = [f"{report.function}: hazard edges"]
    for e in report.edges:
        hz = sorted(e.kinds - {"data"})
        if not hz:
            continue
        tag = "unsafe" if e.unsafe else "safe"
        cut = ", forced a cut" if e.forced_cut else ""
        lines.append(f"  {'/'.join(hz)} ({tag}{cut}): `{nodes[e.src].label}` -> `{nodes[e.dst].label}`")
    return "\n".join(lines)


def log_report(report) -> None:
    if regions_log.isEnabledFor(logging.INFO):
        regions_log.info(format_report(report))
    if graph_log.isEnabledFor(logging.INFO):
        graph_log.info(format_graph(report))


def _from_env() -> None:
    names = _parse(os.environ.get(ENV_VAR, ""))
    set_logs(regions="regions" in names, graph="graph" in names)


_from_env()
