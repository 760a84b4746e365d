/*
 * Headphone check page: calibration sound, then six trials that can each be played once;
 * a trial's answers unlock when its tones have finished, submit when all are answered.
 * The page does not know the right answers: the server scores them.
 */
(function () {
  "use strict";

  const form = document.getElementById("headphone-form");
  const submit = document.getElementById("headphone-submit");
  const calibrationButton = document.getElementById("calibration-button");
  const calibration = document.getElementById("calibration-audio");
  const trials = Array.from(form.querySelectorAll(".trial"));
  let playing = null;

  function stopOthers(audio) {
    if (playing && playing !== audio) playing.pause();
    playing = audio;
  }

  calibrationButton.addEventListener("click", () => {
    if (!calibration.paused) {
      calibration.pause();
      return;
    }
    stopOthers(calibration);
    calibration.currentTime = 0;
    calibration.play();
  });
  calibration.addEventListener("play", () => { calibrationButton.innerHTML = "&#10074;&#10074; Stop"; });
  calibration.addEventListener("pause", () => { calibrationButton.innerHTML = "&#9654; Play calibration sound again"; });
  calibration.addEventListener("ended", () => { calibrationButton.innerHTML = "&#9654; Play calibration sound again"; });

  function updateSubmit() {
    submit.disabled = !trials.every((trial) => trial.querySelector("input:checked"));
  }

  trials.forEach((trial) => {
    const button = trial.querySelector(".trial-play");
    const audio = trial.querySelector("audio");
    const answers = trial.querySelectorAll("input");
    if (trial.querySelector("input:checked")) {
      // Answered before a failed submission: keep the answer, the tones were heard.
      button.disabled = true;
      answers.forEach((input) => { input.disabled = false; });
    }
    button.addEventListener("click", () => {
      button.disabled = true;
      button.textContent = "Playing…";
      stopOthers(audio);
      audio.play().catch(() => {
        button.disabled = false;
        button.innerHTML = "&#9654; Play the three tones";
      });
    });
    audio.addEventListener("ended", () => {
      button.textContent = "Played";
      answers.forEach((input) => { input.disabled = false; });
      trial.classList.add("is-played");
    });
    answers.forEach((input) => input.addEventListener("change", updateSubmit));
  });
  updateSubmit();
})();
