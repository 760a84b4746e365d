// Caption page: the clip player (space plays / pauses, click the waveform to seek).
(function () {
  const root = document.getElementById("caption-player");
  if (root && root.querySelector("audio") && window.ClipPlayer) new ClipPlayer(root, { keyboard: true });
})();
