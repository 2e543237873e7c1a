"""ember's own pictures of a memory snapshot (``ember.cuda.memory._snapshot()``, or a PyTorch
snapshot pickle: the format is the same), as standalone SVG text.

* :func:`segment_plot` draws every segment as a bar, its blocks side by side: in use (requested
  bytes dark, rounding slack light), freed but waiting for another stream, or free; a free block
  inside a segment that is partly in use is drawn in red, since that is the fragmentation that
  keeps memory reserved and unusable for larger requests.
* :func:`trace_plot` draws allocated and reserved bytes over the recorded history
  (``device_traces``), one step per event.
"""
import html

__all__ = ["segment_plot", "trace_plot", "segment_summary"]

_COLORS = {"requested": "#1f5fa8", "slack": "#8fb4e3", "pending": "#f0a030",
           "free": "#e8e8e8", "fragment": "#e05050"}


def _fmt(n):
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.1f} {unit}" if unit != "B" else f"{int(n)} B"
        n /= 1024.0


def segment_summary(snapshot):
    """Totals over the snapshot's segments: reserved, allocated, requested, free, and the free
    bytes in partly used segments (fragmentation) with their share of reserved."""
    reserved = allocated = requested = frag = 0
    for seg in snapshot["segments"]:
        reserved += seg["total_size"]
        used = any(b["state"] != "inactive" for b in seg["blocks"])
        for b in seg["blocks"]:
            if b["state"] == "active_allocated":
                allocated += b["size"]
                requested += b["requested_size"]
            elif b["state"] == "inactive" and used:
                frag += b["size"]
    return {"reserved": reserved, "allocated": allocated, "requested": requested,
            "free": reserved - allocated, "fragmentation_bytes": frag,
            "fragmentation": frag / reserved if reserved else 0.0}


def segment_plot(snapshot, width=900):
    """An SVG of the snapshot's segments (one bar each, widths proportional to size)."""
    segs = sorted(snapshot["segments"], key=lambda s: (s.get("device", 0), s["address"]))
    row, label_w, top = 22, 230, 70
    bar_w = width - label_w - 20
    largest = max((s["total_size"] for s in segs), default=1)
    height = top + row * max(len(segs), 1) + 40
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'font-family="monospace" font-size="11">']
    summ = segment_summary(snapshot)
    out.append(f'<text x="10" y="18" font-size="14">Allocator segments: {len(segs)}, '
               f'reserved {_fmt(summ["reserved"])}, allocated {_fmt(summ["allocated"])}, '
               f'fragmented {_fmt(summ["fragmentation_bytes"])} '
               f'({100 * summ["fragmentation"]:.1f}% of reserved)</text>')
    legend = [("requested", "in use (requested)"), ("slack", "in use (rounding)"),
              ("pending", "freed, awaiting stream"), ("free", "free"),
              ("fragment", "free in a used segment")]
    x = 10
    for key, text in legend:
        out.append(f'<rect x="{x}" y="30" width="12" height="12" fill="{_COLORS[key]}" '
                   f'stroke="#555"/><text x="{x + 16}" y="40">{text}</text>')
        x += 30 + 7 * len(text)
    for i, seg in enumerate(segs):
        y = top + i * row
        kind = seg.get("segment_type", "?")
        extra = " exp" if seg.get("is_expandable") else ""
        pool = tuple(seg.get("segment_pool_id", (0, 0)))
        pool_txt = f" pool{pool}" if pool != (0, 0) else ""
        label = (f"{seg['address']:#x} {_fmt(seg['total_size'])} {kind}{extra}"
                 f"{pool_txt} s{seg['stream']}")
        out.append(f'<text x="10" y="{y + 14}">{html.escape(label)}</text>')
        scale = bar_w * seg["total_size"] / largest / max(seg["total_size"], 1)
        used = any(b["state"] != "inactive" for b in seg["blocks"])
        bx = label_w
        for b in seg["blocks"]:
            w = b["size"] * scale
            title = (f'{b["address"]:#x}: {_fmt(b["size"])} {b["state"]}, requested '
                     f'{_fmt(b["requested_size"])}')
            if b["state"] == "active_allocated":
                rw = w * (b["requested_size"] / b["size"] if b["size"] else 0)
                out.append(f'<rect x="{bx:.2f}" y="{y + 3}" width="{rw:.2f}" height="15" '
                           f'fill="{_COLORS["requested"]}"><title>{html.escape(title)}</title>'
                           f'</rect>')
                out.append(f'<rect x="{bx + rw:.2f}" y="{y + 3}" width="{w - rw:.2f}" '
                           f'height="15" fill="{_COLORS["slack"]}"><title>'
                           f'{html.escape(title)}</title></rect>')
            else:
                color = (_COLORS["pending"] if b["state"] == "active_pending_free" else
                         _COLORS["fragment"] if used else _COLORS["free"])
                out.append(f'<rect x="{bx:.2f}" y="{y + 3}" width="{w:.2f}" height="15" '
                           f'fill="{color}"><title>{html.escape(title)}</title></rect>')
            bx += w
        out.append(f'<rect x="{label_w}" y="{y + 3}" width="{bx - label_w:.2f}" height="15" '
                   f'fill="none" stroke="#333"/>')
    out.append("</svg>")
    return "\n".join(out)


def curves(trace):
    """(allocated, reserved) bytes after each event of one device's trace."""
    allocated = reserved = 0
    points = []
    for e in trace:
        a = e["action"]
        if a == "alloc":
            allocated += e["size"]
        elif a == "free_completed":
            allocated -= e["size"]
        elif a in ("segment_alloc", "segment_map"):
            reserved += e["size"]
        elif a in ("segment_free", "segment_unmap"):
            reserved -= e["size"]
        else:
            continue
        points.append((allocated, reserved))
    return points


def trace_plot(snapshot, device=0, width=900, height=320):
    """An SVG of requested (allocated) and reserved bytes over the device's recorded events.

    Allocations count their *requested* sizes, as the trace records them; the curves start at
    zero at the oldest recorded event."""
    traces = snapshot.get("device_traces", [])
    trace = traces[device] if device < len(traces) else []
    pts = curves(trace)
    top = max((max(a, r) for a, r in pts), default=1) or 1
    left, bottom, pw, ph = 70, height - 30, width - 90, height - 60
    n = max(len(pts) - 1, 1)

    def path(idx):
        return " ".join(f"{left + pw * i / n:.1f},{bottom - ph * p[idx] / top:.1f}"
                        for i, p in enumerate(pts))
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'font-family="monospace" font-size="11">',
           f'<text x="10" y="16" font-size="14">Device {device}: {len(pts)} events; peak '
           f'reserved {_fmt(max((r for _, r in pts), default=0))}, peak allocated '
           f'{_fmt(max((a for a, _ in pts), default=0))}</text>',
           f'<line x1="{left}" y1="{bottom}" x2="{left + pw}" y2="{bottom}" stroke="#333"/>',
           f'<line x1="{left}" y1="{bottom}" x2="{left}" y2="{bottom - ph}" stroke="#333"/>',
           f'<text x="4" y="{bottom - ph + 4}">{_fmt(top)}</text>',
           f'<text x="4" y="{bottom}">0</text>']
    if pts:
        out.append(f'<polyline fill="none" stroke="#c04040" stroke-width="1.5" '
                   f'points="{path(1)}"><title>reserved</title></polyline>')
        out.append(f'<polyline fill="none" stroke="#1f5fa8" stroke-width="1.5" '
                   f'points="{path(0)}"><title>allocated (requested)</title></polyline>')
    out.append(f'<text x="{left + 10}" y="{bottom - ph + 14}" fill="#c04040">reserved</text>')
    out.append(f'<text x="{left + 90}" y="{bottom - ph + 14}" fill="#1f5fa8">allocated</text>')
    out.append("</svg>")
    return "\n".join(out)
