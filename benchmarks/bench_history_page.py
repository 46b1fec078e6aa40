"""history.html at scale (issue 24 item 4): how long headless Chromium takes to show the page.

    .venv/bin/python benchmarks/bench_history_page.py [200,1000,5000] [--workdir DIR]
    (also: benchmarks/bench_history.py --page 200,1000,5000)

Per run count, a page of synthetic histories (ten sub-experiments, 30 charts of 11 payloads, change
points found by detect) is opened in headless Chromium driven over its DevTools pipe
(`--remote-debugging-pipe`: requests on fd 3, replies on fd 4, each JSON ending in a NUL byte), in
real time (no virtual time: it would stop the page's clock while scripts run). Printed, from the
page's own marks (page_script.py, times since the page began to load): when its script began (HTML,
series and plotly.js parsed), when the charts in view were drawn, when every chart was; the
browser's wall time from its start to every chart drawn; the load average before and after. A screenshot of the top of each
page (1400 x 2400 px, every chart drawn) is written beside the pages.
"""
from __future__ import annotations

import argparse
import base64
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from perfgate import files  # noqa: E402
from perfgate.history import page as hp  # noqa: E402

WINDOW = (1400, 1000)
SCREENSHOT_HEIGHT = 2400


class DevTools:
    """Headless Chromium and its DevTools pipe: `call` sends one request and returns its reply,
    keeping the events that arrive meanwhile."""

    def __init__(self, chromium: str):
        to_browser, self._to_browser = os.pipe()
        self._from_browser, from_browser = os.pipe()

        def as_fds_3_and_4():  # Chromium reads requests on fd 3 and writes replies on fd 4
            os.dup2(to_browser, 3)
            os.dup2(from_browser, 4)

        self.process = subprocess.Popen(
            [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--remote-debugging-pipe",
             f"--window-size={WINDOW[0]},{WINDOW[1]}", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, preexec_fn=as_fds_3_and_4, pass_fds=(3, 4))
        os.close(to_browser)
        os.close(from_browser)
        self._buffer, self._next_id, self.events = b"", 0, []

    def _message(self) -> dict:
        while b"\0" not in self._buffer:
            chunk = os.read(self._from_browser, 1 << 20)
            if not chunk:
                raise RuntimeError("Chromium closed its DevTools pipe")
            self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(message)

    def call(self, method: str, session: str | None = None, **params) -> dict:
        self._next_id += 1
        request = {"id": self._next_id, "method": method, "params": params}
        if session:
            request["sessionId"] = session
        os.write(self._to_browser, json.dumps(request).encode() + b"\0")
        while True:
            message = self._message()
            if message.get("id") == self._next_id:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message["result"]
            self.events.append(message)

    def wait_for(self, method: str) -> dict:
        while True:
            found = next((e for e in self.events if e.get("method") == method), None)
            if found:
                self.events.remove(found)
                return found
            self.events.append(self._message())

    def close(self) -> None:
        try:
            self.call("Browser.close")
        except (RuntimeError, OSError):
            pass
        self.process.wait(timeout=60)
        os.close(self._to_browser)
        os.close(self._from_browser)


def open_page(chromium: str, page: Path, screenshot: Path) -> tuple[dict, float]:
    """(the page's marks, browser wall seconds) of opening `page` until every chart
    is drawn (`window.perfgateChartsDrawn`), then a screenshot of its top."""
    started = time.perf_counter()
    browser = DevTools(chromium)
    try:
        target = next(t for t in browser.call("Target.getTargets")["targetInfos"] if t["type"] == "page")
        session = browser.call("Target.attachToTarget", targetId=target["targetId"], flatten=True)["sessionId"]
        browser.call("Page.enable", session)
        browser.call("Page.navigate", session, url=page.as_uri())
        browser.wait_for("Page.loadEventFired")
        marks = browser.call("Runtime.evaluate", session, awaitPromise=True, returnByValue=True, expression=(
            "window.perfgateChartsDrawn.then(function () { return Object.assign({}, document.body.dataset, "
            "{charts: document.querySelectorAll('.chart .plot-container').length, "
            "points: Array.from(document.querySelectorAll('.chart[data-points]'), e => +e.dataset.points)}); })"))
        marks = marks["result"]["value"]
        wall = time.perf_counter() - started
        shot = browser.call("Page.captureScreenshot", session, format="png", captureBeyondViewport=True,
                            clip={"x": 0, "y": 0, "width": WINDOW[0], "height": SCREENSHOT_HEIGHT, "scale": 1})
        screenshot.write_bytes(base64.b64decode(shot["data"]))
    finally:
        browser.close()
    return marks, wall


def load_average() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def page_scale(run_counts: list[int], workdir: Path) -> None:
    """The table of the module's docstring, one row per run count."""
    from bench_history import page_charts  # the synthetic histories of bench_history (beside this file)

    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        raise SystemExit("chromium not found: install the Debian package chromium")
    workdir.mkdir(parents=True, exist_ok=True)
    plotly_js = hp.plotly_javascript()
    print(f"\nhistory.html at scale, headless Chromium {WINDOW[0]}x{WINDOW[1]} (load average before: {load_average()}):")
    print(f"{'runs':>6} {'MB':>5} {'charts drawn':>13} {'points per chart':>17} {'script at':>10} {'in view at':>11} "
          f"{'all drawn at':>13} {'browser wall':>13}")
    for runs in run_counts:
        charts, hover, changes = page_charts(runs)
        page = workdir / f"history-{runs}.html"
        files.write_text(page, hp.page(f"perfgate latency history: synthetic, {runs} runs", f"{runs} runs", changes,
                                       charts, hover, plotly_js))
        marks, wall = open_page(chromium, page, workdir / f"history-{runs}.png")
        total = sum(map(len, charts.values()))
        seconds = {key: int(marks[key]) / 1000 for key in ("scriptMs", "viewMs", "drawnMs")}
        print(f"{runs:>6} {page.stat().st_size / 1e6:>5.1f} {marks['charts']:>6} of {total:<5} "
              f"{min(marks['points'], default=0):>7} to {max(marks['points'], default=0):<6} "
              f"{seconds['scriptMs']:>8.1f} s {seconds['viewMs']:>9.1f} s {seconds['drawnMs']:>11.1f} s "
              f"{wall:>11.1f} s")
    print(f"(load average after: {load_average()}; screenshots {workdir}/history-*.png)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="?", type=lambda text: [int(n) for n in text.split(",")], default=[200, 1000, 5000])
    parser.add_argument("--workdir", type=Path, default=None, help="keep the pages and screenshots here")
    options = parser.parse_args()
    page_scale(options.runs, options.workdir or Path(tempfile.mkdtemp(prefix="perfgate-bench-page-")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
