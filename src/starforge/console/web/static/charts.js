// The web console's charts: the only code using uPlot (static/vendor/uplot). Every `[data-chart]` container holds a
// JSON block (`script.chart-data`) and an SVG drawn by the console for pages without JavaScript; this script draws
// the data with uPlot in its place. Line charts: hover shows step, value and run in the legend (text only, never
// HTML), drag to zoom, double-click to reset, smoothing (EMA, the raw curve faint behind), log scale, x by step or
// by time, resume marks. Scatter charts: one point per run. The page's live updates (`sf:live`, from app.js) set the
// new data in place, keeping the zoom. The container's `data-series`, `data-x-min` and `data-x-max` say what is drawn.
"use strict";

const PALETTE = ["#3b82f6", "#f97316", "#10b981", "#e5484d", "#a855f7", "#d4a017", "#06b6d4", "#ec4899",
  "#84cc16", "#8d6e63"];  // mid tones: readable on the light and the dark background alike
const HEIGHT = 220;
const settings = {smooth: 0, log: false, x: "step"};
const charts = [];

function human(value) {
  if (value === null || value === undefined || !Number.isFinite(value)) return "—";
  const size = Math.abs(value);
  if (size === 0) return "0";
  const units = [[1e12, "T"], [1e9, "G"], [1e6, "M"], [1e3, "k"]];
  for (const [scale, unit] of units) {
    if (size >= scale) return trim((value / scale).toPrecision(3)) + unit;
  }
  if (size < 1e-3) {
    const [mantissa, exponent] = value.toExponential(1).split("e");
    return trim(mantissa) + "e" + exponent.replace("+", "");
  }
  return trim(value.toPrecision(4));
}

function trim(text) {
  return text.includes(".") && !text.includes("e") ? text.replace(/\.?0+$/, "") : text;
}

function duration(seconds) {
  const size = Math.abs(seconds);
  if (size < 90) return trim(seconds.toFixed(0)) + " s";
  if (size < 5400) return trim((seconds / 60).toFixed(1)) + " min";
  if (size < 172800) return trim((seconds / 3600).toFixed(1)) + " h";
  return trim((seconds / 86400).toFixed(1)) + " d";
}

function xText(value) {
  if (value === null || value === undefined) return "—";
  if (settings.x === "relative") return duration(value);
  if (settings.x === "clock") return new Date(value * 1000).toLocaleTimeString();
  return "step " + human(value);
}

function smooth(ys, alpha) {
  if (!alpha) return ys.slice();
  const out = new Array(ys.length);
  let state = null;
  for (let i = 0; i < ys.length; i++) {
    const y = ys[i];
    if (y === null || !Number.isFinite(y)) { out[i] = null; continue; }
    state = state === null ? y : alpha * state + (1 - alpha) * y;
    out[i] = state;
  }
  return out;
}

function xsOf(run) {
  if (settings.x === "step") return run.x;
  const t0 = run.t.length ? Math.min(...run.t) : 0;
  return settings.x === "relative" ? run.t.map((t) => t - t0) : run.t;
}

function lineTables(payload) {
  // one table per run, [x, raw, smoothed], in x order; uPlot.join aligns them on the union of their x values
  return payload.runs.map((run) => {
    const xs = xsOf(run);
    const order = xs.map((_, i) => i).sort((a, b) => xs[a] - xs[b]);
    const sortedX = order.map((i) => xs[i]);
    let ys = order.map((i) => run.y[i]);
    if (settings.log) ys = ys.map((y) => (y > 0 ? y : null));
    return [sortedX, ys, smooth(ys, settings.smooth)];
  });
}

function lineData(payload) {
  const tables = lineTables(payload);
  if (!tables.length) return [[]];
  return tables.length === 1 ? tables[0] : uPlot.join(tables);
}

function colours(el) {
  const style = getComputedStyle(el);
  return {text: style.color, grid: style.getPropertyValue("--line").trim() || "rgba(128,128,128,.3)"};
}

function legendOf(box, names) {
  const legend = document.createElement("ul");
  legend.className = "chart-legend";
  const head = document.createElement("li");
  head.className = "chart-legend-x";
  head.textContent = "—";
  legend.append(head);
  const values = names.map((name, i) => {
    const item = document.createElement("li");
    const swatch = document.createElement("span");
    swatch.className = "chart-swatch";
    swatch.setAttribute("aria-hidden", "true");
    swatch.style.background = PALETTE[i % PALETTE.length];  // CSSOM, allowed by the page's CSP
    const label = document.createElement("span");
    label.className = "chart-legend-name";
    label.textContent = name;
    const value = document.createElement("span");
    value.className = "chart-legend-value";
    value.textContent = "—";
    item.append(swatch, label, " ", value);
    legend.append(item);
    return value;
  });
  box.append(legend);
  return {legend, head, values};
}

function axes(el, xTime, xFormat, yFormat) {
  const c = colours(el);
  const axis = {stroke: c.text, grid: {stroke: c.grid, width: 1}, ticks: {stroke: c.grid, width: 1}};
  return [
    {...axis, values: xTime ? undefined : (u, ticks) => ticks.map(xFormat)},
    {...axis, size: 56, values: (u, ticks) => ticks.map(yFormat)},
  ];
}

function markHook(chart) {
  return (u) => {
    if (settings.x !== "step" || !chart.payload.marks || !chart.payload.marks.length) return;
    const ctx = u.ctx;
    ctx.save();
    ctx.strokeStyle = colours(chart.box).text;
    ctx.fillStyle = ctx.strokeStyle;
    ctx.setLineDash([4, 3]);
    ctx.font = (10 * devicePixelRatio) + "px sans-serif";
    for (const mark of chart.payload.marks) {
      const x = u.valToPos(mark.step, "x", true);
      if (x < u.bbox.left || x > u.bbox.left + u.bbox.width) continue;
      ctx.beginPath();
      ctx.moveTo(x, u.bbox.top);
      ctx.lineTo(x, u.bbox.top + u.bbox.height);
      ctx.stroke();
      ctx.fillText(mark.label, x + 3, u.bbox.top + 12 * devicePixelRatio);
    }
    ctx.restore();
  };
}

function keepRange(chart) {
  return (u, key) => {
    if (key !== "x") return;
    chart.box.dataset.xMin = String(u.scales.x.min);
    chart.box.dataset.xMax = String(u.scales.x.max);
  };
}

function showCursor(chart, x, at) {
  chart.legend.head.textContent = at === null ? "—" : x;
}

function lineOptions(chart, width) {
  const runs = chart.payload.runs;
  const series = [{}];
  runs.forEach((run, i) => {
    const colour = PALETTE[i % PALETTE.length];
    series.push({label: run.name + " (raw)", stroke: colour + "40", width: 1, spanGaps: true, points: {show: false}});
    series.push({label: run.name, stroke: colour, width: 2, spanGaps: true, dash: i >= PALETTE.length ? [6, 3] : undefined});
  });
  return {
    width, height: HEIGHT, series, legend: {show: false},
    scales: {x: {time: settings.x === "clock"}, y: {distr: settings.log ? 3 : 1}},
    axes: axes(chart.box, settings.x === "clock", (v) => (settings.x === "relative" ? duration(v) : human(v)), human),
    cursor: {drag: {x: true, y: false, setScale: true}, points: {show: false}},
    hooks: {
      draw: [markHook(chart)],
      setScale: [keepRange(chart)],
      setSelect: [() => { chart.zoomed = true; }],
      setCursor: [(u) => {
        const idx = u.cursor.idx;
        showCursor(chart, idx === null || idx === undefined ? null : xText(u.data[0][idx]), idx ?? null);
        runs.forEach((run, i) => {
          const data = u.data[2 + 2 * i];
          const value = idx === null || idx === undefined ? null : data[idx];
          chart.legend.values[i].textContent = value === null || value === undefined ? "—" : human(value);
        });
      }],
    },
  };
}

function scatterOptions(chart, width) {
  const p = chart.payload;
  const colour = PALETTE[0];
  const xFormat = p.categories.length ? (v) => (Number.isInteger(v) ? (p.categories[v] ?? "") : "") : human;
  return {
    width, height: HEIGHT, legend: {show: false},
    series: [{}, {label: p.metric, stroke: colour, fill: colour, paths: () => null,
      points: {show: true, size: 9, stroke: colour, fill: colour}}],
    scales: {x: {time: false, distr: p.xlog ? 3 : 1}},
    axes: axes(chart.box, false, xFormat, human),
    cursor: {drag: {x: true, y: false, setScale: true}},
    hooks: {
      setScale: [keepRange(chart)],
      setCursor: [(u) => {
        const idx = u.cursor.idx;
        const shown = idx !== null && idx !== undefined;
        showCursor(chart, shown ? p.param + " = " + (p.categories.length ? p.categories[p.x[idx]] : human(p.x[idx])) : null,
          shown ? idx : null);
        chart.legend.values[0].textContent = shown ? p.names[idx] + ": " + human(p.y[idx]) : "—";
      }],
    },
  };
}

function draw(chart) {
  const width = Math.max(240, chart.box.clientWidth - 16);
  if (chart.plot) chart.plot.destroy();
  const scatter = chart.payload.kind === "scatter";
  const options = scatter ? scatterOptions(chart, width) : lineOptions(chart, width);
  const data = scatter ? [chart.payload.x, chart.payload.y] : lineData(chart.payload);
  chart.plot = new uPlot(options, data, chart.target);
  chart.zoomed = false;
  chart.box.dataset.series = String(scatter ? 1 : chart.payload.runs.length);
  chart.box.dataset.drawn = "true";
}

function refresh(chart, payload) {
  // new data in place: the same series, the zoom kept if the reader zoomed in
  chart.payload = payload;
  if (!chart.plot || payload.kind === "scatter" || payload.runs.length !== chart.legend.values.length) {
    draw(chart);
    return;
  }
  const {min, max} = chart.plot.scales.x;
  chart.plot.setData(lineData(payload));
  if (chart.zoomed) chart.plot.setScale("x", {min, max});
}

function mount(box) {
  const block = box.querySelector("script.chart-data");
  if (!block || box.dataset.drawn) return;
  const payload = JSON.parse(block.textContent);
  const fallback = box.querySelector(".chart-fallback");
  if (fallback) fallback.remove();  // the script's chart replaces the console's SVG
  const target = document.createElement("div");
  target.className = "chart-plot";
  box.append(target);
  const names = payload.kind === "scatter" ? [payload.metric] : payload.runs.map((run) => run.name);
  const chart = {box, payload, target, legend: legendOf(box, names), plot: null, zoomed: false};
  target.addEventListener("dblclick", () => { chart.zoomed = false; });  // uPlot resets the zoom itself
  draw(chart);
  charts.push(chart);
}

function controls(panel) {
  panel.hidden = !charts.length;  // shown once there is a chart (a running job's first points arrive live)
  document.addEventListener("sf:charts", () => { panel.hidden = false; });
  const slider = panel.querySelector("[data-chart-smooth]");
  const shown = panel.querySelector("[data-chart-smooth-value]");
  const log = panel.querySelector("[data-chart-log]");
  const x = panel.querySelector("[data-chart-x]");
  let pending = false;
  slider.addEventListener("input", () => {
    settings.smooth = Math.min(0.99, Math.max(0, parseFloat(slider.value) || 0));
    shown.textContent = settings.smooth.toFixed(2);
    if (pending) return;
    pending = true;
    requestAnimationFrame(() => {
      pending = false;
      for (const chart of charts) if (chart.payload.kind === "line") refresh(chart, chart.payload);
    });
  });
  log.addEventListener("change", () => { settings.log = log.checked; redrawLines(); });
  x.addEventListener("change", () => { settings.x = x.value; redrawLines(); });
}

function redrawLines() {
  for (const chart of charts) if (chart.payload.kind === "line") draw(chart);
}

function liveCharts(event) {
  const body = event.detail || {};
  if (!Array.isArray(body.plots)) return;
  const section = document.getElementById("charts");
  if (!section) return;
  const byKey = new Map(charts.filter((c) => section.contains(c.box)).map((c) => [c.payload.key, c]));
  let grid = section.querySelector(".charts");
  if (!body.plots.length) {
    const empty = section.querySelector("[data-chart-empty]");
    if (empty && body.no_metrics) empty.textContent = body.no_metrics;
    return;
  }
  if (!grid) {
    const empty = section.querySelector("[data-chart-empty]");
    if (empty) empty.remove();
    grid = document.createElement("div");
    grid.className = "charts";
    section.append(grid);
  }
  for (const payload of body.plots) {
    const known = byKey.get(payload.key);
    if (known) { refresh(known, payload); continue; }
    const box = document.createElement("figure");
    box.className = "chart-box";
    box.dataset.chart = "";
    const caption = document.createElement("figcaption");
    const title = document.createElement("strong");
    title.textContent = payload.key;
    caption.append(title);
    const block = document.createElement("script");
    block.type = "application/json";
    block.className = "chart-data";
    block.textContent = JSON.stringify(payload);
    box.append(caption, block);
    grid.append(box);
    mount(box);
    document.dispatchEvent(new CustomEvent("sf:charts"));
  }
}

document.addEventListener("DOMContentLoaded", () => {
  if (typeof uPlot === "undefined") return;  // the SVG stays
  for (const box of document.querySelectorAll("[data-chart]")) mount(box);
  for (const panel of document.querySelectorAll("[data-chart-controls]")) controls(panel);
  document.addEventListener("sf:live", liveCharts);
  let resizing = false;
  window.addEventListener("resize", () => {
    if (resizing) return;
    resizing = true;
    requestAnimationFrame(() => {
      resizing = false;
      for (const chart of charts) chart.plot.setSize({width: Math.max(240, chart.box.clientWidth - 16), height: HEIGHT});
    });
  });
});
