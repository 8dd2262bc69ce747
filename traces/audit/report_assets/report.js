// Draws the audit report's charts as inline SVG from the JSON in <script id="audit-data">; no library, no network.
// Every bar is a <rect class="bar"> carrying data-series, data-label and data-value, so a test (or a reader's
// devtools) can check the drawing against the Parquet results it came from.
(function () {
  "use strict";
  var SVG = "http://www.w3.org/2000/svg";
  var COLORS = { allowed: "#3a7d44", denied: "#c0392b", hard: "#c0392b", soft: "#e69f00", value: "#2c6fbb" };

  function el(name, attrs, parent) {
    var node = document.createElementNS(SVG, name);
    for (var key in attrs) node.setAttribute(key, attrs[key]);
    if (parent) parent.appendChild(node);
    return node;
  }

  function text(parent, x, y, content, attrs) {
    var node = el("text", Object.assign({ x: x, y: y, "font-size": 11 }, attrs || {}), parent);
    node.textContent = content;  // never innerHTML: labels are principals and resource names from the trace
    return node;
  }

  function legend(container, series) {
    var div = document.createElement("div");
    div.className = "legend";
    series.forEach(function (s) {
      var span = document.createElement("span");
      var swatch = document.createElement("i");
      swatch.style.background = COLORS[s] || COLORS.value;
      span.appendChild(swatch);
      span.appendChild(document.createTextNode(s));
      div.appendChild(span);
    });
    container.appendChild(div);
  }

  function niceMax(value) {
    if (value <= 0) return 1;
    var step = Math.pow(10, Math.floor(Math.log10(value)));
    var n = Math.ceil(value / step);
    return (n <= 2 ? 2 : n <= 5 ? 5 : 10) * step;
  }

  // Vertical stacked bars: one column per row of `rows` ({label, <series>: n}), e.g. decisions per minute.
  function columns(container, rows, series) {
    if (!rows.length) { empty(container); return; }
    var width = 1000, height = 260, left = 50, bottom = 40, top = 10;
    var svg = el("svg", { viewBox: "0 0 " + width + " " + height, width: width, height: height, role: "img" }, container);
    var max = niceMax(Math.max.apply(null, rows.map(function (r) {
      return series.reduce(function (sum, s) { return sum + (r[s] || 0); }, 0);
    })));
    var plotH = height - top - bottom, slot = (width - left - 10) / rows.length, barW = Math.max(1, Math.min(60, slot * 0.8));
    [0, 0.5, 1].forEach(function (f) {
      var y = top + plotH * (1 - f);
      el("line", { x1: left, x2: width - 10, y1: y, y2: y, stroke: "#ddd" }, svg);
      text(svg, left - 6, y + 4, String(Math.round(max * f)), { "text-anchor": "end", class: "tick" });
    });
    var every = Math.max(1, Math.ceil(rows.length / 12));
    rows.forEach(function (r, i) {
      var x = left + i * slot + (slot - barW) / 2, y = top + plotH;
      series.forEach(function (s) {
        var v = r[s] || 0, h = plotH * v / max;
        y -= h;
        var rect = el("rect", { x: x, y: y, width: barW, height: h, fill: COLORS[s], class: "bar",
                                "data-series": s, "data-label": r.label, "data-value": v }, svg);
        el("title", {}, rect).textContent = r.label + " " + s + ": " + v;
      });
      if (i % every === 0) text(svg, x + barW / 2, height - bottom + 14, r.label.slice(11, 16) || r.label,
                                { "text-anchor": "middle", class: "xlabel" });
    });
    legend(container, series);
  }

  // Horizontal stacked bars: one row per item ({label, <series>: n}), e.g. flips by principal.
  function bars(container, rows, series) {
    if (!rows.length) { empty(container); return; }
    var width = 1000, rowH = 22, left = 330, top = 4;
    var height = top + rows.length * rowH + 6;
    var svg = el("svg", { viewBox: "0 0 " + width + " " + height, width: width, height: height, role: "img" }, container);
    var max = Math.max.apply(null, rows.map(function (r) {
      return series.reduce(function (sum, s) { return sum + (r[s] || 0); }, 0);
    })) || 1;
    rows.forEach(function (r, i) {
      var y = top + i * rowH, x = left, total = 0;
      var label = r.label.length > 48 ? r.label.slice(0, 47) + "\u2026" : r.label;
      text(svg, left - 8, y + 15, label, { "text-anchor": "end", class: "ylabel" });
      series.forEach(function (s) {
        var v = r[s] || 0, w = (width - left - 80) * v / max;
        var rect = el("rect", { x: x, y: y + 3, width: w, height: rowH - 6, fill: COLORS[s] || COLORS.value,
                                class: "bar", "data-series": s, "data-label": r.label, "data-value": v }, svg);
        el("title", {}, rect).textContent = r.label + " " + s + ": " + v;
        x += w;
        total += v;
      });
      text(svg, x + 6, y + 15, String(total), { class: "total" });
    });
    if (series.length > 1) legend(container, series);
  }

  function empty(container) {
    var p = document.createElement("p");
    p.className = "empty";
    p.textContent = container.getAttribute("data-empty") || "Nothing to draw.";
    container.appendChild(p);
  }

  function table(container, spec) {
    if (!spec.rows.length) { empty(container); return; }
    var t = document.createElement("table"), head = t.createTHead().insertRow();
    spec.columns.forEach(function (c) {
      var th = document.createElement("th");
      th.textContent = c;
      head.appendChild(th);
    });
    var body = t.createTBody();
    spec.rows.forEach(function (row) {
      var tr = body.insertRow();
      row.forEach(function (v, i) {
        var td = tr.insertCell();
        td.textContent = v === null ? "" : String(v);
        if (typeof v === "number") td.className = "num";
        if (spec.columns[i] === "acl") td.className = "key";
      });
    });
    container.appendChild(t);
  }

  var data = JSON.parse(document.getElementById("audit-data").textContent);
  var charts = data.charts;
  document.querySelectorAll("[data-chart]").forEach(function (container) {
    var spec = charts[container.getAttribute("data-chart")];
    if (!spec) return;
    (spec.type === "columns" ? columns : bars)(container, spec.rows, spec.series);
  });
  document.querySelectorAll("[data-table]").forEach(function (container) {
    var spec = data.tables[container.getAttribute("data-table")];
    if (spec) table(container, spec);
  });
  document.body.setAttribute("data-rendered", "true");
})();
