/*
 * AnnotationGraph: the rules of an annotation graph the editor needs at every keystroke, without a
 * server round trip. Mirrors common/graph_rules.py (the server refuses the same contradictions;
 * tests/browser run both on the same cases and compare).
 *
 *   AnnotationGraph.analyse(relations, names) -> {implied: [...], contradictions: [{index, message}], closure}
 *     relations: [{first, second, kind}] with kind before / after / simultaneous, in the order stated.
 *     Implied relations come from the chain rule of X-ACE (Eq. 1-2) applied to any two relations that
 *     share an event: equal relations propagate, "simultaneous" yields the other one, before+after tell
 *     nothing. A pair that ends up with two different relations is a contradiction; the stated relation
 *     that brought it in is reported (with the chain that explains it) and left out.
 *   AnnotationGraph.derive(relations, spans, names) -> the same with implied relations the spans contradict
 *     left out (listed in `dropped` with the reason): the one rule of common/time_relations.py relations_derive.
 *   AnnotationGraph.spanRelation(spans, spans) / timeConflict(kind, spans, spans, names) /
 *     timeProposals([[key, spans]], relations): relations against the events' time spans, as
 *     common/time_relations.py has them (both run the cases of tests/annotation/data/time_relation_cases.json).
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

  // Add `stated` and all it implies to a copy of `known`; {known, added, problem}. Implied relations `veto`
  // refuses (it returns the reason) go to `dropped` (pair key -> {relation, reason}) instead.
  function close(known, stated, names, veto, dropped) {
    known = new Map(known);
    const added = [];
    const pending = [stated];
    while (pending.length) {
      const item = pending.shift();
      if (item.first === item.second) continue;
      const existing = known.get(pairKey(item.first, item.second));
      if (existing && existing.kind === item.kind) continue;
      if (item.via && veto) {
        const reason = veto(item);  // asked first: what the spans refuse contradicts nothing
        if (reason !== null) {
          const key = pairKey(item.first, item.second);
          if (dropped && !dropped.has(key) && !dropped.has(pairKey(item.second, item.first))) dropped.set(key, {relation: item, reason: reason});
          continue;
        }
      }
      if (existing) {
        return {known: known, added: added, problem: explain(item, names) + " contradicts " + explain(existing, names)};
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

  /* A copy of `closure` (analyse(...).closure) with first-kind-second and all it implies; null on a contradiction. */
  function closureWith(closure, first, second, kind) {
    const result = close(closure, relation(first, second, kind), {});
    return result.problem ? null : result.known;
  }

  function analyse(relations, names, veto) {
    let known = new Map();
    let dropped = new Map();
    const order = [];
    const contradictions = [];
    relations.forEach((stated, index) => {
      if (KINDS.indexOf(stated.kind) < 0) throw new Error("unknown relation kind " + stated.kind);
      if (stated.first === stated.second) {
        const name = names && stated.first in names ? names[stated.first] : stated.first;
        contradictions.push({index: index, message: name + ": an event cannot be related to itself"});
        return;
      }
      const trialDropped = new Map(dropped);
      const result = close(known, relation(stated.first, stated.second, stated.kind), names, veto, trialDropped);
      if (result.problem) {
        contradictions.push({index: index, message: result.problem});
        return;
      }
      known = result.known;
      dropped = trialDropped;
      order.push(...result.added);
    });
    const implied = order.map((key) => {
      const item = known.get(key);
      return {first: item.first, second: item.second, kind: item.kind, isImplied: !!item.via, explanation: explain(item, names)};
    });
    const droppedList = Array.from(dropped.entries()).filter(([key]) => !known.has(key)).map(([, {relation: item, reason}]) => (
      {first: item.first, second: item.second, kind: item.kind, explanation: explain(item, names), reason: reason}
    ));
    return {implied: implied, contradictions: contradictions, closure: known, dropped: droppedList};
  }

  /* The stated relations closed under the chain rule as far as the spans allow (common.time_relations
   * relations_derive): between two events with spans an implied relation other than what the spans imply is
   * dropped (listed in `dropped` with the reason) and composed no further. spans: {eventKey: [[onset, offset]]}. */
  function derive(relations, spans, names) {
    const merged = new Map(Object.entries(spans || {}).map(([key, eventSpans]) => [key, mergedSpans(eventSpans)]));
    const name = (key) => (names && key in names ? names[key] : key);
    const veto = (item) => {
      const first = merged.get(item.first) || [];
      const second = merged.get(item.second) || [];
      if (!first.length || !second.length || spanRelation(first, second) === item.kind) return null;
      const conflict = timeConflict(item.kind, first, second, [name(item.first), name(item.second)]);
      if (conflict) return conflict.message;
      return name(item.first) + " (" + extent(first) + ") " + item.kind + " " + name(item.second) + " (" + extent(second) + "): the spans do not say so";
    };
    return analyse(relations, names, veto);
  }

  // -- Relations against time spans: common/time_relations.py, the same rules ----------------------------
  const TOLERANCE_SECONDS = 0.1;

  function mergedSpans(spans) {
    const sorted = (spans || []).map((span) => [Number(span[0]), Number(span[1])]).sort((a, b) => a[0] - b[0] || a[1] - b[1]);
    const merged = [];
    for (const [onset, offset] of sorted) {
      if (merged.length && onset <= merged[merged.length - 1][1]) merged[merged.length - 1][1] = Math.max(merged[merged.length - 1][1], offset);
      else merged.push([onset, offset]);
    }
    return merged;
  }

  function total(spans) {
    return spans.reduce((sum, [onset, offset]) => sum + offset - onset, 0);
  }

  function overlapSeconds(first, second) {
    let sum = 0;
    let i = 0;
    let j = 0;
    while (i < first.length && j < second.length) {
      const start = Math.max(first[i][0], second[j][0]);
      const end = Math.min(first[i][1], second[j][1]);
      if (end > start) sum += end - start;
      if (first[i][1] < second[j][1]) i += 1;
      else j += 1;
    }
    return sum;
  }

  function pointInside(points, other) {
    return points.some(([point]) => other.some(([onset, offset]) => onset <= point && point <= offset));
  }

  /* before / after / simultaneous as two events' spans imply it, or null. */
  function spanRelation(firstSpans, secondSpans) {
    const first = mergedSpans(firstSpans);
    const second = mergedSpans(secondSpans);
    if (!first.length || !second.length) return null;
    const firstTotal = total(first);
    const secondTotal = total(second);
    const shorter = Math.min(firstTotal, secondTotal);
    if (shorter > 0) {
      if (overlapSeconds(first, second) >= 0.5 * shorter) return "simultaneous";
    } else if (firstTotal === 0 ? pointInside(first, second) : pointInside(second, first)) {
      return "simultaneous";
    }
    if (first[first.length - 1][1] <= second[0][0] + TOLERANCE_SECONDS) return "before";
    if (second[second.length - 1][1] <= first[0][0] + TOLERANCE_SECONDS) return "after";
    return null;
  }

  function extent(spans) {
    return spans.map(([onset, offset]) => onset.toFixed(2) + "–" + offset.toFixed(2)).join(", ") + " s";
  }

  /* Why "first kind second" contradicts the spans ({reason, implied, message}), or null. */
  function timeConflict(kind, firstSpans, secondSpans, names) {
    const first = mergedSpans(firstSpans);
    const second = mergedSpans(secondSpans);
    if (!first.length || !second.length) return null;
    names = names || ["first", "second"];
    const stated = names[0] + " (" + extent(first) + ") " + kind + " " + names[1] + " (" + extent(second) + ")";
    const implied = spanRelation(first, second);
    if (implied !== null) {
      return implied === kind ? null : {reason: "implied", implied: implied, message: stated + ": the spans say " + implied};
    }
    if (kind === "simultaneous" && overlapSeconds(first, second) === 0) {
      return {reason: "never_together", implied: null, message: stated + ": they never sound at the same time"};
    }
    const last = (spans) => spans[spans.length - 1][1];
    const startsLater = first[0][0] >= second[0][0] && last(first) >= last(second);
    const startsEarlier = first[0][0] <= second[0][0] && last(first) <= last(second);
    if ((kind === "before" && startsLater) || (kind === "after" && startsEarlier)) {
      return {reason: "order", implied: null, message: stated + ": the spans are in the other order"};
    }
    return null;
  }

  /* Relations the spans imply between events not related yet: [[first, second, kind]] in event order.
   * events: [[key, spans]]; relations: [{first, second, kind}] stated. See time_proposals (Python). */
  function timeProposals(events, relations) {
    let closure = derive(relations || [], Object.fromEntries(events)).closure;
    const order = new Map(events.map(([key], index) => [key, index]));
    const spans = new Map(events.map(([key, eventSpans]) => [key, mergedSpans(eventSpans)]));
    const candidates = [];
    events.forEach(([first], i) => {
      events.slice(i + 1).forEach(([second]) => {
        const kind = spanRelation(spans.get(first), spans.get(second));
        if (kind === null || closure.has(pairKey(first, second))) return;
        const a = spans.get(first);
        const b = spans.get(second);
        const gap = kind === "simultaneous" ? 0 : Math.max(0, b[0][0] - a[a.length - 1][1], a[0][0] - b[b.length - 1][1]);
        candidates.push([gap, order.get(first), order.get(second), first, second, kind]);
      });
    });
    candidates.sort((x, y) => x[0] - y[0] || x[1] - y[1] || x[2] - y[2]);
    const proposals = [];
    for (const [, , , first, second, kind] of candidates) {
      if (closure.has(pairKey(first, second))) continue;
      const trial = closureWith(closure, first, second, kind);
      if (trial === null) continue;
      let conflicts = false;
      for (const [key, item] of trial) {
        if (closure.has(key)) continue;
        if (timeConflict(item.kind, spans.get(item.first) || [], spans.get(item.second) || [])) { conflicts = true; break; }
      }
      if (conflicts) continue;
      closure = trial;
      proposals.push([first, second, kind]);
    }
    return proposals.sort((x, y) => order.get(x[0]) - order.get(y[0]) || order.get(x[1]) - order.get(y[1]));
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

  return {
    KINDS: KINDS, INVERSE: INVERSE, analyse: analyse, derive: derive, closureWith: closureWith, libraryKey: libraryKey,
    newEventId: newEventId, emptyDraft: emptyDraft, clone: clone, TOLERANCE_SECONDS: TOLERANCE_SECONDS,
    mergedSpans: mergedSpans, overlapSeconds: overlapSeconds, spanRelation: spanRelation, timeConflict: timeConflict,
    timeProposals: timeProposals,
  };
})();
