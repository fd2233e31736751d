"""The page's export and import (issue 33 item 11): "Import…" stores a ChatGPT export and
opens it, a malformed file shows the server's error and stores nothing, "Export all"
downloads the zip, and the header's "JSON" link downloads what Import reads back."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

from playwright.sync_api import Page, expect

from tests.browser.conftest import App, shoot, toggle_sidebar

FIXTURE = Path(__file__).parents[1] / "fixtures" / "chatgpt" / "conversations.json"


def test_import_a_chatgpt_file_then_export_it_again(page: Page, app: App, tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "sophos.conversation", "version": 7}')
    page.get_by_test_id("import-file").set_input_files(str(bad))
    expect(page.get_by_test_id("transfer-error")).to_contain_text("version 7 is not one this Sophos reads")
    assert app.server.get("/api/conversations").json()["conversations"] == []

    page.get_by_test_id("import-file").set_input_files(str(FIXTURE))
    expect(page.get_by_test_id("transfer-state")).to_have_text("Imported 2 conversations from conversations.json.")
    items = page.get_by_test_id("conversation-list").locator("li.conversation-item")
    expect(items).to_have_count(2)
    expect(page.get_by_test_id("current-title")).to_have_text("Planning a trip")
    expect(page.get_by_test_id("message-list")).to_contain_text("Porto, for the river and the food.")
    shoot(page, "import", toggle_sidebar)

    page.get_by_test_id("more-button").click()  # the exports are in the header's More menu
    with page.expect_download() as download:
        page.get_by_test_id("export-json").click()
    path = tmp_path / download.value.suggested_filename
    download.value.save_as(path)
    assert path.name == "planning-a-trip-2024-05-01.json"
    assert len(json.loads(path.read_text())["conversation"]["branches"]) == 3
    for link, name in (
        ("export-md", "planning-a-trip-2024-05-01.md"),
        ("export-jsonl", "planning-a-trip-2024-05-01.checkpoints.jsonl"),
    ):
        page.get_by_test_id("more-button").click()
        with page.expect_download() as named:
            page.locator(f"#{link}").click()
        assert named.value.suggested_filename == name  # by title and date, not <id>.md (issue 48 item 4)

    with page.expect_download() as everything:
        page.get_by_test_id("export-all").click()
    archive = tmp_path / everything.value.suggested_filename
    everything.value.save_as(archive)
    assert sorted(zipfile.ZipFile(archive).namelist()) == ["planning-a-trip-2024-05-01.json", "weather-in-paris-2024-05-02.json"]
