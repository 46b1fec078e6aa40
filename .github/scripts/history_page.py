"""Writes index.html for the nightly history page published on GitHub Pages.

The site folder holds one downloaded artifact per platform, `perfgate-history-<platform>/`, each the
`history_plots` folder of a results store (docs/formats.md section 9: `<sub>/history_*.png` and
`<sub>/<bytes>_bytes_*.png`, `history.html`, `change_points.csv`). The page links each platform's
interactive page and change points first, then shows every sub-experiment's history plots and
links the per-payload ones. Usage: history_page.py SITE_DIR
"""
from __future__ import annotations

import html
import re
import sys
from datetime import datetime, timezone
from pathlib import Path

ARTIFACT_PREFIX = "perfgate-history-"
# what `perfgate history` writes beside the plots, linked first (docs/history.md)
PLATFORM_LINKS = (("history.html", "interactive history: change points first, then zoomable charts"),
                  ("change_points.csv", "change_points.csv"))
# The order a maintainer reads them in: typical latency first, then the tail.
OVERVIEW_ORDER = ("median", "99", "min", "max")


def _natural_key(text: str) -> list:
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", text)]


def _overview_key(name: str) -> tuple:
    magnitude = name.removeprefix("history_").removesuffix(".png")
    return (OVERVIEW_ORDER.index(magnitude) if magnitude in OVERVIEW_ORDER else len(OVERVIEW_ORDER), name)


def collect(site: Path) -> dict[str, dict[str, list[str]]]:
    """platform -> sub-experiment -> PNG paths relative to `site`, overview plots first."""
    platforms: dict[str, dict[str, list[str]]] = {}
    for artifact in sorted(p for p in site.iterdir() if p.is_dir() and p.name.startswith(ARTIFACT_PREFIX)):
        subs = {}
        for sub in sorted((p for p in artifact.iterdir() if p.is_dir()), key=lambda p: p.name):
            names = [p.name for p in sub.glob("*.png")]
            overview = sorted((n for n in names if n.startswith("history_")), key=_overview_key)
            per_payload = sorted((n for n in names if not n.startswith("history_")), key=_natural_key)
            if names:
                subs[sub.name] = [f"{artifact.name}/{sub.name}/{n}" for n in overview + per_payload]
        platforms[artifact.name.removeprefix(ARTIFACT_PREFIX)] = subs
    return platforms


def platform_links(site: Path, platforms) -> dict[str, list[tuple[str, str]]]:
    """platform -> (path relative to `site`, text) of the PLATFORM_LINKS files its artifact holds."""
    return {platform: [(f"{ARTIFACT_PREFIX}{platform}/{name}", text) for name, text in PLATFORM_LINKS
                       if (site / f"{ARTIFACT_PREFIX}{platform}" / name).is_file()] for platform in platforms}


def page_html(platforms: dict[str, dict[str, list[str]]], generated: datetime,
              links: dict[str, list[tuple[str, str]]] | None = None) -> str:
    """The whole page: one section per platform, one per sub-experiment."""
    e = html.escape
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        "<title>perfgate: Fast DDS latency history</title>",
        "<style>body{font-family:sans-serif;margin:2em;max-width:1400px}"
        "img{max-width:48%;margin:0.5%;border:1px solid #ddd}h2{border-bottom:2px solid #333}"
        "li{display:inline-block;margin-right:1em}</style></head><body>",
        "<h1>Fast DDS latency history</h1>",
        f"<p>Redrawn {e(generated.strftime('%Y-%m-%d %H:%M UTC'))} from the results store of each reference machine.</p>",
    ]
    for platform, subs in platforms.items():
        parts.append(f'<h2 id="{e(platform)}">{e(platform)}</h2>')
        parts.extend(f'<p><a href="{e(path)}">{e(text)}</a></p>' for path, text in (links or {}).get(platform, []))
        if not subs:
            parts.append("<p>No history plots.</p>")
        for sub, paths in subs.items():
            parts.append(f'<h3 id="{e(platform)}-{e(sub)}">{e(sub)}</h3>')
            overview = [p for p in paths if p.rsplit("/", 1)[1].startswith("history_")]
            per_payload = [p for p in paths if p not in overview]
            parts.extend(f'<img src="{e(p)}" alt="{e(sub)} {e(Path(p).stem)}">' for p in overview)
            if per_payload:
                parts.append("<details><summary>per payload</summary><ul>")
                parts.extend(f'<li><a href="{e(p)}">{e(Path(p).stem)}</a></li>' for p in per_payload)
                parts.append("</ul></details>")
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: history_page.py SITE_DIR", file=sys.stderr)
        return 2
    site = Path(argv[0])
    if not site.is_dir():
        print(f"{site}: error: not a folder", file=sys.stderr)
        return 2
    platforms = collect(site)
    if not any(platforms.values()):
        print(f"{site}: error: no {ARTIFACT_PREFIX}<platform>/<sub-experiment>/*.png plots to publish", file=sys.stderr)
        return 3
    page = page_html(platforms, datetime.now(timezone.utc), platform_links(site, platforms))
    (site / "index.html").write_text(page, encoding="utf-8")
    print(f"{site / 'index.html'}: {sum(len(s) for s in platforms.values())} sub-experiments on {len(platforms)} platforms")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
