// Issue 25: search that works from file:// and summaries without the theme's menus.
(() => {
  // Opened from file://, fetch() cannot read the pages a summary is cut from: show titles only
  // rather than one "Failed to fetch" error per result.
  if (window.location.protocol === "file:" && typeof DOCUMENTATION_OPTIONS !== "undefined") {
    DOCUMENTATION_OPTIONS.SHOW_SEARCH_SUMMARY = false;
  }
  const patch = () => {
    if (typeof Search === "undefined" || Search._issue25) return;
    const original = Search.htmlToText;
    Search.htmlToText = (htmlString, anchor) => {
      const page = new DOMParser().parseFromString(htmlString, "text/html");
      // The colour-mode menu, the header's buttons and the article's own toolbar are not content.
      page.querySelectorAll(
        ".theme-switch-button, .header-article, .bd-header-article, .dropdown, button, nav, .bd-sidebar-secondary, .prev-next-area, .onlyprint, .d-print-none"
      ).forEach((el) => el.remove());
      return original(page.documentElement.outerHTML, anchor);
    };
    Search._issue25 = true;
  };
  patch();
  document.addEventListener("DOMContentLoaded", patch);
})();

// A copy button on every code cell (no extension, nothing loaded from outside).
document.addEventListener("DOMContentLoaded", () => {
  document.querySelectorAll("div.cell_input div.highlight").forEach((box) => {
    const pre = box.querySelector("pre");
    if (!pre || box.querySelector("button.shiftvit-copy")) return;
    const button = document.createElement("button");
    button.type = "button";
    button.className = "shiftvit-copy";
    button.textContent = "Copy";
    button.setAttribute("aria-label", "Copy this code");
    button.addEventListener("click", () => {
      const done = (label) => { button.textContent = label; setTimeout(() => { button.textContent = "Copy"; }, 1500); };
      const select = () => {  // where the clipboard API is refused: select the code and copy that
        const range = document.createRange();
        range.selectNodeContents(pre);
        const selection = window.getSelection();
        selection.removeAllRanges();
        selection.addRange(range);
        done(document.execCommand("copy") ? "Copied" : "Press Ctrl+C");
      };
      if (navigator.clipboard && window.isSecureContext) {
        navigator.clipboard.writeText(pre.innerText).then(() => done("Copied"), select);
      } else {
        select();
      }
    });
    box.style.position = "relative";
    box.appendChild(button);
  });
});
