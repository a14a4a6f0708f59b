// latlab report: hover values and legend toggles for distribution figures.
// Inline, no dependencies, no network access.
(function () {
  "use strict";

  function fmtNs(ns) {
    var units = [[1e9, "s"], [1e6, "ms"], [1e3, "\u00b5s"], [1, "ns"]];
    for (var i = 0; i < units.length; i++) {
      if (Math.abs(ns) >= units[i][0] || units[i][0] === 1) {
        var v = ns / units[i][0];
        var s = v >= 100 ? v.toFixed(0) : v >= 10 ? v.toFixed(1) : v.toFixed(2);
        return s + " " + units[i][1];
      }
    }
    return String(ns);
  }

  // The percentile at which the curve has value y: CCDF y = P(X > x), CDF y = P(X <= x).
  function pctLabel(kind, y) {
    var tail = kind === "ccdf" ? y : 1 - y;
    if (tail <= 0) { return "p100"; }
    var digits = Math.max(0, Math.ceil(-Math.log10(tail)));
    var s = (100 * (1 - tail)).toFixed(digits);
    if (s.indexOf(".") >= 0) { s = s.replace(/0+$/, "").replace(/\.$/, ""); }
    return "p" + s;
  }

  function setup(fig) {
    var data = JSON.parse(fig.querySelector("script.plot-data").textContent);
    var svg = fig.querySelector("svg");
    var wrap = fig.querySelector(".plot-wrap");
    var tip = fig.querySelector(".tooltip");
    var dot = fig.querySelector(".hover-dot");
    var hidden = {};

    fig.querySelectorAll(".legend button").forEach(function (b) {
      b.addEventListener("click", function () {
        var i = b.getAttribute("data-series");
        hidden[i] = !hidden[i];
        b.setAttribute("aria-pressed", hidden[i] ? "false" : "true");
        fig.querySelectorAll('.curve[data-series="' + i + '"]').forEach(function (c) {
          c.classList.toggle("hidden", !!hidden[i]);
        });
        hide();
      });
    });

    function hide() { tip.hidden = true; dot.setAttribute("visibility", "hidden"); }

    function nearest(x, y) {
      var best = null, bestD = 30 * 30;
      data.series.forEach(function (s, i) {
        if (hidden[i]) { return; }
        s.points.forEach(function (p) {
          var dx = p[0] - x, dy = p[1] - y, d = dx * dx + dy * dy;
          if (d < bestD) { bestD = d; best = { s: s, p: p }; }
        });
      });
      return best;
    }

    svg.addEventListener("mousemove", function (ev) {
      var ctm = svg.getScreenCTM();
      if (!ctm) { return; }
      var pt = svg.createSVGPoint();
      pt.x = ev.clientX; pt.y = ev.clientY;
      var q = pt.matrixTransform(ctm.inverse());
      var hit = nearest(q.x, q.y);
      if (!hit) { hide(); return; }
      dot.setAttribute("cx", hit.p[0]);
      dot.setAttribute("cy", hit.p[1]);
      dot.setAttribute("fill", hit.s.color);
      dot.setAttribute("visibility", "visible");
      tip.textContent = hit.s.label + ": " + pctLabel(data.kind, hit.p[3]) + " = " + fmtNs(hit.p[2]);
      tip.hidden = false;
      var r = wrap.getBoundingClientRect();
      var left = ev.clientX - r.left + 14;
      if (left + tip.offsetWidth > r.width) { left = ev.clientX - r.left - tip.offsetWidth - 14; }
      tip.style.left = left + "px";
      tip.style.top = (ev.clientY - r.top + 14) + "px";
    });
    svg.addEventListener("mouseleave", hide);
    return data;
  }

  // Exercised by the browser test (URL ending in #selftest): hover a point of every figure
  // and toggle a series, through real DOM events, and record what happened on <body>.
  function selftest(figs) {
    var problems = [];
    figs.forEach(function (f) {
      var fig = f.fig, data = f.data, svg = fig.querySelector("svg");
      var s = data.series[0], p = s.points[Math.floor(s.points.length / 2)];
      var pt = svg.createSVGPoint(); pt.x = p[0]; pt.y = p[1];
      var c = pt.matrixTransform(svg.getScreenCTM());
      svg.dispatchEvent(new MouseEvent("mousemove", { clientX: c.x, clientY: c.y, bubbles: true }));
      var tip = fig.querySelector(".tooltip");
      if (tip.hidden || tip.textContent.indexOf(" = ") < 0 || tip.textContent.indexOf("p") < 0) {
        problems.push(fig.id + ": hover shows no value");
      }
      var b = fig.querySelector('.legend button[data-series="0"]');
      b.click();
      var curve = fig.querySelector('.curve[data-series="0"]');
      if (getComputedStyle(curve).display !== "none") { problems.push(fig.id + ": legend does not hide series"); }
      b.click();
      if (getComputedStyle(curve).display === "none") { problems.push(fig.id + ": legend does not show series again"); }
    });
    document.body.setAttribute("data-selftest", problems.length ? "fail: " + problems.join("; ") : "ok " + figs.length);
    // What a reader sees without scrolling: the sections that start, and those that end,
    // within the window's height.
    var starts = [], whole = [];
    document.querySelectorAll("main > section").forEach(function (s) {
      var r = s.getBoundingClientRect();
      if (r.top < window.innerHeight) { starts.push(s.id); }
      if (r.bottom <= window.innerHeight) { whole.push(s.id); }
    });
    document.body.setAttribute("data-first-screen", starts.join(" "));
    document.body.setAttribute("data-first-screen-whole", whole.join(" "));
  }

  document.addEventListener("DOMContentLoaded", function () {
    var figs = [];
    document.querySelectorAll("figure.dist").forEach(function (fig) {
      figs.push({ fig: fig, data: setup(fig) });
    });
    if (location.hash === "#selftest") { selftest(figs); }
  });
})();
