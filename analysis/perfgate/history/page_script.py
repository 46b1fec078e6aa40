"""The JavaScript of history.html (page.py embeds it after the chart data): draws every chart as SVG,
decimated per pixel, and redraws the part shown when the reader zooms.

Why: plotly draws a line of thousands of points slowly as SVG, and as WebGL ("scattergl") each chart
takes one of the browser's few WebGL contexts; with 30 charts the browser dropped the oldest and
their charts went blank (issue 24: 44 "Too many active WebGL contexts" at 3000 runs). So no WebGL at
all: each payload's line is drawn from at most two points per BUCKET_PX pixels of the chart's width,
the lowest and the highest value of the runs falling in that bucket, in run order. A step, a slow run
and the extremes of Max stay where they are on the screen; what is left out lies between them.
Zooming in on the x axis (or resetting it) redraws the lines from the full series for the runs shown,
every run once a run has two pixels or more. Hover texts are looked up by position (HOVER, shared).

The constants the page defines before this script: HOVER (one text per run position) and CHARTS
(per chart: id, plotly data and layout; a measured trace carries its full series as `y` and no `x`).
When every chart is drawn, `data-drawn-ms` on <body> holds the time since the page began to load
(`data-script-ms`: when this script began, the page and plotly.js parsed), and each chart's
container `data-points`, the points handed to plotly (benchmarks read them).
"""

SCRIPT = r"""
(function () {
  // when this script began: the page's HTML, its data and plotly.js are parsed by then
  document.body.dataset.scriptMs = String(Math.round(performance.now()));
  const BUCKET_PX = 2;
  const RUNS = HOVER.length;

  // positions lo..hi of `full` (numbers, null where a run lacks the payload): every run when they fit,
  // else per bucket its lowest and highest value in run order; a bucket without any value is a gap
  function decimate(full, lo, hi, buckets) {
    const x = [], y = [];
    const count = hi - lo + 1;
    if (count <= 2 * buckets) {
      for (let p = lo; p <= hi; p++) { x.push(p); y.push(full[p]); }
      return [x, y];
    }
    for (let b = 0; b < buckets; b++) {
      const start = lo + Math.floor(b * count / buckets), end = lo + Math.floor((b + 1) * count / buckets);
      let low = -1, high = -1;
      for (let p = start; p < end; p++) {
        const value = full[p];
        if (value === null) continue;
        if (low < 0 || value < full[low]) low = p;
        if (high < 0 || value > full[high]) high = p;
      }
      if (low < 0) { x.push(start); y.push(null); continue; }
      const first = Math.min(low, high), second = Math.max(low, high);
      x.push(first); y.push(full[first]);
      if (second !== first) { x.push(second); y.push(full[second]); }
    }
    return [x, y];
  }

  function draw(item) {
    const container = document.getElementById(item.id);
    const buckets = Math.max(50, Math.floor((container.clientWidth || 1200) / BUCKET_PX));
    const measured = [], fulls = [];
    item.data.forEach(function (trace, index) {
      if (trace.x === undefined) { measured.push(index); fulls.push(trace.y); }
    });
    function shown(lo, hi) {
      const update = {x: [], y: [], customdata: []};
      for (const full of fulls) {
        const [x, y] = decimate(full, lo, hi, buckets);
        update.x.push(x); update.y.push(y); update.customdata.push(x.map(function (p) { return HOVER[p]; }));
      }
      return update;
    }
    const whole = shown(0, RUNS - 1);
    let points = 0;
    measured.forEach(function (index, k) {
      const trace = item.data[index];
      trace.x = whole.x[k]; trace.y = whole.y[k]; trace.customdata = whole.customdata[k];
      points += trace.x.length;
    });
    container.dataset.points = String(points);
    Plotly.newPlot(container, item.data, item.layout, {responsive: true, displaylogo: false});
    container.on("plotly_relayout", function (event) {
      let lo, hi;
      if (event["xaxis.range[0]"] !== undefined) {
        lo = event["xaxis.range[0]"]; hi = event["xaxis.range[1]"];
      } else if (event["xaxis.range"] !== undefined) {
        lo = event["xaxis.range"][0]; hi = event["xaxis.range"][1];
      } else if (event["xaxis.autorange"]) {
        lo = 0; hi = RUNS - 1;
      } else {
        return;  // the y axis alone: the same runs
      }
      // one run beyond each edge, so that the lines reach the sides of the chart
      lo = Math.max(0, Math.floor(lo) - 1); hi = Math.min(RUNS - 1, Math.ceil(hi) + 1);
      if (hi < lo) return;
      Plotly.restyle(container, shown(lo, hi), measured);
    });
  }

  for (const item of CHARTS) draw(item);
  document.body.dataset.drawnMs = String(Math.round(performance.now()));
})();
"""
