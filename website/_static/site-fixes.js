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
    const words = document.documentElement.lang === "ko"  // a Korean page speaks Korean (issue 44)
      ? { copy: "복사", label: "이 코드 복사", copied: "복사함", manual: "Ctrl+C를 누르세요" }
      : { copy: "Copy", label: "Copy this code", copied: "Copied", manual: "Press Ctrl+C" };
    button.type = "button";
    button.className = "shiftvit-copy";
    button.textContent = words.copy;
    button.setAttribute("aria-label", words.label);
    button.addEventListener("click", () => {
      const done = (label) => { button.textContent = label; setTimeout(() => { button.textContent = words.copy; }, 1500); };
      const select = () => {  // where the clipboard API is refused: select the code and copy that
        const range = document.createRange();
        range.selectNodeContents(pre);
        const selection = window.getSelection();
        selection.removeAllRanges();
        selection.addRange(range);
        done(document.execCommand("copy") ? words.copied : words.manual);
      };
      if (navigator.clipboard && window.isSecureContext) {
        navigator.clipboard.writeText(pre.innerText).then(() => done(words.copied), select);
      } else {
        select();
      }
    });
    box.classList.add("has-copy");
    box.appendChild(button);
  });
});

// search-language:begin (issue 38) A search stays in the reader's language: a search box on a
// Korean page (<html lang="ko">) opens the Korean search page (issue 44) and asks for Korean pages
// (lang=ko), and the search page lists only the pages of the language asked for, or else of the
// query's script (Hangul: Korean; otherwise English).
document.addEventListener("DOMContentLoaded", () => {
  if (document.documentElement.lang !== "ko") return;
  document.querySelectorAll("form.bd-search, form[action$='search.html']").forEach((form) => {
    if (form.querySelector("input[name='lang']")) return;
    const input = document.createElement("input");
    Object.assign(input, { type: "hidden", name: "lang", value: "ko" });
    form.appendChild(input);
  });
});
(() => {
  const params = new URLSearchParams(window.location.search);
  if (!params.has("q")) return;
  // the Korean search page (notebooks/ko/search.html, <html lang="ko">) lists Korean pages only
  const asked = document.documentElement.lang === "ko" ? "ko" : params.get("lang");
  const korean = asked ? asked === "ko" : /[\uac00-\ud7a3]/.test(params.get("q"));
  const patch = () => {
    if (typeof Search === "undefined" || Search._shiftvitLanguage) return;
    const search = Search._performSearch;
    Search._performSearch = (...args) =>
      search(...args).filter((result) => String(result[0]).startsWith("notebooks/ko/") === korean);
    Search._shiftvitLanguage = true;
  };
  patch();
  document.addEventListener("DOMContentLoaded", patch);
})();
// search-language:end

// A search page below the site's root (the Korean one, notebooks/ko/search.html; issue 44): Sphinx
// writes each result's link relative to the root, so it is made relative to this page here.
(() => {
  const root = document.documentElement.dataset.content_root || "";
  if (!root || root === "./" || !/search\.html$/.test(window.location.pathname)) return;
  const fix = (link) => {
    const href = link.getAttribute("href");
    if (href && !link.dataset.shiftvitRooted && !/^(?:[a-z]+:|\/|#|\.\.\/)/i.test(href)) {
      link.setAttribute("href", root + href);
      link.dataset.shiftvitRooted = "1";
    }
  };
  document.addEventListener("DOMContentLoaded", () => {
    const results = document.getElementById("search-results");
    if (!results) return;
    new MutationObserver(() => results.querySelectorAll("ul a[href]").forEach(fix))
      .observe(results, { childList: true, subtree: true });
  });
})();
