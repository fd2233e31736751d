"""How the indexes split text, stem words, build queries and snippets (pure functions)."""

from __future__ import annotations

from adapters.postgres.search_text import MAX_TERMS_BYTES, TsQueries, stem_terms, terms, tsquery
from adapters.search_text import matches_all, snippet, stem, stem_text
from domain.search import parse_query
from ports.search import MARK_CLOSE, MARK_OPEN


def marked(text: str) -> str:
    return text.replace(MARK_OPEN, "[").replace(MARK_CLOSE, "]")


def test_words_are_split_as_the_query_parser_splits_them_without_case_or_accents() -> None:
    assert terms("Foo-bar, mail me@example.com or see https://x.org/a_b. CAFÉ naïve 3.14") == (
        "foo bar mail me example com or see https x org a b cafe naive 3 14"
    )


def test_the_forms_of_a_word_share_its_stem_and_other_words_keep_theirs() -> None:
    assert {stem(w) for w in ("lighthouse", "Lighthouses", "LIGHTHOUSE")} == {"lighthous"}
    assert {stem(w) for w in ("keeper", "keepers")} == {"keeper"} and stem("running") == stem("runs") == "run"
    assert [stem(w) for w in ("東京", "1984", "café", "naïve")] == ["東京", "1984", "cafe", "naiv"]
    assert stem_text("The keepers, the KEEPER and lighthouses") == "the keeper and lighthous"  # distinct, in order
    assert stem_terms(terms("Runs, running: RUN")) == "run"


def test_the_tsquery_quotes_every_word_and_carries_no_user_syntax() -> None:
    query = parse_query('"blue wh"* Krill OR x:y \'); DROP')
    assert tsquery(query) == TsQueries(
        words="'blue' <-> 'wh':* & 'x' <-> 'y'", stems="'krill' & 'or'", either=(("'drop':*", "'drop'"),)
    )
    assert tsquery(parse_query("Résumé")) == TsQueries(either=(("'resume':*", f"'{stem('resume')}'"),))
    assert tsquery(parse_query('"it\'s"')).words == "'it' <-> 's'"
    assert TsQueries("'a'", "'b'", (("'c':*", "'c'"),)).ranked() == ("('a') | ('c':*)", "('b') | ('c')")


def test_a_snippet_marks_a_phrase_as_a_whole_and_elides_what_it_leaves_out() -> None:
    text = " ".join(f"w{i}" for i in range(30)) + ", the blue whale sings. " + " ".join(f"x{i}" for i in range(30))
    assert marked(snippet(text, parse_query('"blue whale" sing*'))) == (
        "…w25 w26 w27 w28 w29, the [blue whale] [sings]. x0 x1 x2 x3 x4 x5 x6…"
    )
    assert marked(snippet("Où est le café ?", parse_query("cafe"))) == "Où est le [café] ?"
    assert marked(snippet("no match here", parse_query("absent"))) == "no match here"


def test_a_snippet_marks_the_forms_a_stem_found_and_the_word_being_typed() -> None:
    text = "The keepers kept the lighthouses; a lighthousekeeper's log"
    assert marked(snippet(text, parse_query("keeper lighthous"))) == (
        "The [keepers] kept the [lighthouses]; a [lighthousekeeper]'s log"
    )
    assert (
        marked(snippet(text, parse_query('"keeper" lighthouses')))
        == "The keepers kept the [lighthouses]; a lighthousekeeper's log"
    )
    assert matches_all(text, parse_query("keeper lighthous")) and not matches_all(text, parse_query('"keeper"'))


def test_a_huge_message_is_indexed_up_to_the_cap() -> None:
    text = "word " * (MAX_TERMS_BYTES // 5) + "tail " * 1000
    indexed = terms(text)
    assert len(indexed.encode()) <= MAX_TERMS_BYTES and indexed.startswith("word word") and "tail" not in indexed


def test_a_snippet_considers_a_bounded_number_of_matches_and_the_indexed_part_of_a_text() -> None:
    from adapters.search_text import MAX_HITS, _matches

    folded = ["a"] * 10_000
    assert _matches(folded, parse_query("a").terms[0]) == [(i, i + 1) for i in range(MAX_HITS)]
    huge = "word " * (MAX_TERMS_BYTES // 5) + "needle"
    # past what the index holds, nothing is read: the snippet shows the start, cut
    assert marked(snippet(huge, parse_query("word"), indexed=MAX_TERMS_BYTES)).startswith("[word] [word]")
    cut = snippet(huge, parse_query("needle"), indexed=MAX_TERMS_BYTES)
    assert cut.endswith("…") and "needle" not in cut
