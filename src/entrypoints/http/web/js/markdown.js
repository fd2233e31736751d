// Model output as Markdown, sanitized: no scripts, handlers, javascript: URLs, forms, images
// (shown as links, never loaded), and no class/style/id/role, so an answer cannot draw the
// page's own UI (a fake error banner stays plain text). Code blocks get a language label
// (`text` when untagged), highlighting and a copy button, added after sanitizing. Math
// ($…$, $$…$$, \(…\), \[…\]) is kept as its TeX through Markdown and the sanitizer, then
// typeset by KaTeX as MathML (no inline styles or fonts, so the CSP stays strict), with
// KaTeX's trust off and its size and expansion bounded, and its output sanitized again.
import { marked } from "/static/vendor/marked.js";
import DOMPurify from "/static/vendor/purify.js";
import hljs from "/static/vendor/highlight.js";
import katex from "/static/vendor/katex.js";
import { copyButton, el, icon } from "/static/js/dom.js";

export const escapeHtml = (s) => String(s).replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]);

const MAX_TEX = 4000;  // characters of one formula: a bigger one stays as text
// `$…$` needs no space inside its dollars and no digit after the closing one, so prices
// ("$5 and $10") stay text; `$$…$$`, `\(…\)` and `\[…\]` are always math
const INLINE = /^(?:\$(?!\s)((?:\\.|[^\\$\n])+?)(?<!\s)\$(?!\d)|\\\(((?:\\.|[^\n])+?)\\\))/;
const BLOCK = /^(?:\$\$([\s\S]+?)\$\$|\\\[([\s\S]+?)\\\])[ \t]*(?:\n|$)/;
const INLINE_BLOCK = /^(?:\$\$([\s\S]+?)\$\$|\\\[([\s\S]+?)\\\])/;

function mathToken(type, display) {
  return (src) => {
    const m = (type === "mathBlock" ? BLOCK : display ? INLINE_BLOCK : INLINE).exec(src);
    if (!m) return undefined;
    const tex = (m[1] || m[2] || "").trim();
    return tex ? { type, raw: m[0], text: tex, display } : undefined;
  };
}

const mathHtml = (text, display) => `<span data-math="${display ? "block" : "inline"}">${escapeHtml(text)}</span>`;

marked.use({
  extensions: [
    { name: "mathBlock", level: "block", start: (src) => src.match(/\$\$|\\\[/)?.index, tokenizer: mathToken("mathBlock", true),
      renderer: (t) => mathHtml(t.text, true) },
    { name: "mathDisplay", level: "inline", start: (src) => src.match(/\$\$|\\\[/)?.index, tokenizer: mathToken("mathDisplay", true),
      renderer: (t) => mathHtml(t.text, true) },
    { name: "math", level: "inline", start: (src) => src.match(/\$|\\\(/)?.index, tokenizer: mathToken("math", false),
      renderer: (t) => mathHtml(t.text, false) },
  ],
});
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
  ADD_ATTR: ["data-language", "data-image", "data-math"],
};
// KaTeX's own output: MathML in a span, nothing else (no links: \href is off anyway)
const SANITIZE_MATH = { USE_PROFILES: { html: true, mathMl: true }, ADD_TAGS: ["semantics"], FORBID_TAGS: ["a", "img", "style", "form", "input"],
  FORBID_ATTR: ["style", "href", "xlink:href", "src", "id", "tabindex"], ALLOW_DATA_ATTR: false };

function typeset(root) {
  for (const node of root.querySelectorAll("[data-math]")) {
    const tex = node.textContent;
    const display = node.getAttribute("data-math") === "block";
    if (tex.length > MAX_TEX) continue;
    try {
      // throwOnError: KaTeX's own error span carries an inline style, which the CSP refuses
      const html = katex.renderToString(tex, { displayMode: display, output: "mathml", throwOnError: true, trust: false,
        strict: "ignore", maxSize: 50, maxExpand: 200 });
      // the TeX annotation would be shown as text once the sanitizer drops its element
      node.innerHTML = DOMPurify.sanitize(html.replace(/<annotation\b[^>]*>[^<]*<\/annotation>/g, ""), SANITIZE_MATH);
      node.classList.add(display ? "math-block" : "math-inline");
      node.setAttribute("data-testid", "math");
    } catch (e) {  // left as its TeX, saying why
      node.classList.add("math-error");
      node.title = String(e && e.message ? e.message : e).slice(0, 300);
    }
  }
}

function enhanceCode(root) {
  for (const code of root.querySelectorAll("pre > code")) {
    const pre = code.parentElement;
    const raw = code.textContent;
    const asked = code.getAttribute("data-language") || "";
    const language = asked && hljs.getLanguage(asked) ? asked : "";
    // an untagged block is text, labelled so and left plain: a guessed language (as "ini")
    // coloured prose and logs as code
    try {
      if (language) code.innerHTML = hljs.highlight(raw, { language, ignoreIllegals: true }).value;  // highlight.js escapes the text it wraps
    } catch { /* leave it plain */ }
    code.classList.add("hljs");
    const label = asked || "text";
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
  typeset(target);
  enhanceCode(target);
}
