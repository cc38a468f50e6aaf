// Code blocks wrap their long lines (stylesheets/extra.css). So that the rest of a wrapped
// line is not taken for a line of its own, it goes on under the line's indentation plus four
// columns: this sets each line's indentation (its leading spaces) as the CSS variable
// --indent of the line's <span> (pymdownx.highlight's line_spans), and the width of its line
// number, if it has one, as --gutter.
// Registered under extra_javascript in mkdocs.yml.
(() => {
  "use strict";
  const indent = () => {
    for (const line of document.querySelectorAll('.md-typeset pre > code > span[id^="__span-"]')) {
      const spaces = /^[ \t]*/.exec(line.textContent)[0].replace(/\t/g, "    ").length;
      if (spaces > 0) line.style.setProperty("--indent", `${spaces}ch`);
      const number = line.querySelector(":scope > .linenos");
      if (number !== null) {
        const width = number.getBoundingClientRect().width;
        line.style.setProperty("--gutter", `${Math.ceil(width)}px`);
      }
    }
  };
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", indent);
  } else {
    indent();
  }
})();
