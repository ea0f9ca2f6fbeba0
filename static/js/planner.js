// Live job status: every element with data-job-poll="<api url>" polls until the job ends.
(function () {
  function render(el, job) {
    var bar = el.querySelector(".progress > div");
    if (bar) bar.style.width = (job.progress || 0).toFixed(0) + "%";
    var st = el.querySelector("[data-job-status]");
    if (st) { st.textContent = job.status; st.className = "status status-" + job.status; }
    var msg = el.querySelector("[data-job-message]");
    if (msg) msg.textContent = job.message || "";
    var err = el.querySelector("[data-job-error]");
    if (err && job.last_error) {
      err.textContent = job.last_error.message + (job.last_error.where ? " (where: " + job.last_error.where + ")" : "") +
        (job.last_error.hint ? " How to fix: " + job.last_error.hint : "");
    }
  }
  function poll(el) {
    fetch(el.dataset.jobPoll, { credentials: "same-origin", headers: { Accept: "application/json" } })
      .then(function (r) { return r.json(); })
      .then(function (job) {
        render(el, job);
        if (job.status === "queued" || job.status === "running") {
          setTimeout(function () { poll(el); }, 1000);
        } else if (el.dataset.jobWasActive === "1") {
          window.location.reload();
        }
      })
      .catch(function () { setTimeout(function () { poll(el); }, 3000); });
  }
  document.querySelectorAll("[data-job-poll]").forEach(function (el) {
    if (el.dataset.jobWasActive === "1") poll(el);
  });
})();

// Figures: every <script type="application/json" data-plotly-for="DIV_ID"> holds a Plotly figure (built in
// Python, colours and axis titles set there). Rendered full width with the modebar's PNG download plus two
// buttons: SVG, and the chart's data as CSV (one row per point: series, x, y).
(function () {
  function cell(v) {
    if (v === null || v === undefined) return "";
    var s = String(v);
    return /[",\n]/.test(s) ? '"' + s.replace(/"/g, '""') + '"' : s;
  }
  function figureCsv(gd) {
    var lines = ["series,x,y"];
    (gd._fullData || gd.data || []).forEach(function (tr) {
      var xs = tr.x ? Array.from(tr.x) : [], ys = tr.y ? Array.from(tr.y) : [];
      var n = Math.max(xs.length, ys.length);
      for (var i = 0; i < n; i++) lines.push([cell(tr.name), cell(xs[i]), cell(ys[i])].join(","));
    });
    return lines.join("\n") + "\n";
  }
  function download(name, text, type) {
    var a = document.createElement("a");
    a.href = URL.createObjectURL(new Blob([text], { type: type }));
    a.download = name;
    document.body.appendChild(a); a.click(); a.remove();
  }
  window.plannerPlot = function (divId, fig) {
    var el = document.getElementById(divId);
    if (!el || !window.Plotly) return;
    var base = (el.dataset.filename || divId).replace(/[^A-Za-z0-9_.-]+/g, "-");
    var layout = Object.assign({}, fig.layout || {}, { autosize: true });
    delete layout.width;
    var config = {
      responsive: true, displaylogo: false,
      toImageButtonOptions: { format: "png", filename: base, scale: 2 },
      modeBarButtonsToAdd: [
        { name: "Download SVG", title: "Download as SVG", icon: Plotly.Icons.camera,
          click: function (gd) { Plotly.downloadImage(gd, { format: "svg", filename: base }); } },
        { name: "Download CSV", title: "Download the chart's data as CSV", icon: Plotly.Icons.disk,
          click: function (gd) { download(base + ".csv", figureCsv(gd), "text/csv"); } },
      ],
    };
    el.dataset.rendered = "1";
    // the card holds the figure's own height: a responsive resize (narrower window, full-page capture) then
    // changes the width only and never draws the chart past its card
    if (layout.height) el.style.height = layout.height + "px";
    return Plotly.newPlot(el, fig.data || [], layout, config);
  };
  window.plannerFigureCsv = figureCsv;
  window.addEventListener("load", function () {
    document.querySelectorAll("script[data-plotly-for]").forEach(function (s) {
      try { window.plannerPlot(s.dataset.plotlyFor, JSON.parse(s.textContent)); }
      catch (e) { console.error("figure " + s.dataset.plotlyFor, e); }
    });
  });
})();

// The top bar's "More" menu closes on a click elsewhere or Escape, like any menu.
(function () {
  var more = document.querySelector("[data-nav-more]");
  if (!more) return;
  document.addEventListener("click", function (e) { if (!more.contains(e.target)) more.open = false; });
  document.addEventListener("keydown", function (e) { if (e.key === "Escape") more.open = false; });
})();

// The forecast form: picking another trace puts in that trace's horizon, backtest and resolution (a backtest
// longer than the trace cannot run), unless the planner has typed a value of their own.
(function () {
  var data = document.getElementById("forecast-defaults");
  var trace = document.getElementById("id_trace");
  if (!data || !trace) return;
  var defaults = JSON.parse(data.textContent);
  var current = defaults[trace.value] || {};
  trace.addEventListener("change", function () {
    var next = defaults[trace.value];
    if (!next) return;
    ["horizon", "backtest", "resolution"].forEach(function (name) {
      var field = document.getElementById("id_" + name);
      if (field && (field.value === current[name] || !field.value)) field.value = next[name];
    });
    current = next;
  });
})();
