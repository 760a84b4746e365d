/*
 * The event editor's vocabulary: the attribute tag library (in category order, and in the order typed text is
 * searched: most used first), the library tag of an attribute (its text or the template it fills in), which
 * attributes clash, and whether a source is in the list of common sound sources. The same readings as
 * annotation/vocabulary.py and annotation/tag_library.py.
 */
window.EventEditorParts = window.EventEditorParts || {};
window.EventEditorParts.TagLibrary = (function () {
  "use strict";

  const CATEGORIES = ["Duration", "Volume", "Pitch", "Location", "Count", "Distance", "Variation", "Tone", "Other"];
  const Graph = window.AnnotationGraph;
  const {BLANK} = window.EventEditorParts.common;

  function escapeRegExp(text) {
    return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  }

  /* Plural readings of the last word, as annotation/vocabulary.py reads them ("puppies" -> "puppy"). */
  function singulars(key) {
    const cut = key.lastIndexOf(" ");
    const prefix = cut >= 0 ? key.slice(0, cut + 1) : "";
    const last = key.slice(cut + 1);
    const forms = [];
    if (last.endsWith("ies") && last.length > 4) forms.push(prefix + last.slice(0, -3) + "y");
    if (last.endsWith("es") && last.length > 3) forms.push(prefix + last.slice(0, -2));
    if (last.endsWith("s") && last.length > 2) forms.push(prefix + last.slice(0, -1));
    return forms;
  }

  class TagLibrary {
    /* `library`: the tag library's tags; `used`: the attributes annotators used, most used first (library
     * tags, filled-in templates such as "into a microphone", free text two annotations used);
     * `soundSources`: the list of common sound sources. */
    constructor(library, used, soundSources) {
      const order = new Map(CATEGORIES.map((name, index) => [name, index]));
      this.library = library.map((tag) => ({
        text: tag.template || tag.text, tag: tag.text, category: tag.category, template: tag.template || "", origin: tag.origin,
        synonym_group: tag.synonym_group, antonym_groups: tag.antonym_groups || [],
      }));
      this.library.sort((a, b) => (order.get(a.category) - order.get(b.category)) || a.text.localeCompare(b.text));
      this.libraryByKey = new Map(this.library.map((tag) => [Graph.libraryKey(tag.tag), tag]));
      this.templates = this.library.filter((tag) => tag.template).map((tag) => {
        const [before, after] = Graph.libraryKey(tag.template).split(BLANK);
        return {tag: tag, prefix: before, pattern: new RegExp("^" + escapeRegExp(before) + "\\S.*" + escapeRegExp(after || "") + "$")};
      });
      this.byUse = this._byUse(used);
      this.sourceKeys = new Set(soundSources.map((text) => Graph.libraryKey(text)));
    }

    /* The order the typed text is searched in: the used attributes, then the other tags, shortest first. */
    _byUse(used) {
      const byUse = [];
      const listed = new Set();
      for (const text of used) {
        const tag = this.tagOf(text);
        if (tag && !tag.template) {
          if (!listed.has(tag)) byUse.push(tag);
          listed.add(tag);
        } else {
          // A filled-in template belongs to its tag's category; free text is offered apart, and still flagged.
          byUse.push({text: text, tag: text, category: tag ? tag.category : null, template: "", origin: tag ? tag.origin : "used"});
        }
      }
      const rest = this.library.filter((tag) => !listed.has(tag));
      rest.sort((a, b) => (a.text.length - b.text.length) || a.text.localeCompare(b.text));
      return byUse.concat(rest);
    }

    /* The library tag of an attribute (by its text, or the template it fills in), as annotation/vocabulary.py. */
    tagOf(text) {
      const key = Graph.libraryKey(text);
      if (!key) return null;
      if (this.libraryByKey.has(key)) return this.libraryByKey.get(key);
      const template = this.templates.find((entry) => entry.pattern.test(key));
      return template ? template.tag : null;
    }

    /* The template whose words before the blank `text` is ("on a"): its word is still to come. */
    awaitingWord(text) {
      return this.templates.find((entry) => Graph.libraryKey(text) === entry.prefix.trim()) || null;
    }

    /* What clashes with attribute `index` of `attributes` (an earlier one the tag library calls its opposite, or
     * another count), as annotation/tag_library.tag_conflict has it: {text, kind} or null. */
    attributeClash(attributes, index) {
      const tag = this.tagOf(attributes[index]);
      if (!tag || tag.synonym_group === undefined) return null;
      for (const text of attributes.slice(0, index)) {
        const other = this.tagOf(text);
        if (!other || other.category !== tag.category || other.synonym_group === tag.synonym_group) continue;
        if (tag.category === "Count") return {text: text, kind: "count"};
        if ((tag.antonym_groups || []).includes(other.synonym_group) || (other.antonym_groups || []).includes(tag.synonym_group)) return {text: text, kind: "antonym"};
      }
      return null;
    }

    sourceIsListed(text) {
      const key = Graph.libraryKey(text);
      if (!key) return false;
      return this.sourceKeys.has(key) || this.sourceKeys.has(key + "s") || singulars(key).some((form) => this.sourceKeys.has(form));
    }
  }

  TagLibrary.CATEGORIES = CATEGORIES;
  return TagLibrary;
})();
