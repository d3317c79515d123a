"""A picture of the partition: why is this cut here?

    fusion_alias.explain(jitted, picture="partition.svg")      # after a call
    python -m fusion_alias.show h -o partition_h.png            # a seed program, inputs (x, x[0, 0])
    python -m fusion_alias.show mymod:step --inputs "x, x[0]"   # any function; x, y: 5x5 randn

Drawn with networkx and matplotlib (no graphviz binary). Left to right in the
order the program runs:

* each region is a shaded box (``FusionAlias<k>``, its stage, its write-backs
  ``value -> destination``); ops that run outside regions (view prims naming a
  write destination, unsupported ops, the return) stand on a white background;
* inside a box, ops are placed by their depth in the region's data flow;
* data edges are grey; hazard edges are coloured by kind (``raw`` red, ``war``
  blue, ``waw`` purple), solid when unsafe, dotted when safe inside a region;
* the edges that forced a cut are drawn thick, on a yellow band, and each cut's
  reason is written under the picture (``fusion_alias.report``).
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

import networkx as nx

from fusion_alias.report import PartitionReport, kept_report

HAZARD_COLOURS = {"raw": "#d62728", "war": "#1f77b4", "waw": "#9467bd"}
DATA_COLOUR = "#9a9a9a"
CUT_BAND = "#ffd400"
REGION_FILLS = ["#e3f1e0", "#fdf0d8", "#e4ecf7", "#f6e1ec", "#e9e5f5", "#e0f3f3"]

_COL_W = 3.4  # data units per column (a node box is 3.1 wide)
_BOX_W, _BOX_H = 3.1, 0.5
_ROW_H = 0.9
_BAND_PAD = 0.35  # above and below the rows of a band
_LABEL_W = 3.0  # the left column with each band's name and write-backs
_MAX_LABEL = 30
_SCALE = 0.8  # inches per data unit
_OUTSIDE_ROW = 6  # ops per row in a band of ops outside regions


def draw_jitted(jitted, path: str) -> PartitionReport:
    """Draw the partition of ``jitted``'s last compiled program into ``path`` (.svg, .png, .pdf)."""
    import thunder

    from fusion_alias.report import KEEP_LIMIT

    report = kept_report(thunder.last_traces(jitted))
    if report is None:
        raise ValueError(
            "fusion_alias: no partition to draw: call the jitted function first (a picture is kept for programs "
            f"of at most {KEEP_LIMIT} ops that fusion_alias.jit or the fusion_alias executor compiled)"
        )
    draw(report, path)
    return report


def _groups(report: PartitionReport) -> list[tuple[str, object, list[int]]]:
    """The bands, top to bottom in run order: each region, and each run of ops outside regions."""
    groups: list[tuple[str, object, list[int]]] = []
    for kind, key in report.order:
        if kind == "region":
            groups.append(("region", key, list(report.regions[key].nodes)))
        elif groups and groups[-1][0] == "outside":
            groups[-1][2].append(key)
        else:
            groups.append(("outside", None, [key]))
    return groups


def _layout(report: PartitionReport):
    """Node positions, the bands ``(kind, key, y_top, y_bottom)`` and the drawing's width.

    Each band holds one region (or a run of ops outside regions); inside it an
    op's column is its depth along the edges among the band's ops
    (``networkx.topological_generations``), its row its place in that column.
    """
    inner = nx.DiGraph()
    inner.add_nodes_from(n.index for n in report.nodes)
    inner.add_edges_from((e.src, e.dst) for e in report.edges)
    pos: dict[int, tuple[float, float]] = {}
    bands = []
    y = 0.0
    widest = 1
    for kind, key, members in _groups(report):
        columns = [sorted(gen) for gen in nx.topological_generations(inner.subgraph(members))]
        if kind == "outside":
            # ops outside regions (inputs, views, the return) in reading order along rows, so that
            # edges leaving one (to the regions below) do not run behind another
            flat = [node for col in columns for node in col]
            columns = [flat[c::_OUTSIDE_ROW] for c in range(min(_OUTSIDE_ROW, len(flat)))]
        rows = max(len(c) for c in columns)
        if kind == "region":
            lines = 3 + max(1, len(report.regions[key].writebacks))
            rows = max(rows, (lines * 0.32 + 0.2 - 2 * _BAND_PAD) / _ROW_H)  # room for the band's label
        widest = max(widest, len(columns))
        top = y
        for c, col in enumerate(columns):
            for r, node in enumerate(col):
                pos[node] = (_LABEL_W + c * _COL_W + _COL_W / 2, top - _BAND_PAD - _ROW_H / 2 - r * _ROW_H)
        y = top - 2 * _BAND_PAD - rows * _ROW_H
        bands.append((kind, key, top, y))
        y -= 0.15
    return pos, bands, _LABEL_W + widest * _COL_W


def _edge_points(p, q):
    """Start and end of an arrow between two node boxes centred at ``p`` and ``q``."""
    (x0, y0), (x1, y1) = p, q
    if abs(y1 - y0) < 1e-6:  # same row: side to side
        sx = 1 if x1 > x0 else -1
        return (x0 + sx * _BOX_W / 2, y0), (x1 - sx * _BOX_W / 2, y1)
    sy = 1 if y1 > y0 else -1
    return (x0, y0 + sy * _BOX_H / 2), (x1, y1 - sy * _BOX_H / 2)


def _clip(text: str) -> str:
    return text if len(text) <= _MAX_LABEL else text[: _MAX_LABEL - 1] + "…"


def draw(report: PartitionReport, path: str, title: str | None = None) -> None:
    """Draw ``report`` into ``path`` (the format follows the extension)."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.patheffects as pe
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D
    from matplotlib.patches import FancyArrowPatch, FancyBboxPatch

    pos, bands, width = _layout(report)
    bottom = bands[-1][3] if bands else -1.0
    cut_lines = [f"cut before FusionAlias{c.region}: {c.describe(report.nodes)}" for c in report.cuts]
    groups = "; ".join("{" + ", ".join(g) + "}" for g in report.alias_groups)
    notes = [f"{report.function}: {len(report.regions)} region{'s' if len(report.regions) != 1 else ''}"
             + (f"; may share memory: {groups}" if groups else "")] + cut_lines
    line_h = 0.36
    text_h = line_h * len(notes) + 0.3
    longest = max((len(t) for t in notes), default=0) * 0.075 / _SCALE
    width = max(width, longest)
    fig, ax = plt.subplots(figsize=(width * _SCALE + 0.4, (-bottom + text_h + 0.3) * _SCALE + 1.2))
    ax.set_xlim(-0.1, width + 0.1)
    ax.set_ylim(bottom - text_h, 0.15)
    ax.axis("off")

    for kind, key, top, low in bands:
        if kind == "region":
            r = report.regions[key]
            ax.add_patch(FancyBboxPatch((0.05, low + 0.05), width - 0.1, top - low - 0.1,
                                        boxstyle="round,pad=0.0,rounding_size=0.15",
                                        fc=REGION_FILLS[key % len(REGION_FILLS)], ec="#606060", lw=1.2, zorder=0))
            phase = ", backward" if r.backward else ""
            wb = "\n".join(f"  {v} → {d}" for v, d in r.writebacks) or "  (nothing)"
            ax.text(0.25, top - 0.18, r.name, fontsize=9.5, fontweight="bold", va="top", zorder=5)
            ax.text(0.25, top - 0.52, f"stage {r.stage}{phase}, {len(r.nodes)} op{'s' if len(r.nodes) != 1 else ''}"
                    f"\nwrites back:\n{wb}", fontsize=8, va="top", zorder=5, linespacing=1.3)
        else:
            ax.add_patch(FancyBboxPatch((0.05, low + 0.05), width - 0.1, top - low - 0.1,
                                        boxstyle="round,pad=0.0,rounding_size=0.15", fc="white", ec="#c0c0c0",
                                        lw=0.8, ls="--", zorder=0))
            ax.text(0.25, top - 0.18, "outside regions\n(run by torch)", fontsize=8, color="#707070",
                    style="italic", va="top", zorder=5)

    for node in report.nodes:
        x, y = pos[node.index]
        inside = node.region is not None
        ax.add_patch(FancyBboxPatch((x - _BOX_W / 2, y - _BOX_H / 2), _BOX_W, _BOX_H,
                                    boxstyle="round,pad=0.0,rounding_size=0.1", fc="white",
                                    ec="#303030" if inside else "#909090", lw=1.0, ls="solid" if inside else "--",
                                    zorder=3))
        ax.text(x, y, _clip(node.label), ha="center", va="center", fontsize=7.5, family="monospace", zorder=4)

    def arrow(u, v, colour, lw, ls, rad, z, style="-|>"):
        a, b = _edge_points(pos[u], pos[v])
        (x0, y0), (x1, y1) = pos[u], pos[v]
        # a straight line past other boxes (same column, or same row, far apart) bends around them
        skips = (abs(x0 - x1) < 1e-6 and abs(y0 - y1) > _ROW_H + 1e-6) or (
            abs(y0 - y1) < 1e-6 and abs(x0 - x1) > _COL_W + 1e-6)
        conn = f"arc3,rad={rad + (0.35 if skips else 0.0)}"
        ax.add_patch(FancyArrowPatch(a, b, arrowstyle=style, mutation_scale=11, color=colour, lw=lw, ls=ls,
                                     connectionstyle=conn, zorder=z, shrinkA=1, shrinkB=1))

    for e in report.edges:
        if "data" in e.kinds:
            hazard = any(k in e.kinds for k in HAZARD_COLOURS)
            if e.forced_cut and not hazard:  # a cut after an op outside regions
                arrow(e.src, e.dst, CUT_BAND, 7.0, "solid", 0.0, 1, style="-")
            arrow(e.src, e.dst, DATA_COLOUR, 2.0 if e.forced_cut and not hazard else 1.0, "solid", 0.0, 1)
    for e in report.edges:
        kinds = [k for k in ("raw", "war", "waw") if k in e.kinds]
        for j, k in enumerate(kinds):
            rad = 0.3 + 0.12 * j
            if e.forced_cut:
                arrow(e.src, e.dst, CUT_BAND, 7.0, "solid", rad, 2, style="-")
            arrow(e.src, e.dst, HAZARD_COLOURS[k], 2.4 if e.forced_cut else (1.6 if e.unsafe else 1.2),
                  "solid" if e.unsafe else (0, (1, 1.5)), rad, 2)

    y = bottom - 0.2
    for j, line in enumerate(notes):
        ax.text(0.05, y - j * line_h, line, fontsize=8.5 if j == 0 else 8, va="top", zorder=5,
                fontweight="bold" if j == 0 else "normal")

    legend = [Line2D([], [], color=DATA_COLOUR, lw=1.2, label="data")]
    for k, c in HAZARD_COLOURS.items():
        legend.append(Line2D([], [], color=c, lw=1.6, label=f"{k}, unsafe"))
        legend.append(Line2D([], [], color=c, lw=1.2, ls=(0, (1, 1.5)), label=f"{k}, safe in a region"))
    legend.append(Line2D([], [], color=HAZARD_COLOURS["raw"], lw=2.4, label="forced a cut",
                         path_effects=[pe.Stroke(linewidth=7, foreground=CUT_BAND), pe.Normal()]))
    ax.legend(handles=legend, loc="lower left", bbox_to_anchor=(0.0, 1.0), ncol=4, fontsize=7.5, frameon=False)
    ax.set_title(title or f"fusion_alias partition of {report.function}", fontsize=11, pad=44)
    fig.savefig(path, bbox_inches="tight", dpi=110)
    plt.close(fig)


# -- the command --------------------------------------------------------------


def _resolve(target: str):
    """``h`` (a seed program of fusion_alias.bench.programs) or ``module:function``."""
    if ":" in target:
        mod_name, fn_name = target.split(":", 1)
        if mod_name.endswith(".py") or os.sep in mod_name:
            import importlib.util

            spec = importlib.util.spec_from_file_location("_fusion_alias_show_target", mod_name)
            mod = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(mod)
        else:
            mod = importlib.import_module(mod_name)
        return getattr(mod, fn_name), None
    from fusion_alias.bench import programs

    fn = getattr(programs, target, None)
    if fn is None or not callable(fn):
        raise SystemExit(f"fusion_alias.show: no seed program {target!r}; give module:function")
    return fn, ("x, y" if target == "independent" else "x, x[0, 0]")


def _inputs(expr: str, seed: int):
    import torch

    g = torch.Generator().manual_seed(seed)
    x, y = torch.randn(5, 5, generator=g), torch.randn(5, 5, generator=g)
    value = eval(expr, {"torch": torch}, {"x": x, "y": y})  # noqa: S307 - a command-line expression
    return value if isinstance(value, tuple) else (value,)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m fusion_alias.show", description=__doc__.split("\n\n")[0])
    parser.add_argument("target", help="a seed program (f, g, h, k, ...) or module:function (or path.py:function)")
    parser.add_argument("--inputs", help="a Python expression over x, y (5x5 randn) and torch; default "
                        "'x, x[0, 0]' (seed 'independent': 'x, y')")
    parser.add_argument("-o", "--out", help="picture file (.svg, .png, .pdf); default partition_<name>.svg")
    parser.add_argument("--schedule", default="reads-first")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    import torch

    import fusion_alias
    from fusion_alias.log import format_report

    fn, default_inputs = _resolve(args.target)
    expr = args.inputs or default_inputs or "x, x[0, 0]"
    jitted = fusion_alias.jit(fn, backend="reference", schedule=args.schedule)
    jit_args, eager_args = _inputs(expr, args.seed), _inputs(expr, args.seed)
    got = jitted(*jit_args)
    expected = fn(*eager_args)
    # outputs, and every input (the in-place writes)
    pairs = list(zip(_flat(got), _flat(expected))) + list(zip(_flat(jit_args), _flat(eager_args)))
    same = len(_flat(got)) == len(_flat(expected)) and all(torch.allclose(a, b, equal_nan=True) for a, b in pairs)
    out = args.out or f"partition_{getattr(fn, '__name__', 'program')}.svg"
    report = draw_jitted(jitted, out)
    print(format_report(report))
    print(f"inputs ({expr}): {'matches eager' if same else 'DIFFERS FROM EAGER'}; picture: {out}")
    return 0 if same else 1


def _flat(x):
    import torch

    if isinstance(x, torch.Tensor):
        return [x]
    if isinstance(x, (list, tuple)):
        return [y for z in x for y in _flat(z)]
    return []


if __name__ == "__main__":
    sys.exit(main())
