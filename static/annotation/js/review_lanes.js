/*
 * ReviewLanes: on the reviewer's page, every annotator's time spans on one timeline, one lane per annotator
 * (named as the submission cards name them), one row per event inside a lane so that events sounding together
 * stay visible. Seeing the submissions' seconds side by side is what tells the reviewer where annotators heard
 * the same sound and where one heard more occurrences, which the chips of the cards cannot show.
 *
 * A bar's colour is its matched group's (the table "Matched events and agreement"), so one sound has one
 * colour in every lane; the legend names each colour. Before the matching arrives, or for an event no group
 * holds, the colour is the event's own. The lanes follow the player's zoom and pan ("regionplayer:view").
 * Clicking a bar selects its seconds on the player (so `l` loops it); the title gives the event and seconds.
 *
 * Event names and annotator names are user text: they only ever reach the page as textContent or an
 * attribute value, never as markup.
 */
window.ReviewLanes = (function () {
  "use strict";

  const ROW_HEIGHT = 16;

  // dom.js loads after this file (with the editor scripts); it is there by the time the page renders
  function el(tag, className, text) {
    return window.AnnotationDom.el(tag, className, text);
  }

  function seconds(value) {
    return value.toFixed(2);
  }

  class ReviewLanes {
    /* `container`: an empty element; `player`: the RegionPlayer (view, duration, setSelection), or null;
     * `palette`: the editor's event colours. */
    constructor(container, player, palette) {
      this.container = container;
      this.player = player;
      this.palette = palette;
      this.submissions = [];
      this.groups = null; // [{events: {annotator: [label, ...]}, merged: {label}}] once the matching arrived
      this.bars = [];
      if (player) player.root.addEventListener("regionplayer:view", () => this.position());
      window.addEventListener("resize", () => this.position());
    }

    setSubmissions(submissions) {
      this.submissions = submissions;
      this.render();
    }

    setMatching(matching) {
      this.groups = matching && matching.groups ? matching.groups : null;
      this.render();
    }

    /* The colour and the legend text of an annotator's event: its group's when a group holds it. */
    _colorOf(annotator, event, position) {
      if (this.groups) {
        const index = this.groups.findIndex((group) => (group.events[annotator] || []).includes(event.label));
        if (index >= 0) return {key: "group-" + index, color: this.palette[index % this.palette.length], text: this.groups[index].merged.label, group: index};
      }
      const offset = this.groups ? this.groups.length : 0;
      return {key: annotator + "\u0000" + event.id, color: this.palette[(offset + position) % this.palette.length], text: event.label.trim() || "unnamed", group: -1};
    }

    render() {
      this.container.textContent = "";
      this.bars = [];
      this.ruler = null;
      const withSpans = this.submissions.filter((submission) => submission.graph.events.some((event) => (event.spans || []).length));
      if (!withSpans.length) {
        this.container.appendChild(el("p", "muted small", this.submissions.length ? "No submission marks time spans." : "No submitted annotation yet."));
        return;
      }
      const legend = new Map();
      const lanes = el("div", "annotator-lanes-list");
      const ruler = el("div", "annotator-lane is-ruler");
      ruler.appendChild(el("div", "annotator-lane-name muted small", "seconds"));
      this.ruler = el("div", "annotator-lane-track annotator-lanes-ruler");
      ruler.appendChild(this.ruler);
      lanes.appendChild(ruler);
      let unmatched = 0;
      for (const submission of this.submissions) {
        const lane = el("div", "annotator-lane");
        lane.dataset.annotator = submission.annotator;
        const name = el("div", "annotator-lane-name", submission.annotator);
        name.title = submission.annotator;
        lane.appendChild(name);
        const track = el("div", "annotator-lane-track");
        const events = submission.graph.events.filter((event) => (event.spans || []).length);
        track.style.height = Math.max(1, events.length) * ROW_HEIGHT + "px";
        if (!events.length) track.appendChild(el("span", "muted small annotator-lane-empty", "no spans"));
        events.forEach((event, row) => {
          const colour = this._colorOf(submission.annotator, event, unmatched);
          if (colour.group < 0) unmatched += 1;
          if (!legend.has(colour.key)) legend.set(colour.key, colour);
          const label = event.label.trim() || "unnamed";
          event.spans.forEach(([start, end], index) => {
            const bar = el("div", "annotator-lane-bar");
            bar.dataset.eventId = event.id;
            bar.dataset.event = label;
            bar.dataset.start = String(start);
            bar.dataset.end = String(end);
            bar.dataset.group = String(colour.group);
            bar.style.top = row * ROW_HEIGHT + "px";
            bar.style.setProperty("--region-color", colour.color);
            bar.title = submission.annotator + ": " + label + " " + seconds(start) + "–" + seconds(end) + " s" + (event.spans.length > 1 ? " (occurrence " + (index + 1) + " of " + event.spans.length + ")" : "");
            bar.setAttribute("role", "button");
            bar.tabIndex = 0;
            bar.setAttribute("aria-label", bar.title + ". Enter selects these seconds on the player.");
            bar.appendChild(el("span", "annotator-lane-label", label));
            bar.addEventListener("click", () => this._select(start, end));
            bar.addEventListener("keydown", (keyEvent) => {
              if (keyEvent.key !== "Enter") return;
              keyEvent.preventDefault();
              this._select(start, end);
            });
            track.appendChild(bar);
            this.bars.push({element: bar, start: start, end: end});
          });
        });
        lane.appendChild(track);
        lanes.appendChild(lane);
      }
      this.container.appendChild(lanes);
      const list = el("ul", "annotator-lanes-legend");
      for (const entry of legend.values()) {
        const item = el("li", "");
        item.dataset.group = String(entry.group);
        const swatch = el("span", "annotator-lanes-swatch");
        swatch.style.setProperty("--region-color", entry.color);
        item.appendChild(swatch);
        item.appendChild(el("span", "", entry.text + (entry.group >= 0 ? "" : " (no matched row)")));
        list.appendChild(item);
      }
      this.container.appendChild(list);
      this.position();
    }

    _view() {
      const duration = (this.player && this.player.duration) || 0;
      const view = this.player && this.player.view;
      if (view && view.end > view.start) return view;
      const last = this.bars.reduce((most, bar) => Math.max(most, bar.end), 0);
      return {start: 0, end: Math.max(duration, last, 1)};
    }

    /* Tick labels every 0.1 to 60 s, at most one per 60 px of the track. */
    _drawRuler(view) {
      if (!this.ruler) return;
      const span = view.end - view.start;
      const most = Math.max(2, Math.floor((this.ruler.getBoundingClientRect().width || 600) / 60));
      const step = [0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 30, 60].find((candidate) => span / candidate <= most) || 60;
      this.ruler.textContent = "";
      for (let tick = Math.ceil(view.start / step) * step; tick <= view.end + 1e-9; tick += step) {
        const label = el("span", "annotator-lanes-tick", (step < 1 ? tick.toFixed(1) : String(Math.round(tick))) + " s");
        label.style.left = ((tick - view.start) / span) * 100 + "%";
        this.ruler.appendChild(label);
      }
    }

    /* Bars at the player's view: left and width as shares of the track, hidden when outside it. */
    position() {
      const view = this._view();
      const span = view.end - view.start;
      this._drawRuler(view);
      for (const bar of this.bars) {
        const visible = bar.end >= view.start && bar.start <= view.end;
        bar.element.hidden = !visible;
        bar.element.style.left = ((bar.start - view.start) / span) * 100 + "%";
        bar.element.style.width = "max(" + ((bar.end - bar.start) / span) * 100 + "%, 3px)";
      }
    }

    _select(start, end) {
      if (this.player && this.player.setSelection) this.player.setSelection(start, end);
    }
  }

  ReviewLanes.ROW_HEIGHT = ROW_HEIGHT;
  return ReviewLanes;
})();
