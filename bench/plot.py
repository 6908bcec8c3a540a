#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""bench/plot.py SWEEP.csv -o OUT.svg [--title TEXT]

Draws bench/run's message-size sweep as one self-contained SVG: bandwidth
(GB/s) and latency (us) against message size, urxe beside the machine's
UDP limit, on a log2 size axis.  Reads the CSV bench/run writes (columns
kind,size_bytes,urxe,udp_limit,unit,ratio; an empty value is a point that
failed and is left out).  Only the standard library: it runs wherever
bench/run does.
"""
import argparse
import csv
import math
import sys
from xml.sax.saxutils import escape

PANEL_W, PANEL_H = 420, 300
MARGIN_L, MARGIN_R, MARGIN_T, MARGIN_B = 62, 18, 40, 58
SERIES = (("urxe", "urxe", "#c0392b"), ("udp_limit", "UDP limit", "#2c7fb8"))
PANELS = (("bandwidth", "Bandwidth (ib_write_bw, 1 QP)", "GB/s"),
          ("latency", "Latency (ib_send_lat, typical)", "\u00b5s"))


def read_points(path):
    """{kind: [(size, {series: value})]} from the sweep CSV."""
    points = {}
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            vals = {}
            for key, _, _ in SERIES:
                try:
                    vals[key] = float(row[key])
                except (KeyError, ValueError):
                    pass
            points.setdefault(row["kind"], []).append(
                (int(row["size_bytes"]), vals))
    return points


def size_label(n):
    for unit, scale in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale and n % scale == 0:
            return "%d %s" % (n // scale, unit)
    return "%d B" % n


def nice_max(v):
    """A round upper bound for an axis holding values up to v."""
    if v <= 0:
        return 1.0
    mag = 10 ** math.floor(math.log10(v))
    for m in (1, 2, 2.5, 5, 10):
        if v <= m * mag:
            return m * mag
    return 10 * mag


def panel(x0, kind, title, unit, pts):
    """The SVG of one panel whose left edge is at x0."""
    out = ['<g class="panel" id="%s">' % kind]
    w = PANEL_W - MARGIN_L - MARGIN_R
    h = PANEL_H - MARGIN_T - MARGIN_B
    left, top = x0 + MARGIN_L, MARGIN_T
    out.append('<text x="%d" y="22" class="title">%s</text>'
               % (x0 + MARGIN_L, escape(title)))
    if not pts:
        out.append('<text x="%d" y="%d">no data</text>' % (left, top + h // 2))
        return out + ["</g>"]
    sizes = [s for s, _ in pts]
    lo, hi = math.log2(min(sizes)), math.log2(max(sizes))
    span = hi - lo or 1.0
    top_v = nice_max(max([v for _, vals in pts for v in vals.values()] or [1]))

    def px(s):
        return left + (math.log2(s) - lo) / span * w

    def py(v):
        return top + h - v / top_v * h

    out.append('<rect x="%d" y="%d" width="%d" height="%d" class="frame"/>'
               % (left, top, w, h))
    for i in range(5):
        v = top_v * i / 4
        y = py(v)
        out.append('<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" class="grid"/>'
                   % (left, y, left + w, y))
        out.append('<text x="%d" y="%.1f" class="ytick">%g</text>'
                   % (left - 6, y + 4, round(v, 3)))
    for s in sizes:
        out.append('<text x="%.1f" y="%d" class="xtick">%s</text>'
                   % (px(s), top + h + 16, escape(size_label(s))))
    out.append('<text x="%d" y="%d" class="axis">message size</text>'
               % (left + w // 2, top + h + 40))
    out.append('<text x="%d" y="%d" class="axis" transform="rotate(-90 %d %d)">'
               '%s</text>' % (x0 + 16, top + h // 2, x0 + 16, top + h // 2,
                              escape(unit)))
    for key, label, colour in SERIES:
        xy = [(px(s), py(vals[key])) for s, vals in pts if key in vals]
        if not xy:
            continue
        out.append('<polyline class="series" data-series="%s" stroke="%s" '
                   'points="%s"/>' % (key, colour, " ".join(
                       "%.1f,%.1f" % p for p in xy)))
        for x, y in xy:
            out.append('<circle cx="%.1f" cy="%.1f" r="3" fill="%s"/>'
                       % (x, y, colour))
    return out + ["</g>"]


def legend(y):
    out = []
    x = MARGIN_L
    for _, label, colour in SERIES:
        out.append('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" '
                   'stroke-width="2"/>' % (x, y, x + 24, y, colour))
        out.append('<text x="%d" y="%d">%s</text>' % (x + 30, y + 4,
                                                       escape(label)))
        x += 140
    return out


def render(points, title):
    width = PANEL_W * len(PANELS)
    height = PANEL_H + 40
    out = ['<?xml version="1.0" encoding="UTF-8"?>',
           '<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" '
           'viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">'
           % (width, height, width, height),
           '<title>%s</title>' % escape(title),
           '<style>.title{font-weight:bold}.frame{fill:none;stroke:#444}'
           '.grid{stroke:#ddd}.ytick{text-anchor:end}.xtick{text-anchor:middle;'
           'font-size:10px}.axis{text-anchor:middle}'
           '.series{fill:none;stroke-width:2}</style>',
           '<rect width="100%" height="100%" fill="white"/>']
    for i, (kind, ptitle, unit) in enumerate(PANELS):
        out += panel(i * PANEL_W, kind, ptitle, unit,
                     sorted(points.get(kind, [])))
    out += legend(PANEL_H + 14)
    out.append('<text x="%d" y="%d" font-size="10">%s</text>'
               % (MARGIN_L, PANEL_H + 34, escape(title)))
    out.append("</svg>")
    return "\n".join(out) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("csv")
    ap.add_argument("-o", "--output", required=True)
    ap.add_argument("--title", default="urxe beside the UDP limit")
    a = ap.parse_args()
    try:
        points = read_points(a.csv)
    except (OSError, KeyError, ValueError) as e:
        print("plot.py: cannot read %s: %s" % (a.csv, e), file=sys.stderr)
        return 1
    with open(a.output, "w") as f:
        f.write(render(points, a.title))
    return 0


if __name__ == "__main__":
    sys.exit(main())
