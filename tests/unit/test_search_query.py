"""The search query language: parsed into plain terms, never passed through."""

from __future__ import annotations

import pytest

from adapters.sqlite.search import fts_query
from domain.errors import InvalidInput
from domain.search import parse_query
from entrypoints.dto import snippet_html
from ports.search import MARK_CLOSE, MARK_OPEN, Term


@pytest.mark.parametrize(
    "text, terms",
    [
        ("Blue whale", (Term(("blue",), stem=True), Term(("whale",), True, True))),
        ('"blue whale" krill*', (Term(("blue", "whale")), Term(("krill",), True))),
        ('"blue wh"*', (Term(("blue", "wh"), True),)),
        ("foo-bar", (Term(("foo", "bar"), True),)),
        ("NEAR(a b) OR c:d", (Term(("near", "a")), Term(("b",), stem=True), Term(("or",), stem=True), Term(("c", "d")))),
        ("élan ÉLAN", (Term(("élan",), stem=True), Term(("élan",), True, True))),
        ("snake_case", (Term(("snake", "case"), True),)),
        ("hello !!!", (Term(("hello",), True, True),)),
        # as it is typed: the last word is a prefix too, from two letters on
        ("lighthous", (Term(("lighthous",), True, True),)),
        (
            "keepers of the l",
            (Term(("keepers",), stem=True), Term(("of",), stem=True), Term(("the",), stem=True), Term(("l",), stem=True)),
        ),
        ('"lighthouse kee', (Term(("lighthouse", "kee"), True),)),  # a quote left open: a phrase being typed
        ('whale "', (Term(("whale",), True, True),)),  # nothing typed in the quote yet
        ('"whale"', (Term(("whale",)),)),  # quoted: that word only
    ],
)
def test_a_query_becomes_terms_of_plain_words(text: str, terms: tuple[Term, ...]) -> None:
    assert parse_query(text).terms == terms


def test_the_fts5_query_only_ever_quotes_plain_words() -> None:
    query = parse_query('"x OR" y NOT zz* {a}')  # FTS5 keywords and syntax are just words
    assert fts_query(query) == 'body : "x or" AND stems : "y" AND stems : "not" AND body : "zz"* AND stems : "a"'
    typed = parse_query("Keepers lighthous")  # a stem, then the word being typed: its prefix or its stem
    assert fts_query(typed) == 'stems : "keeper" AND (body : "lighthous"* OR stems : "lighthous")'


@pytest.mark.parametrize(
    "text, message",
    [
        ("", "q is required"),
        (None, "q is required"),
        ('"', "The query has no words to search for"),
        ("*", "'*' must follow a word"),
        ("a*b", "'*' may only end a word or a phrase"),
        ("... ,,,", "The query has no words to search for"),
        ("w " * 17, "The query has more than 16 terms"),
    ],
)
def test_bad_syntax_is_invalid_input_saying_what_is_wrong(text: object, message: str) -> None:
    with pytest.raises(InvalidInput) as e:
        parse_query(text)
    assert e.value.message == message


def test_a_snippet_is_escaped_html_with_only_the_marks_as_markup() -> None:
    raw = f'<img src=x onerror="a()"> & {MARK_OPEN}whale{MARK_CLOSE}'
    assert snippet_html(raw) == '&lt;img src=x onerror="a()"&gt; &amp; <mark>whale</mark>'


def test_a_prefix_of_one_letter_is_refused_two_are_enough() -> None:
    import pytest

    from domain.errors import InvalidInput
    from domain.search import parse_query

    for q in ("a*", '"blue w"*', "deploy b*"):
        with pytest.raises(InvalidInput, match="at least 2 letters or digits before"):
            parse_query(q)
    assert parse_query("ab*").terms[0].prefix and parse_query('"blue wh"*').terms[0].words == ("blue", "wh")
