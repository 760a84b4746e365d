// "Evaluate a model": the cost estimate follows the form's choices; a job's page follows its progress.
(function () {
  const form = document.getElementById("evaluate-form");
  if (form) {
    const text = document.getElementById("estimate-text");
    // not form.dataset: the form's "dataset" field shadows that property
    const estimateUrl = form.getAttribute("data-estimate-url");
    const money = (value) => (value < 0.01 ? value.toFixed(5) : value.toFixed(2));
    let timer = null;
    async function estimate() {
      const data = new FormData(form);
      const query = new URLSearchParams();
      for (const key of ["dataset", "provider", "model", "limit"]) query.set(key, data.get(key) || "");
      if (!query.get("dataset") || !query.get("model")) return;
      const response = await fetch(`${estimateUrl}?${query}`, { headers: { Accept: "application/json" } });
      if (!response.ok) return;
      const result = await response.json();
      const trimmed = result.trimmed_clips ? ` (${result.trimmed_clips} trimmed to the model's limit)` : "";
      const cost = result.cost === null
        ? "no price known for this model (see the price table in docs/metrics.md)"
        : `about $${money(result.cost)}`;
      text.textContent = `${result.clips} clip${result.clips === 1 ? "" : "s"}, ${Math.round(result.audio_seconds)} s of audio${trimmed}: ${cost}.`;
    }
    form.addEventListener("input", () => { clearTimeout(timer); timer = setTimeout(estimate, 300); });
    estimate();
  }

  const job = document.getElementById("job");
  if (!job) return;
  const status = document.getElementById("job-status");
  const fields = ["requested", "cached", "failed", "requests"];
  async function poll() {
    const response = await fetch(job.dataset.progressUrl, { headers: { Accept: "application/json" } });
    if (!response.ok) { setTimeout(poll, 2000); return; }
    const state = await response.json();
    const bar = document.getElementById("job-progress");
    bar.max = Math.max(state.total, 1);
    bar.value = state.done;
    document.getElementById("job-count").textContent = `${state.done}/${state.total}`;
    for (const field of fields) document.getElementById(`job-${field}`).textContent = state[field];
    status.textContent = state.status_label;
    status.className = `status status-${state.status}`;
    document.getElementById("job-error").textContent = state.error;
    document.getElementById("job-no-worker").hidden = state.status !== "pending" || state.workers > 0;
    if (state.is_finished) {
      if (status.dataset.status !== state.status) window.location.reload();  // the system, scores and next steps
      return;
    }
    setTimeout(poll, 1000);
  }
  if (!["done", "done_with_failures", "failed", "cancelled"].includes(status.dataset.status)) setTimeout(poll, 500);
})();
