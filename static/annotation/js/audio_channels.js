/*
 * ChannelRouter: play a stereo clip's two channels, or the left or the right one alone (in both ears), through
 * the Web Audio API. Nothing changes until another mode is first chosen (then the audio element plays
 * through an AudioContext, which needs the audio from this site or a storage bucket allowing it by CORS).
 *
 *   const router = new ChannelRouter(audioElement);
 *   router.setMode("left" | "right" | "both");
 */
window.ChannelRouter = (function () {
  "use strict";

  const MODES = ["both", "left", "right"];

  class ChannelRouter {
    constructor(audio) {
      this.audio = audio;
      this.mode = "both";
      this.context = null;
    }

    _graph() {
      if (this.context) return;
      const Context = window.AudioContext || window.webkitAudioContext;
      this.context = new Context();
      this.source = this.context.createMediaElementSource(this.audio);
      this.splitter = this.context.createChannelSplitter(2);
      this.merger = this.context.createChannelMerger(2);
      this.source.connect(this.splitter);
      this.merger.connect(this.context.destination);
    }

    setMode(mode) {
      if (!MODES.includes(mode)) throw new Error("channel mode " + mode + " is not one of " + MODES.join(", "));
      this.mode = mode;
      if (mode === "both" && !this.context) return mode;
      this._graph();
      this.splitter.disconnect();
      if (mode === "both") {
        this.splitter.connect(this.merger, 0, 0);
        this.splitter.connect(this.merger, 1, 1);
      } else {
        const channel = mode === "left" ? 0 : 1;
        this.splitter.connect(this.merger, channel, 0);
        this.splitter.connect(this.merger, channel, 1);
      }
      if (this.context.state === "suspended") this.context.resume().catch(() => {});
      return mode;
    }

    next() {
      return this.setMode(MODES[(MODES.indexOf(this.mode) + 1) % MODES.length]);
    }
  }

  ChannelRouter.MODES = MODES;
  return ChannelRouter;
})();
