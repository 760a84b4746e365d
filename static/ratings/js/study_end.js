/*
 * End page of a crowd study: after a short countdown, take the participant back to their platform
 * (Prolific's completion URL, a panel's redirect) or submit the MTurk form. The button does it at once.
 * (A study window opened from an MTurk frame gets no countdown: that frame submits the HIT.)
 */
(function () {
  "use strict";
  const target = document.getElementById("redirect");
  if (!target) return;
  const countdown = target.querySelector(".countdown");
  const isForm = target.tagName === "FORM";
  let seconds = parseInt(target.dataset.seconds, 10);
  if (!(seconds >= 0)) seconds = 5;
  function go() {
    if (isForm) target.submit();
    else window.location.assign(target.dataset.url);
  }
  function tick() {
    if (countdown) countdown.textContent = String(seconds);
    if (seconds <= 0) {
      go();
      return;
    }
    seconds -= 1;
    window.setTimeout(tick, 1000);
  }
  tick();
})();
