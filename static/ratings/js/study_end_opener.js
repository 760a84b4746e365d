/*
 * On every end page of a crowd study: tells the window that opened this one, when that is a page of this site,
 * that the study is over. MTurk's frame opens the study in a window of its own and waits for this to ask the
 * server for the ending at once (study_mturk_frame.js); the message carries no code, the frame asks the server.
 * Apart from the end page's own script (study_end.js), which only runs where the page sends the participant on.
 */
(function () {
  "use strict";
  let opener = null;
  try {
    opener = window.opener;
  } catch (error) {
    return;
  }
  if (!opener || opener === window) return;
  try {
    // The target origin is this site's: the browser drops the message if the opener shows another site by now.
    opener.postMessage({type: "study-ended"}, window.location.origin);
  } catch (error) {
    // A closed opener: the frame's own poll finds the end instead.
  }
})();
