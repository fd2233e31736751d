"""Rendering (issue 33 item 17): math typeset by KaTeX (sanitized, as MathML), blockquotes
with a bar, an untagged code block labelled `text`; prices stay text and hostile TeX is inert."""

from __future__ import annotations

from playwright.sync_api import Page, expect

from tests.browser.conftest import drawn, shoot
from tests.support.fake_ollama import FakeOllama

ANSWER = (
    "Einstein: $E = mc^2$, and in display:\n\n$$\\int_0^1 x\\,dx = \\frac{1}{2}$$\n\n"
    "Also \\(a^2 + b^2 = c^2\\). It costs $5 and $10, not math.\n\n"
    "> A quoted line.\n\n"
    "```\nplain = untagged\n```\n\n"
    "Hostile: $\\href{javascript:window.__pwned=1}{click}$ and $<img src=x onerror=window.__pwned=2>$ "
    "and `$inside code$`."
)


def test_math_quotes_and_untagged_code_render_as_they_should(tab: Page, shared_ollama: FakeOllama) -> None:
    csp: list[str] = []
    tab.on("console", lambda m: csp.append(m.text) if "Content Security Policy" in m.text else None)
    shared_ollama.add({"text": ANSWER})
    tab.get_by_test_id("message-input").fill("render things")
    tab.get_by_test_id("message-input").press("Enter")
    bubble = tab.get_by_test_id("assistant-message").last
    expect(bubble).to_contain_text("not math", timeout=15000)
    # the bubble drawn from the stored message: a one-shot read (the quote's border below)
    # cannot meet a node being replaced
    drawn(tab)
    expect(bubble.get_by_test_id("math")).to_have_count(4)  # E=mc², the integral, Pythagoras and the \href one (inert)
    expect(bubble.locator("math")).to_have_count(4)
    expect(bubble.locator(".math-error")).to_have_text("<img src=x onerror=window.__pwned=2>")  # not TeX: shown as text
    text = bubble.inner_text()
    assert "$E = mc^2$" not in text and "mc^2" not in text  # typeset, not raw (nor its TeX annotation)
    expect(bubble.locator(".math-block")).to_have_count(1)
    expect(bubble).to_contain_text("It costs $5 and $10, not math.")  # prices stay text
    expect(bubble.locator("code", has_text="$inside code$")).to_have_count(1)  # code is never math
    expect(bubble.locator("math a, math img, [data-math] a, [data-math] img")).to_have_count(0)
    assert tab.evaluate("window.__pwned") is None
    quote = bubble.locator("blockquote")
    assert float(quote.evaluate("e => parseFloat(getComputedStyle(e).borderLeftWidth)")) >= 2  # a bar
    expect(bubble.get_by_test_id("code-language")).to_have_text("text")  # not a guess such as "ini"
    expect(bubble.locator(".code-block [class^=hljs-]")).to_have_count(0)  # and not coloured as one
    assert csp == [], csp  # no inline style was refused
    shoot(tab, "markdown-math")
