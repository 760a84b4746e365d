/* The review overview: each campaign's inter-annotator agreement (overall and per annotator), loaded from metrics. */
(function () {
  "use strict";

  const FACTORS = ["event", "source", "attribute", "relation"];

  function cell(tag, text, className) {
    const node = document.createElement(tag);
    node.textContent = text;
    if (className) node.className = className;
    return node;
  }

  function value(number) {
    return number === null || number === undefined ? "n/a" : number.toFixed(3);
  }

  function render(container, data) {
    container.textContent = "";
    if (!data.clips) {
      container.appendChild(cell("p", "No clip has two submitted annotations yet.", "muted"));
      return;
    }
    const table = document.createElement("table");
    table.className = "compact agreement-summary";
    const head = document.createElement("tr");
    ["", "clips", "pairs", ...FACTORS].forEach((name, index) => head.appendChild(cell("th", name, index ? "num" : "")));
    table.appendChild(document.createElement("thead")).appendChild(head);
    const body = table.appendChild(document.createElement("tbody"));
    const rows = [["all annotators", data.clips, data.pairs, data.factors]];
    Object.entries(data.per_annotator).forEach(([name, entry]) => rows.push([name, entry.clips, entry.pairs, entry.factors]));
    rows.forEach(([name, clips, pairs, factors]) => {
      const row = document.createElement("tr");
      row.appendChild(cell("td", name));
      row.appendChild(cell("td", String(clips), "num"));
      row.appendChild(cell("td", String(pairs), "num"));
      FACTORS.forEach((factor) => row.appendChild(cell("td", value(factors[factor]), "num")));
      body.appendChild(row);
    });
    container.appendChild(table);
  }

  // A worker computes the agreement (it embeds phrases with Sentence-BERT): until it is stored the answer is 202
  // {"computing": true}, asked again every few seconds; {"computing": false} when the computation was given up.
  const RETRY_MS = 3000;

  function fetchInto(container) {
    fetch(container.dataset.agreementUrl, {credentials: "same-origin"})
      .then((response) => (response.ok ? response.json() : Promise.reject(new Error(String(response.status)))))
      .then((data) => {
        if (data.computing) {
          container.replaceChildren(cell("p", "Computing… (a worker compares the annotations)", "muted"));
          setTimeout(() => fetchInto(container), RETRY_MS);
        } else if (data.clips === undefined) {
          container.textContent = `The agreement could not be computed: ${data.error || "no worker finished it"}.`;
        } else {
          render(container, data);
        }
      })
      .catch(() => { container.textContent = "The agreement could not be computed."; });
  }

  function load() {
    document.querySelectorAll("[data-agreement-url]").forEach(fetchInto);
  }

  load();
  document.addEventListener("live:updated", load); // the overview was refreshed (static/core/js/live.js)
})();
