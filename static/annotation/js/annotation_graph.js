/*
 * AnnotationGraph: the rules of an annotation graph the editor needs at every keystroke, without a
 * server round trip. Mirrors common/graph_rules.py (the server refuses the same contradictions;
 * tests/browser run both on the same cases and compare).
 *
 *   AnnotationGraph.analyse(relations, names) -> {implied: [...], contradictions: [{index, message}]}
 *     relations: [{first, second, kind}] with kind before / after / simultaneous, in the order stated.
 *     Implied relations come from the chain rule of X-ACE (Eq. 1-2) applied to any two relations that
 *     share an event: equal relations propagate, "simultaneous" yields the other one, before+after tell
 *     nothing. A pair that ends up with two different relations is a contradiction; the stated relation
 *     that brought it in is reported (with the chain that explains it) and left out.
 */
window.AnnotationGraph = (function () {
  "use strict";

  const KINDS = ["before", "after", "simultaneous"];
  const INVERSE = {before: "after", after: "before", simultaneous: "simultaneous"};

  function compose(first, second) {
    if (first === second) return first;
    if (first === "simultaneous") return second;
    if (second === "simultaneous") return first;
    return null;
  }

  function relation(first, second, kind, via, reversedReading) {
    return {first: first, second: second, kind: kind, via: via || null, reversedReading: !!reversedReading};
  }

  function inverse(item) {
    return relation(item.second, item.first, INVERSE[item.kind], item.via, !item.reversedReading);
  }

  function describe(item, names) {
    const name = (key) => (names && key in names ? names[key] : key);
    return name(item.first) + " " + item.kind + " " + name(item.second);
  }

  function explain(item, names) {
    if (item.reversedReading) item = inverse(item);
    if (!item.via) return describe(item, names);
    return describe(item, names) + " (implied by " + explain(item.via[0], names) + " and " + explain(item.via[1], names) + ")";
  }

  function pairKey(first, second) {
    return JSON.stringify([first, second]);
  }

  // Add `stated` and all it implies to a copy of `known`; {known, added, problem}.
  function close(known, stated, names) {
    known = new Map(known);
    const added = [];
    const pending = [stated];
    while (pending.length) {
      const item = pending.shift();
      if (item.first === item.second) continue;
      const existing = known.get(pairKey(item.first, item.second));
      if (existing) {
        if (existing.kind !== item.kind) {
          return {known: known, added: added, problem: explain(item, names) + " contradicts " + explain(existing, names)};
        }
        continue;
      }
      known.set(pairKey(item.first, item.second), item);
      known.set(pairKey(item.second, item.first), inverse(item));
      added.push(pairKey(item.first, item.second));
      for (const other of Array.from(known.values())) {
        if (other.first === item.second) {
          const kind = compose(item.kind, other.kind);
          if (kind) pending.push(relation(item.first, other.second, kind, [item, other]));
        }
        if (other.second === item.first) {
          const kind = compose(other.kind, item.kind);
          if (kind) pending.push(relation(other.first, item.second, kind, [other, item]));
        }
      }
    }
    return {known: known, added: added, problem: null};
  }

  function analyse(relations, names) {
    let known = new Map();
    const order = [];
    const contradictions = [];
    relations.forEach((stated, index) => {
      if (KINDS.indexOf(stated.kind) < 0) throw new Error("unknown relation kind " + stated.kind);
      if (stated.first === stated.second) {
        const name = names && stated.first in names ? names[stated.first] : stated.first;
        contradictions.push({index: index, message: name + ": an event cannot be related to itself"});
        return;
      }
      const result = close(known, relation(stated.first, stated.second, stated.kind), names);
      if (result.problem) {
        contradictions.push({index: index, message: result.problem});
        return;
      }
      known = result.known;
      order.push(...result.added);
    });
    const implied = order.map((key) => {
      const item = known.get(key);
      return {first: item.first, second: item.second, kind: item.kind, isImplied: !!item.via, explanation: explain(item, names)};
    });
    return {implied: implied, contradictions: contradictions};
  }

  function libraryKey(text) {
    return String(text).trim().split(/\s+/).join(" ").toLowerCase();
  }

  function newEventId(events) {
    let highest = 0;
    for (const event of events) {
      const match = /^e(\d+)$/.exec(event.id);
      if (match) highest = Math.max(highest, Number(match[1]));
    }
    return "e" + (highest + 1);
  }

  function emptyDraft() {
    return {events: [], relations: [], note: ""};
  }

  function clone(draft) {
    return JSON.parse(JSON.stringify(draft));
  }

  return {KINDS: KINDS, analyse: analyse, libraryKey: libraryKey, newEventId: newEventId, emptyDraft: emptyDraft, clone: clone};
})();
