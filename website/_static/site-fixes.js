// A copy button on every code box a reader may run: the lessons' code cells and the shell and code
// blocks in the text (`git clone ...`), never on outputs (no extension, nothing loaded from outside).
// The button sits in a strip above the first line (readable.css: div.highlight.has-copy), so it never
// covers code. The search's summaries: search-summaries.js (issue 37).
document.addEventListener("DOMContentLoaded", () => {
  document.querySelectorAll("div.highlight").forEach((box) => {
    const pre = box.querySelector("pre");
    if (!pre || box.querySelector("button.shiftvit-copy")) return;
    if (box.closest("div.cell_output, div.output")) return;
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
    box.classList.add("has-copy");
    box.appendChild(button);
  });
});
