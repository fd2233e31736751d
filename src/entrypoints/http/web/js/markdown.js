// Model output as Markdown, sanitized: no scripts, handlers, javascript: URLs, forms, images
// (shown as links, never loaded), and no class/style/id/role, so an answer cannot draw the
// page's own UI (a fake error banner stays plain text). Code blocks get a language label,
// highlighting and a copy button, added after sanitizing.
import { marked } from "/static/vendor/marked.js";
import DOMPurify from "/static/vendor/purify.js";
import hljs from "/static/vendor/highlight.js";
import { copyButton, el, icon } from "/static/js/dom.js";

export const escapeHtml = (s) => String(s).replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]);

marked.use({
  gfm: true, breaks: true,
  renderer: {
    image({ href, text }) { return `<a href="${escapeHtml(href || "")}" data-image="">${escapeHtml(text || "image")}</a>`; },
    code({ text, lang }) {
      const language = (lang || "").trim().split(/\s+/)[0].toLowerCase();
      return `<pre><code data-language="${escapeHtml(language)}">${escapeHtml(text)}</code></pre>`;
    },
  },
});
DOMPurify.addHook("afterSanitizeAttributes", (node) => {
  if (node.tagName === "A") {
    node.setAttribute("target", "_blank");
    node.setAttribute("rel", "noopener noreferrer nofollow");
  }
});

const SANITIZE = {
  FORBID_TAGS: ["img", "form", "input", "button", "textarea", "select", "style", "iframe", "object", "embed", "svg", "math", "dialog",
    "video", "audio", "source", "track", "picture"],
  // every attribute that makes the browser load something: only the CSP stood in their way
  FORBID_ATTR: ["style", "class", "id", "role", "srcset", "tabindex", "accesskey", "background", "poster"],
  ALLOW_DATA_ATTR: false,
  ADD_ATTR: ["data-language", "data-image"],
};

function enhanceCode(root) {
  for (const code of root.querySelectorAll("pre > code")) {
    const pre = code.parentElement;
    const raw = code.textContent;
    const asked = code.getAttribute("data-language") || "";
    let language = asked && hljs.getLanguage(asked) ? asked : "";
    try {
      const result = language ? hljs.highlight(raw, { language, ignoreIllegals: true }) : hljs.highlightAuto(raw);
      code.innerHTML = result.value;  // highlight.js escapes the text it wraps
      language = language || result.language || "";
    } catch { /* leave it plain */ }
    code.classList.add("hljs");
    const label = asked || language || "text";
    const head = el("div", { class: "code-head" }, el("span", { class: "code-lang", "data-testid": "code-language" }, label),
      copyButton(() => raw, "Copy code", "copy-code"));
    const block = el("div", { class: "code-block" });
    pre.replaceWith(block);
    block.append(head, pre);
  }
  for (const link of root.querySelectorAll("a[data-image]")) link.prepend(icon("image", "Image"), " ");
}

export function renderMarkdown(target, text) {
  let html;
  try { html = marked.parse(text || ""); } catch { html = escapeHtml(text || ""); }
  target.innerHTML = DOMPurify.sanitize(html, SANITIZE);
  enhanceCode(target);
}
