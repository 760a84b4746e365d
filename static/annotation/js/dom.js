/*
 * AnnotationDom: the one DOM helper the workspace scripts share.
 */
window.AnnotationDom = (function () {
  "use strict";

  /* A new element with an optional class name and text. */
  function el(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined && text !== null) node.textContent = text;
    return node;
  }

  return {el: el};
})();
