/*
 * DraftMerge: three-way merge of two editor drafts against the version both started from.
 *
 *   const result = DraftMerge.merge(base, mine, theirs);
 *   result.conflicts  // [] when everything merged; else what changed on both sides, for the user to choose
 *   DraftMerge.resolve(result, {key: "mine" | "theirs" | "both"})  // -> {draft, dropped}
 *
 * The unit is the event (by its id), the relation (by its pair of events) and the note. What only one side
 * added, edited or deleted is taken as it is; what both sides changed the same way is taken once; what both
 * changed differently (or one edited and the other deleted) is a conflict. Two events both sides added under
 * the same id are different events (each tab numbers its new events from the same counter): both are kept,
 * this side's under a fresh id. A relation left without one of its events is dropped and reported.
 */
window.DraftMerge = (function () {
  "use strict";

  /* JSON with sorted keys: the server may store objects with their keys in another order (PostgreSQL jsonb). */
  function canonical(value) {
    if (Array.isArray(value)) return "[" + value.map(canonical).join(",") + "]";
    if (value && typeof value === "object") {
      return "{" + Object.keys(value).sort().map((key) => JSON.stringify(key) + ":" + canonical(value[key])).join(",") + "}";
    }
    return JSON.stringify(value === undefined ? null : value);
  }

  function same(a, b) {
    return canonical(a) === canonical(b);
  }

  /* One event in the editor's shape (spans sorted; the earlier onset/offset form read as one span). */
  function normalEvent(event) {
    let spans = event.spans;
    if (!spans) spans = event.onset !== null && event.onset !== undefined ? [[event.onset, event.offset === null || event.offset === undefined ? event.onset : event.offset]] : [];
    spans = spans.map((span) => [Number(span[0]), Number(span[1])]).sort((a, b) => a[0] - b[0] || a[1] - b[1]);
    return {id: event.id, label: event.label || "", sources: event.sources || [], attributes: event.attributes || [], spans: spans};
  }

  function normal(draft) {
    draft = draft || {};
    return {
      events: (draft.events || []).map(normalEvent),
      relations: (draft.relations || []).map((r) => ({first: r.first, second: r.second, kind: r.kind})),
      note: draft.note || "",
    };
  }

  function pairKey(relation) {
    return [relation.first, relation.second].sort().join("\u0000");
  }

  /* Three-way choice for one unit present (or not: null) in base, mine and theirs: {value} or {conflict}. */
  function pick(base, mine, theirs) {
    if (same(mine, theirs)) return {value: mine};
    if (same(mine, base)) return {value: theirs};
    if (same(theirs, base)) return {value: mine};
    return {conflict: true};
  }

  function freshId(taken) {
    let highest = 0;
    taken.forEach((id) => {
      const match = /^e(\d+)$/.exec(id);
      if (match) highest = Math.max(highest, Number(match[1]));
    });
    return "e" + (highest + 1);
  }

  function merge(baseDraft, mineDraft, theirsDraft) {
    const base = normal(baseDraft);
    const mine = normal(mineDraft);
    const theirs = normal(theirsDraft);
    const baseEvents = new Map(base.events.map((e) => [e.id, e]));
    const theirEvents = new Map(theirs.events.map((e) => [e.id, e]));
    const taken = new Set([...base.events, ...mine.events, ...theirs.events].map((e) => e.id));

    // Both sides added a different event under one id: this side's gets a fresh id (its relations follow).
    const renamed = {};
    mine.events.forEach((event) => {
      const other = theirEvents.get(event.id);
      if (!baseEvents.has(event.id) && other && !same(event, other)) {
        const id = freshId(taken);
        taken.add(id);
        renamed[event.id] = id;
        event.id = id;
      }
    });
    mine.relations.forEach((r) => {
      r.first = renamed[r.first] || r.first;
      r.second = renamed[r.second] || r.second;
    });
    const myEvents = new Map(mine.events.map((e) => [e.id, e]));

    // Order: the other side's list, with this side's new events after the event they followed here.
    const order = theirs.events.map((e) => e.id);
    mine.events.forEach((event, index) => {
      if (order.includes(event.id)) return;
      const before = index ? mine.events[index - 1].id : null;
      order.splice(before === null ? 0 : order.indexOf(before) + 1, 0, event.id);
    });
    base.events.forEach((event) => { if (!order.includes(event.id)) order.push(event.id); });

    const slots = [];
    const conflicts = [];
    const counts = {fromMine: 0, fromTheirs: 0};
    order.forEach((id) => {
      const b = baseEvents.get(id) || null;
      const m = myEvents.get(id) || null;
      const t = theirEvents.get(id) || null;
      const choice = pick(b, m, t);
      if (choice.conflict) {
        conflicts.push({key: "event:" + id, type: "event", base: b, mine: m, theirs: t});
        slots.push({conflict: "event:" + id});
        return;
      }
      if (!same(m, b) && same(choice.value, m) && !same(m, t)) counts.fromMine += 1;
      if (!same(t, b) && same(choice.value, t) && !same(m, t)) counts.fromTheirs += 1;
      if (choice.value) slots.push({event: choice.value});
    });

    const relationOrder = [];
    const maps = [base, mine, theirs].map((draft) => {
      const map = new Map();
      draft.relations.forEach((r) => {
        const key = pairKey(r);
        map.set(key, r);
        if (!relationOrder.includes(key)) relationOrder.push(key);
      });
      return map;
    });
    const relations = [];
    relationOrder.forEach((key) => {
      const [b, m, t] = maps.map((map) => map.get(key) || null);
      const choice = pick(b, m, t);
      if (choice.conflict) {
        conflicts.push({key: "relation:" + key, type: "relation", base: b, mine: m, theirs: t});
        relations.push({conflict: "relation:" + key});
        return;
      }
      if (!same(m, b) && same(choice.value, m) && !same(m, t)) counts.fromMine += 1;
      if (!same(t, b) && same(choice.value, t) && !same(m, t)) counts.fromTheirs += 1;
      if (choice.value) relations.push({relation: choice.value});
    });

    let note = pick(base.note, mine.note, theirs.note);
    if (note.conflict) {
      conflicts.push({key: "note", type: "note", base: base.note, mine: mine.note, theirs: theirs.note});
      note = {conflict: "note"};
    }
    const result = {slots: slots, relations: relations, note: note, conflicts: conflicts, counts: counts, renamed: renamed};
    if (!conflicts.length) Object.assign(result, resolve(result, {}));
    return result;
  }

  /* The merged draft once every conflict has a choice: "mine", "theirs" or (both present) "both". */
  function resolve(result, choices) {
    const byKey = new Map(result.conflicts.map((c) => [c.key, c]));
    const missing = result.conflicts.filter((c) => !choices[c.key]);
    if (missing.length) throw new Error("no choice for " + missing.map((c) => c.key).join(", "));
    const events = [];
    const taken = new Set();
    result.slots.forEach((slot) => { if (slot.event) taken.add(slot.event.id); });
    result.conflicts.forEach((c) => { [c.mine, c.theirs].forEach((e) => { if (e && c.type === "event") taken.add(e.id); }); });
    const extraRelations = [];
    result.slots.forEach((slot) => {
      if (slot.event) {
        events.push(slot.event);
        return;
      }
      const conflict = byKey.get(slot.conflict);
      const choice = choices[conflict.key];
      if (choice === "both" && conflict.mine && conflict.theirs) {
        events.push(conflict.theirs);
        const id = freshId(taken);
        taken.add(id);
        events.push(Object.assign({}, conflict.mine, {id: id}));
        // The copy keeps this side's relations of that event, where they do not clash with the kept ones.
        extraRelations.push({from: conflict.mine.id, to: id});
        return;
      }
      const kept = choice === "theirs" ? conflict.theirs : conflict.mine;
      if (kept) events.push(kept);
    });
    const ids = new Set(events.map((e) => e.id));
    const relations = [];
    const dropped = [];
    result.relations.forEach((slot) => {
      let relation = slot.relation;
      if (!relation) {
        const conflict = byKey.get(slot.conflict);
        relation = choices[conflict.key] === "theirs" ? conflict.theirs : conflict.mine;
      }
      if (!relation) return;
      if (ids.has(relation.first) && ids.has(relation.second)) relations.push(relation);
      else dropped.push(relation);
    });
    const pairs = new Set(relations.map(pairKey));
    extraRelations.forEach(({from, to}) => {
      relations.slice().forEach((relation) => {
        if (relation.first !== from && relation.second !== from) return;
        const copy = {first: relation.first === from ? to : relation.first, second: relation.second === from ? to : relation.second, kind: relation.kind};
        if (!pairs.has(pairKey(copy))) {
          pairs.add(pairKey(copy));
          relations.push(copy);
        }
      });
    });
    let note = result.note.value;
    if (note === undefined) {
      const conflict = byKey.get("note");
      const choice = choices.note;
      note = choice === "both" ? [conflict.theirs, conflict.mine].filter(Boolean).join("\n") : choice === "theirs" ? conflict.theirs : conflict.mine;
    }
    return {draft: {events: events, relations: relations, note: note || ""}, dropped: dropped};
  }

  // -- words for the conflict view ----------------------------------------------------------------------
  function seconds(value) {
    return String(Math.round(value * 100) / 100);
  }

  function spanText(span) {
    return seconds(span[0]) + "–" + seconds(span[1]) + " s";
  }

  function describeEvent(event) {
    if (!event) return "deleted";
    const parts = ["'" + (event.label.trim() || "unnamed") + "'"];
    if (event.spans.length) parts.push(event.spans.map(spanText).join(", "));
    if (event.sources.length) parts.push("sources: " + event.sources.join(", "));
    if (event.attributes.length) parts.push("attributes: " + event.attributes.join(", "));
    return parts.join("; ");
  }

  /* What choosing `kept` over `other` loses of `other` (both edited from `base`), in words ("" when nothing). */
  function lostEvent(kept, other, base) {
    if (!other) return "";
    if (!kept) return "the event " + describeEvent(other);
    const lost = [];
    if (kept.label.trim() !== other.label.trim()) lost.push("name '" + other.label.trim() + "'");
    const missing = (field) => other[field].filter((item) => !kept[field].some((mine) => same(mine, item)));
    missing("sources").forEach((item) => lost.push("source '" + item + "'"));
    missing("attributes").forEach((item) => lost.push("attribute '" + item + "'"));
    missing("spans").forEach((span) => lost.push("span " + spanText(span)));
    // What the other side removed from the version both started from and the kept side still has.
    const removed = (field) => kept[field].filter((item) => base && base[field].some((was) => same(was, item)) && !other[field].some((theirs) => same(theirs, item)));
    const unremoved = [].concat(removed("sources"), removed("attributes"), removed("spans").map(spanText));
    if (unremoved.length) lost.push("its removal of " + unremoved.map((item) => typeof item === "string" && !/ s$/.test(item) ? "'" + item + "'" : item).join(", "));
    return lost.join(", ");
  }

  function describeRelation(relation, names) {
    if (!relation) return "no relation";
    const name = (id) => names[id] || id;
    return name(relation.first) + " " + relation.kind + " " + name(relation.second);
  }

  return {canonical: canonical, same: same, merge: merge, resolve: resolve, describeEvent: describeEvent, lostEvent: lostEvent, describeRelation: describeRelation, normal: normal};
})();
