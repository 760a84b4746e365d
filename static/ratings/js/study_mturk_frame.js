/*
 * The landing page of an MTurk study when MTurk shows it in a frame: the browser may refuse the session
 * cookie there, so the study continues in a window of its own (a signed link), and this frame watches the
 * participant's status and submits the HIT to MTurk once the study gave a code.
 */
(function () {
  "use strict";
  const panel = document.getElementById("mturk-frame");
  if (!panel || window.self === window.top) return;
  panel.hidden = false;
  const startForm = document.getElementById("start-form");
  if (startForm) startForm.hidden = true;
  const waiting = panel.querySelector(".mturk-waiting");
  const form = document.getElementById("mturk-submit");
  function poll() {
    fetch(panel.dataset.statusUrl, {credentials: "omit", cache: "no-store"})
      .then((response) => response.json())
      .then((status) => {
        if (status.finished) {
          // Declined, study full, screened out, left or timed out: the worker returns the HIT (never submitted).
          if (status.return_hit || !status.code) {
            waiting.textContent = "The study has ended: please return the HIT (do not submit it).";
            return;
          }
          form.querySelector("[name=completion_code]").value = status.code;
          waiting.textContent = "Done: submitting the HIT…";
          form.submit();
          return;
        }
        window.setTimeout(poll, 5000);
      })
      .catch(() => window.setTimeout(poll, 10000));
  }
  poll();
})();
