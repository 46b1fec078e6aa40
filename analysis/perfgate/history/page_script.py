"""The JavaScript of history.html (page.py embeds it after the chart data): draws every chart as SVG,
decimated per pixel, the charts in view first and the rest when the browser is idle, and redraws the
part shown when the reader zooms.

Why: plotly draws a line of thousands of points slowly as SVG, and as WebGL ("scattergl") each chart
takes one of the browser's few WebGL contexts; with 30 charts the browser dropped the oldest and
their charts went blank (issue 24: 44 "Too many active WebGL contexts" at 3000 runs). So no WebGL at
all: where runs outnumber the pixels, each payload is drawn as its median line and its spread (issue
45 item 6): per bucket of BUCKET_PX pixels of the chart's width the run holding the bucket's median
value is a point of the line, and the bucket's lowest and highest value are the edges of a faint band
of the payload's colour around it. At 5000 runs the min-max zig-zag of every payload drew eleven
overlapping smears; the medians show the level and a step, the band a slow run and the extremes of
Max, which stay where they are on the screen. Zooming in on the x axis (or resetting it) redraws line
and band from the full series for the runs shown; once a run has two pixels or more every run is
drawn, without a band. Hover texts are looked up by position (HOVER, shared); a band has none.

Load time at 5000 runs (issue 24 item 4): the series are embedded as base64 text (page.py
`encoded_series`: little-endian int32 thousandths, MISSING where a run lacks the value), which the
browser scans as one string each instead of parsing a JavaScript number per run, and a chart's
series are decoded only when it is drawn. The 30 `Plotly.newPlot` calls are most of the rest, so a
chart in view is drawn as soon as it is (IntersectionObserver), and the others one per idle period,
in page order, so that every chart is drawn without the reader waiting for all of them (a chart the
page's address names, `#chart-...`, is drawn before any other).

The constants the page defines before this script: HOVER (one text per run position) and CHARTS
(per chart: id, plotly data and layout; a measured trace carries its full series as `y64`, or as `y`
when it does not fit the encoding, and no `x`). Marks, for readers and benchmarks: `data-script-ms`
on <body> when this script began (the page and plotly.js parsed), `data-view-ms` when the charts in
view at load were drawn, `data-drawn-ms` when every chart is (times since the page began to load);
each chart's container gets `data-points`, the points handed to plotly (lines and bands), when drawn. When the last
chart is drawn the page dispatches the event `perfgate-charts-drawn` on document and resolves the
promise `window.perfgateChartsDrawn`.
"""

SCRIPT = r"""
(function () {
  // when this script began: the page's HTML, its data and plotly.js are parsed by then
  document.body.dataset.scriptMs = String(Math.round(performance.now()));
  const BUCKET_PX = 2;
  const RUNS = HOVER.length;
  const MISSING = -2147483648;  // page.py MISSING_THOUSANDTHS

  // a series of page.py encoded_series: numbers with 3 decimals, null where a run lacks the value
  function decoded(text) {
    const bytes = atob(text);
    const view = new DataView(new ArrayBuffer(bytes.length));
    for (let i = 0; i < bytes.length; i++) view.setUint8(i, bytes.charCodeAt(i));
    const values = new Array(bytes.length / 4);
    for (let p = 0; p < values.length; p++) {
      const thousandths = view.getInt32(4 * p, true);
      values[p] = thousandths === MISSING ? null : thousandths / 1000;
    }
    return values;
  }

  // positions lo..hi of `full` (numbers, null where a run lacks the payload): every run when they fit
  // (and no band); else per bucket of runs the run holding the bucket's median (the line, a gap where
  // the bucket has no value) and the bucket's lowest and highest value at that run (the band: a
  // polygon along the highs and back along the lows)
  function decimate(full, lo, hi, buckets) {
    const x = [], y = [], at = [], highs = [], lows = [];
    const count = hi - lo + 1;
    if (count <= 2 * buckets) {
      for (let p = lo; p <= hi; p++) { x.push(p); y.push(full[p]); }
      return {x: x, y: y, bandX: [], bandY: []};
    }
    const present = [];
    const byValue = function (a, b) { return full[a] - full[b]; };
    for (let b = 0; b < buckets; b++) {
      const start = lo + Math.floor(b * count / buckets), end = lo + Math.floor((b + 1) * count / buckets);
      present.length = 0;
      for (let p = start; p < end; p++) if (full[p] !== null) present.push(p);
      if (present.length === 0) { x.push(start); y.push(null); continue; }
      present.sort(byValue);
      const middle = present[(present.length - 1) >> 1];
      x.push(middle); y.push(full[middle]);
      at.push(middle); highs.push(full[present[present.length - 1]]); lows.push(full[present[0]]);
    }
    return {x: x, y: y, bandX: at.concat(at.slice().reverse()), bandY: highs.concat(lows.reverse())};
  }

  // a payload's band: its colour, faint, under every line, shown and hidden with its line (legendgroup)
  function bandTrace(trace) {
    return {type: "scatter", mode: "lines", x: [], y: [], fill: "toself",
            fillcolor: (trace.line && trace.line.color) || "#7f7f7f",
            opacity: 0.22, line: {width: 0}, hoverinfo: "skip", showlegend: false,
            legendgroup: trace.legendgroup, visible: trace.visible === undefined ? true : trace.visible};
  }

  function draw(item, container, width) {
    const buckets = Math.max(50, Math.floor(width / BUCKET_PX));
    const measured = [], fulls = [];
    item.data.forEach(function (trace, index) {
      if (trace.x !== undefined) return;
      if (trace.y64 !== undefined) { trace.y = decoded(trace.y64); delete trace.y64; }
      measured.push(index); fulls.push(trace.y);
    });
    const bands = measured.map(function (index) { return bandTrace(item.data[index]); });
    const data = bands.concat(item.data);
    const lines = measured.map(function (index) { return index + bands.length; });
    const bandIndices = bands.map(function (_, k) { return k; });
    function shown(lo, hi) {
      const line = {x: [], y: [], customdata: []}, band = {x: [], y: []};
      for (const full of fulls) {
        const part = decimate(full, lo, hi, buckets);
        line.x.push(part.x); line.y.push(part.y); line.customdata.push(part.x.map(function (p) { return HOVER[p]; }));
        band.x.push(part.bandX); band.y.push(part.bandY);
      }
      return [line, band];
    }
    const [line, band] = shown(0, RUNS - 1);
    let points = 0;
    lines.forEach(function (index, k) {
      const trace = data[index];
      trace.x = line.x[k]; trace.y = line.y[k]; trace.customdata = line.customdata[k];
      data[k].x = band.x[k]; data[k].y = band.y[k];
      points += trace.x.length + data[k].x.length;
    });
    container.dataset.points = String(points);
    Plotly.newPlot(container, data, item.layout, {responsive: true, displaylogo: false});
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
      const [zoomedLine, zoomedBand] = shown(lo, hi);
      Plotly.restyle(container, zoomedLine, lines);
      Plotly.restyle(container, zoomedBand, bandIndices);
    });
  }

  let announce;
  window.perfgateChartsDrawn = new Promise(function (resolve) { announce = resolve; });
  // every chart has the width of the page's body: read once, before any chart is drawn (no layout
  // forced per chart)
  const containers = CHARTS.map(function (item) { return document.getElementById(item.id); });
  const width = (containers.length && containers[0].clientWidth) || 1200;
  const waiting = new Set(CHARTS.map(function (_, k) { return k; }));
  function drawOnce(k) {
    if (!waiting.delete(k)) return;
    draw(CHARTS[k], containers[k], width);
    if (waiting.size === 0) finished();
  }
  function finished() {
    const drawn = Math.round(performance.now());
    document.body.dataset.drawnMs = String(drawn);
    document.dispatchEvent(new CustomEvent("perfgate-charts-drawn", {detail: {ms: drawn}}));
    announce(drawn);
  }
  // opened at a chart (a link of the events table, of the nightly summary): that one before any other,
  // the page may not have scrolled to it yet when the observer first reports
  const linked = containers.findIndex(function (container) { return "#" + container.id === location.hash; });
  if (linked >= 0) drawOnce(linked);
  const byContainer = new Map(containers.map(function (container, k) { return [container, k]; }));
  let first = true;
  const observer = new IntersectionObserver(function (entries) {
    for (const entry of entries) {
      if (entry.isIntersecting) { observer.unobserve(entry.target); drawOnce(byContainer.get(entry.target)); }
    }
    if (first) { first = false; document.body.dataset.viewMs = String(Math.round(performance.now())); }
  }, {rootMargin: "200px 0px"});
  containers.forEach(function (container) { observer.observe(container); });
  // the rest in page order, one chart per idle period (at the latest 100 ms after the last)
  const later = window.requestIdleCallback || function (next) { return setTimeout(next, 1); };
  function drawNext() {
    const next = waiting.values().next();
    if (!next.done) drawOnce(next.value);
    if (waiting.size > 0) later(drawNext, {timeout: 100}); else observer.disconnect();
  }
  if (waiting.size > 0) later(drawNext, {timeout: 100}); else finished();
})();
"""
