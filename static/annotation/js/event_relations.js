/*
 * The event editor's temporal relations: selecting two events, relating them, changing, fixing and removing
 * a relation (refused when it contradicts the others), and the relations the spans propose. Methods of
 * EventEditor (event_editor.js); the panel that lists them is relations_panel.js.
 */
window.EventEditorParts = window.EventEditorParts || {};
window.EventEditorParts.Relations = (function () {
  "use strict";

  const Graph = window.AnnotationGraph;

  class EventRelations {
    toggleSelected(id) {
      if (this.selected.includes(id)) this.selected = this.selected.filter((selected) => selected !== id);
      else this.selected = this.selected.concat(id).slice(-2);
      this.render({eventId: id, part: "card"});
    }

    /* Relate the two selected events (in the order selected), or the selected one and `focusedId`. */
    relateSelected(kind, focusedId) {
      let pair = null;
      if (this.selected.length === 2) pair = this.selected;
      else if (this.selected.length === 1 && focusedId && focusedId !== this.selected[0]) pair = [this.selected[0], focusedId];
      if (!pair) {
        this.say("Select two events first: x on the first, x on the second (or x on one, then go to the other), then b, a or s.", true);
        return false;
      }
      return this.addRelation(pair[0], pair[1], kind, {eventId: focusedId || pair[1], part: "card"});
    }

    /* Add a relation unless it contradicts the others (then the message says which chain). A pair already
     * related is changed only through changeRelation (b / a / s on the stated relation). */
    addRelation(first, second, kind, focus, origin) {
      if (first === second) {
        this.say("An event cannot be related to itself.", true);
        return false;
      }
      const names = this.names();
      const samePair = this.draft.relations.findIndex((r) => (r.first === first && r.second === second) || (r.first === second && r.second === first));
      if (samePair >= 0) {
        const stated = this.draft.relations[samePair];
        this.selected = [];
        const already = stated.first === first ? stated.kind : Graph.INVERSE[stated.kind];
        this.say(already === kind
          ? "Already stated: " + names[stated.first] + " " + stated.kind + " " + names[stated.second] + "."
          : "Refused: " + names[first] + " " + kind + " " + names[second] + " contradicts the stated " + names[stated.first] + " " + stated.kind + " " + names[stated.second] + ". Change that one (b / a / s on it in Relations) or remove it (Delete).", already !== kind);
        this.render(focus);
        return false;
      }
      const candidate = this.draft.relations.concat({first: first, second: second, kind: kind});
      const report = Graph.derive(candidate, this._spansById(), names);
      const problem = report.contradictions.find((c) => c.index === candidate.length - 1);
      if (problem) {
        this.say("Refused: " + problem.message + ".", true);
        this.render(focus);
        return false;
      }
      this._record("relating " + names[first] + " " + kind + " " + names[second]);
      this.selected = [];
      this.draft.relations = candidate;
      const conflict = Graph.timeConflict(kind, this._event(first).spans, this._event(second).spans, [names[first], names[second]]);
      this.say((origin ? "Added " + origin + ": " : "Added: ") + names[first] + " " + kind + " " + names[second] + "." + (conflict ? " It contradicts the time spans (" + conflict.message + "): f on it fixes it." : ""), !!conflict);
      this._changed(focus === undefined ? null : focus);
      return true;
    }

    /* {event id: spans}: what Graph.derive checks implied relations against. */
    _spansById() {
      return Object.fromEntries(this.draft.events.map((event) => [event.id, event.spans]));
    }

    removeRelation(index, focus) {
      const relation = this.draft.relations[index];
      if (!relation) return;
      const names = this.names();
      this._record("removing " + names[relation.first] + " " + relation.kind + " " + names[relation.second]);
      this.draft.relations.splice(index, 1);
      this.say("Removed the relation " + names[relation.first] + " " + relation.kind + " " + names[relation.second] + ". Ctrl+Z brings it back.");
      this._changed(focus === undefined ? null : focus);
    }

    /* Change a stated relation's kind (b / a / s on it), refused when that contradicts the others. */
    changeRelation(index, kind, focus, reason) {
      const relation = this.draft.relations[index];
      if (!relation || relation.kind === kind) return false;
      const names = this.names();
      const candidate = this.draft.relations.map((r, position) => (position === index ? {first: r.first, second: r.second, kind: kind} : r));
      const moved = candidate.splice(index, 1)[0];
      candidate.push(moved); // checked last, so a contradiction names this relation
      const problem = Graph.derive(candidate, this._spansById(), names).contradictions.find((c) => c.index === candidate.length - 1);
      if (problem) {
        this.say("Refused: " + problem.message + ".", true);
        this.render(focus);
        return false;
      }
      this._record("changing " + names[relation.first] + " " + relation.kind + " " + names[relation.second] + " to " + kind);
      this.draft.relations[index] = {first: relation.first, second: relation.second, kind: kind};
      this.say((reason || "Changed") + ": " + names[relation.first] + " " + kind + " " + names[relation.second] + ".");
      this._changed(focus === undefined ? null : focus);
      return true;
    }

    /* f: make a relation the spans contradict what the spans say, or remove it when they say nothing. */
    fixRelation(index, focus) {
      const relation = this.draft.relations[index];
      if (!relation) return false;
      const names = this.names();
      const conflict = Graph.timeConflict(relation.kind, this._event(relation.first).spans, this._event(relation.second).spans, [names[relation.first], names[relation.second]]);
      if (!conflict) {
        this.say("This relation agrees with the time spans.");
        return false;
      }
      if (conflict.implied) return this.changeRelation(index, conflict.implied, focus, "Fixed from the spans");
      this.removeRelation(index, focus);
      this.say("Removed " + names[relation.first] + " " + relation.kind + " " + names[relation.second] + ": " + conflict.message + ", and they imply no relation. Ctrl+Z brings it back.");
      return true;
    }

    /* The relations the spans imply between events not related yet: [[first, second, kind]]. */
    proposals() {
      const timed = this.draft.events.map((event) => [event.id, event.spans]);
      const key = JSON.stringify([timed, this.draft.relations]);
      if (!this._proposals || this._proposals.key !== key) {
        this._proposals = {key: key, list: Graph.timeProposals(timed, this.draft.relations)};
      }
      return this._proposals.list.slice();
    }

    /* p: take the first proposal (P: all of them). */
    acceptProposal(all) {
      const proposals = this.proposals();
      if (!proposals.length) {
        this.say("No relation to propose: give events their time spans first.");
        return 0;
      }
      let taken = 0;
      for (const [first, second, kind] of all ? proposals : proposals.slice(0, 1)) {
        if (this.addRelation(first, second, kind, null, "from the spans")) taken += 1;
      }
      if (all) this.say("Added " + taken + " relation(s) from the spans.");
      return taken;
    }
  }

  return EventRelations;
})();
