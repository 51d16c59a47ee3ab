// Issue 37: search summaries without fetching every page that matches.
// Sphinx's search fetches each result's whole page to cut a summary from it (8.6 MB for "shift").
// website/_ext/light_pages.py writes the text of every section once, into
// search-summaries-data.js (window.SHIFTVIT_SUMMARIES: page -> [[section id, text], ...]); here a
// request for a page of the site is answered from it, so a search downloads nothing more, from
// http:// and from file:// alike.
(() => {
  const summaries = window.SHIFTVIT_SUMMARIES;
  if (!summaries) return;
  const root = new URL(document.documentElement.dataset.content_root || "./", window.location.href);
  const escape = (text) => text.replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[c]);
  const page = (sections) =>
    '<div role="main">' +
    sections.map(([id, text]) => `<section${id ? ` id="${escape(id)}"` : ""}><p>${escape(text)}</p></section>`).join("") +
    "</div>";
  const fetchPage = window.fetch.bind(window);
  window.fetch = (resource, options) => {
    const url = new URL(typeof resource === "string" ? resource : resource.url, window.location.href);
    const name = decodeURIComponent(url.href.slice(root.href.length)).replace(/\.html$/, "");
    if (url.href.startsWith(root.href) && Object.hasOwn(summaries, name)) {
      return Promise.resolve(new Response(page(summaries[name]), { headers: { "Content-Type": "text/html" } }));
    }
    return fetchPage(resource, options);
  };
  if (typeof DOCUMENTATION_OPTIONS !== "undefined") DOCUMENTATION_OPTIONS.SHOW_SEARCH_SUMMARY = true;
})();

// A result's summary is the page's text, never the theme's menus, should a page be fetched after all
// (a result without an entry above). Opened from file://, such a fetch would fail: titles only then.
(() => {
  if (window.location.protocol === "file:" && !window.SHIFTVIT_SUMMARIES && typeof DOCUMENTATION_OPTIONS !== "undefined") {
    DOCUMENTATION_OPTIONS.SHOW_SEARCH_SUMMARY = false;
  }
  const patch = () => {
    if (typeof Search === "undefined" || Search._shiftvitClean) return;
    const original = Search.htmlToText;
    Search.htmlToText = (htmlString, anchor) => {
      const page = new DOMParser().parseFromString(htmlString, "text/html");
      page.querySelectorAll(
        ".theme-switch-button, .header-article, .bd-header-article, .dropdown, button, nav, .bd-sidebar-secondary, .prev-next-area, .onlyprint, .d-print-none"
      ).forEach((el) => el.remove());
      return original(page.documentElement.outerHTML, anchor);
    };
    Search._shiftvitClean = true;
  };
  patch();
  document.addEventListener("DOMContentLoaded", patch);
})();
