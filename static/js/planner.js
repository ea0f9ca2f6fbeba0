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
