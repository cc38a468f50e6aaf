// Diagrams that stay readable. Registered under extra_javascript in mkdocs.yml; no library,
// so it works offline.
//
// 1. Never too small: mermaid scales a diagram down to the column's width, and a wide graph's
//    labels would shrink to 5 px. A diagram is shrunk at most until its smallest text is
//    MIN_TEXT_PX high; a wider one scrolls sideways in its box (the browser tests check the
//    rule: every diagram's text at least 10 px high).
// 2. Click (or Enter) to see it full size: an overlay shows a copy of its SVG at the size
//    mermaid drew it (its viewBox), scrollable when larger than the screen. A click or Escape
//    closes it.
//
// Material draws each diagram into a *closed* shadow root of a <div class="mermaid">, which a
// script cannot reach through the element. This script runs before Material draws (after its
// bundle has loaded, before DOMContentLoaded), so it can keep each root as it is attached.
(() => {
  "use strict";
  const roots = new WeakMap();
  const attachShadow = Element.prototype.attachShadow;
  Element.prototype.attachShadow = function (init) {
    const root = attachShadow.call(this, init);
    roots.set(this, root);
    return root;
  };

  const svgOf = (diagram) => {
    const root = roots.get(diagram) || diagram.shadowRoot;
    return root ? root.querySelector("svg") : null;
  };

  const MIN_TEXT_PX = 10.5; // a little above the tests' 10 px, for rounding

  // The font size (at the SVG's own scale) of the smallest text in it.
  const smallestFont = (svg) => {
    let smallest = Infinity;
    for (const element of svg.querySelectorAll("*")) {
      const hasText = [...element.childNodes].some(
        (node) => node.nodeType === Node.TEXT_NODE && node.textContent.trim() !== "",
      );
      if (!hasText) continue;
      const size = parseFloat(getComputedStyle(element).fontSize);
      if (size > 0) smallest = Math.min(smallest, size);
    }
    return smallest;
  };

  const keepReadable = (diagram) => {
    const svg = svgOf(diagram);
    const box = svg && svg.viewBox.baseVal;
    if (!box || box.width <= 0) return;
    const font = smallestFont(svg);
    if (!Number.isFinite(font)) return;
    const scale = Math.min(1, MIN_TEXT_PX / font);
    svg.style.minWidth = `${Math.ceil(box.width * scale)}px`;
  };

  let overlay = null;
  let opener = null;

  const close = () => {
    if (overlay === null) return;
    overlay.remove();
    overlay = null;
    document.documentElement.style.overflow = "";
    if (opener) opener.focus({ preventScroll: true });
  };

  const open = (diagram) => {
    const svg = svgOf(diagram);
    if (svg === null) return; // not drawn yet
    close();
    const copy = svg.cloneNode(true);
    const box = svg.viewBox.baseVal;
    if (box && box.width > 0) {
      copy.setAttribute("width", String(box.width));
      copy.setAttribute("height", String(box.height));
    }
    copy.style.maxWidth = "none";
    overlay = document.createElement("div");
    overlay.className = "diagram-zoom";
    overlay.setAttribute("role", "dialog");
    overlay.setAttribute("aria-modal", "true");
    overlay.setAttribute("aria-label", "Diagram, full size");
    overlay.tabIndex = -1;
    const hint = document.createElement("div");
    hint.className = "diagram-zoom__hint";
    hint.textContent = "Click or press Escape to close";
    const figure = document.createElement("div");
    figure.className = "diagram-zoom__figure";
    // its own shadow root, as on the page, so the site's styles leave the drawing alone
    figure.attachShadow({ mode: "open" }).append(copy);
    overlay.append(hint, figure);
    overlay.addEventListener("click", close);
    document.body.append(overlay);
    document.documentElement.style.overflow = "hidden"; // the overlay scrolls, not the page
    opener = diagram;
    overlay.focus({ preventScroll: true });
  };

  const diagramAt = (target) =>
    target instanceof Element ? target.closest(".md-typeset div.mermaid") : null;

  document.addEventListener("click", (event) => {
    const diagram = diagramAt(event.target);
    if (diagram !== null) open(diagram);
  });
  document.addEventListener("keydown", (event) => {
    if (event.key === "Escape" && overlay !== null) {
      event.preventDefault();
      close();
      return;
    }
    const diagram = diagramAt(event.target);
    if (diagram !== null && (event.key === "Enter" || event.key === " ")) {
      event.preventDefault();
      open(diagram);
    }
  });
  // Diagrams are drawn after the page loads (Material puts each one's SVG into its shadow root,
  // then the <div> into the page): set each one up as it arrives.
  new MutationObserver(() => {
    for (const diagram of document.querySelectorAll(".md-typeset div.mermaid:not([tabindex])")) {
      if (svgOf(diagram) === null) continue;
      keepReadable(diagram);
      diagram.tabIndex = 0;
      diagram.setAttribute("role", "button");
      diagram.title = "Click to see the diagram full size";
    }
  }).observe(document.documentElement, { childList: true, subtree: true });
})();
