"""A file too long for its share of the prompt is searched, not cut (issue 45, item 4):
domain.passages chooses, adapters.files.passages ranks (BM25 by SQLite's FTS5)."""

from __future__ import annotations

from collections.abc import Sequence

from adapters.files.passages import Bm25Passages, fts_terms
from domain.attachments import Attachment, StoredFile
from domain.context import with_attachments
from domain.model import UserMessage
from domain.passages import search_file, split_passages


def test_passages_are_whole_lines_in_order_and_a_long_line_is_cut_to_one() -> None:
    text = "\n".join(["a" * 50] * 5 + ["b" * 500, "c"])
    passages = split_passages(text, 120)
    assert [(p.first, p.last) for p in passages] == [(1, 2), (3, 4), (5, 5), (6, 6), (7, 7)]
    assert passages[3].text == "b" * 120
    assert "\n".join(p.text for p in passages[:3]) == "\n".join(["a" * 50] * 5)


def by_word(word: str) -> object:
    def rank(query: str, passages: Sequence[str]) -> list[float]:
        return [float(p.count(word)) for p in passages]

    return rank


def test_the_best_passages_are_sent_in_the_files_order_within_the_share_under_a_note() -> None:
    lines = [f"row {i:04d}" for i in range(2000)]
    lines[1500] = "row 1500 needle"
    lines[10] = "row 0010 needle needle"
    searched = search_file("\n".join(lines), "needle", 1000, by_word("needle"))  # type: ignore[arg-type]
    firsts = [p.first for p in searched.passages]
    assert firsts == sorted(firsts) and searched.matched
    held = "\n".join(p.text for p in searched.passages)
    assert "row 1500 needle" in held and "row 0010 needle needle" in held
    block = searched.block_text("data.csv", 2000)
    assert block.startswith("[data.csv was searched, not read whole:") and "of 2000]" in block
    assert len(block) <= 1000


def test_a_message_that_matches_nothing_gets_the_files_first_passages_and_says_so() -> None:
    searched = search_file("\n".join(f"row {i}" for i in range(5000)), "summarise", 600, lambda q, ps: [0.0] * len(ps))
    assert not searched.matched and searched.passages[0].first == 1
    assert "none matched the message" in searched.note("f.txt", 5000)


def test_bm25_by_fts5_ranks_the_passage_with_the_messages_words_first_and_stems_them() -> None:
    passages = ["the harbour at dawn", "lighthouses guide ships at night", "nothing here"]
    scores = Bm25Passages().rank("Which lighthouse guides ships?", passages)
    assert scores[1] > scores[0] >= 0 and scores[2] == 0
    assert Bm25Passages().rank("", passages) == [0.0, 0.0, 0.0]


def test_a_hostile_message_is_quoted_words_never_fts5_syntax() -> None:
    assert fts_terms('NEAR("a" b) OR col:x * ^') == '"near" OR "col" OR "or"'
    scores = Bm25Passages().rank('") OR 1=1 --', ["or 1", "nothing"])  # the word "or", nothing else
    assert scores[0] > 0 and scores[1] == 0


def test_with_attachments_searches_a_file_too_long_for_its_share_when_given_a_ranker() -> None:
    text = "\n".join(f"entry {i:05d} plain" for i in range(20000)) + "\nentry 99999 the harbour master's key"
    files = (Attachment("log.txt", "text/plain", len(text), "a" * 64),)
    stored = {"a" * 64: StoredFile("text/plain", text.encode(), text)}
    sent = with_attachments(UserMessage("where is the harbour key?", attachments=files), stored, 2000, Bm25Passages().rank)
    assert "the harbour master's key" in sent.content and "searched, not read whole" in sent.content
    assert len(sent.content) < 2100
