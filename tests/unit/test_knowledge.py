"""Knowledge's pure rules (domain.knowledge) and the service's ranking seam, against the
in-memory store: `#name` mentions, what fits a share of the prompt, citations, and a ranker
plugged in (as an embedding ranker would be) deciding the order."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from adapters.memory.knowledge import InMemoryKnowledge
from domain.attachments import parse_upload
from domain.errors import InvalidInput
from domain.knowledge import Candidate, CollectionNotFound, check_name, cite, fit, knowledge_block, mentions
from domain.principals import Principal, Role
from ports.attachments import TextExtractor
from ports.knowledge import Ranker
from services.knowledge import KnowledgeService

ANN = Principal("u_ann", "ann", Role.USER)
BOB = Principal("u_bob", "bob", Role.USER)


def candidate(file: str, score: float, text: str = "x" * 100) -> Candidate:
    return Candidate("docs", file, 1, 3, text, score)


def test_mentions_are_hash_names_not_anchors_entities_or_words() -> None:
    text = "#Docs and #notes_2, again #docs; see http://x.org/#frag, &#39; a#b, ##x"
    assert mentions(text) == ("docs", "notes_2")
    assert mentions("no tags") == ()
    assert len(mentions(" ".join(f"#c{i}" for i in range(20)))) == 8


def test_a_collection_name_is_what_a_hash_tag_can_name() -> None:
    assert check_name("my-docs_2") == "my-docs_2"
    for bad in ("", "Docs", "-x", "a b", "x" * 65, None, "é"):
        with pytest.raises(InvalidInput):
            check_name(bad)


def test_the_best_passages_that_fit_are_chosen_and_weak_ones_left_out() -> None:
    found = [candidate("a.md", 10.0), candidate("b.md", 9.0, "y" * 5000), candidate("c.md", 8.0), candidate("d.md", 1.0)]
    chosen = fit(found, 600)
    assert [c.file for c in chosen] == ["a.md", "c.md"]  # b does not fit, d scores under a fifth of the best
    assert fit([], 600) == ()


def test_the_block_cites_each_passage_and_says_when_nothing_matched() -> None:
    block = knowledge_block([candidate("a.md", 1.0, "lamp")], ["docs"])
    assert block.startswith("[a.md:1-3] (#docs)\nlamp") and "e.g. [a.md:1-3]" in block
    assert knowledge_block([], ["docs", "more"]) == "[No passage of #docs, #more matches this message.]"
    assert cite("f.csv", 4, 4) == "[f.csv:4]"


class NoPdf(TextExtractor):
    async def pdf_text(self, name: str, data: bytes) -> str:
        return "lighthouse lamp from a pdf"


class Reversed(Ranker):
    """A stand-in for an embedding ranker: it decides the order."""

    async def rank(self, query: str, candidates: Sequence[Candidate]) -> Sequence[Candidate]:
        return [*reversed(candidates)]


async def test_a_plugged_in_ranker_decides_what_is_sent_first() -> None:
    service = KnowledgeService(InMemoryKnowledge(), NoPdf(), ranker=Reversed())
    files = [parse_upload("a.md", None, b"lamp lamp lamp\n"), parse_upload("b.md", None, b"a lamp\n")]
    await service.add("docs", files, by=ANN)
    chosen = await service.retrieve(ANN.user_id, ["docs"], "lamp", 2000)
    assert [c.file for c in chosen][0] == "b.md"  # the full-text order would put a.md first


async def test_files_are_deduplicated_replaced_and_owned() -> None:
    service = KnowledgeService(InMemoryKnowledge(), NoPdf())
    first = await service.add(
        "docs", [parse_upload("a.md", None, b"lamp\n"), parse_upload("[x].pdf", None, b"%PDF-1.4 ...")], by=ANN
    )
    assert [(a.name, a.outcome) for a in first] == [("a.md", "added"), ("(x).pdf", "added")]
    again = await service.add("docs", [parse_upload("a.md", None, b"lamp\n"), parse_upload("b.md", None, b"lamp\n")], by=ANN)
    assert [(a.outcome, a.same_as) for a in again] == [("unchanged", None), ("duplicate", "a.md")]
    replaced = await service.add("docs", [parse_upload("a.md", None, b"tide\n")], by=ANN)
    assert replaced[0].outcome == "replaced"
    found = {(c.file, c.text) for c in await service.retrieve(ANN.user_id, ["docs"], "tide lamp", 2000)}
    assert found == {("a.md", "tide"), ("(x).pdf", "lighthouse lamp from a pdf")}  # a.md's old "lamp" is gone
    with pytest.raises(CollectionNotFound):
        await service.files("docs", by=BOB)
    with pytest.raises(CollectionNotFound):
        await service.drop("docs", by=BOB)
    with pytest.raises(InvalidInput):
        await service.add("docs", [parse_upload("a.png", "image/png", b"\x89PNG\r\n\x1a\n" + b"\0" * 30)], by=ANN)
