"""The usage view for admins (issue 47 item 3), in Chromium against a real server with two
users: the admin sees every user's tokens, seconds and calls per model and day over a date
range; a user who is not an admin is offered no usage view (and the server refuses it)."""

from __future__ import annotations

from typing import Any

from playwright.sync_api import Browser, expect

from tests.browser.conftest import App, open_page, shoot
from tests.browser.test_organising import send
from tests.browser.test_users_page import add_user, log_in, team  # noqa: F401 (the fixture)
from tests.integration.test_ownership import bearer
from tests.integration.test_schedules import wait_for
from tests.support.fake_ollama import FakeOllama


def usage(app: App, token: str, **params: str) -> Any:
    return app.server.get("/api/usage", params=params, headers=bearer(token))


def test_an_admin_sees_every_users_usage_over_a_date_range_and_a_user_sees_no_usage_view(
    browser: Browser,
    team: App,  # noqa: F811
    ollama: FakeOllama,
) -> None:
    ann, bob = add_user(team, "add", "ann", "--admin"), add_user(team, "add", "bob")
    cid = team.server.post("/api/chat", {"message": "bob asks"}, headers=bearer(bob)).json()["conversation"]
    wait_for(
        lambda: team.server.get(f"/api/conversations/{cid}", headers=bearer(bob)).json()["conversation"]["status"] == "completed"
    )
    with open_page(browser, team.server.url, "usage-admin") as page:
        log_in(page, ann)
        send(page, "ann asks")
        rows = wait_for(lambda: len(found := usage(team, ann, all="true").json()["rows"]) == 2 and found)
        page.get_by_test_id("more-button").click()
        page.get_by_test_id("usage-item").click()
        shown = page.get_by_test_id("usage-row")
        expect(shown).to_have_count(2)
        for r in rows:
            line = page.locator(f"[data-testid=usage-row][data-user={r['user']}]")
            expect(line.locator("td")).to_have_text(
                [
                    r["day"],
                    r["user"],
                    "qwen3",
                    f"{r['inputTokens']:,}",
                    f"{r['outputTokens']:,}",
                    f"{r['modelSeconds']:.1f}",
                    f"{r['toolSeconds']:.1f}",
                    str(r["calls"]),
                ]
            )
        total = sum(r["inputTokens"] for r in rows)
        expect(page.get_by_test_id("usage-total").locator("td").nth(1)).to_have_text(f"{total:,}")
        shoot(page, "usage")
        # a range without use, then one that ends before it starts
        page.get_by_test_id("usage-from").fill("2020-01-01")
        page.get_by_test_id("usage-to").fill("2020-01-31")
        page.get_by_test_id("usage-show").click()
        expect(page.get_by_test_id("usage-empty")).to_be_visible()
        expect(page.get_by_test_id("usage-table")).to_be_hidden()
        page.get_by_test_id("usage-from").fill("2020-02-01")
        page.get_by_test_id("usage-show").click()
        expect(page.get_by_test_id("usage-error-note").get_by_test_id("error-code")).to_have_text("BAD_REQUEST")
        expect(page.get_by_test_id("usage-empty")).to_be_hidden()
    with open_page(browser, team.server.url, "usage-user") as page:
        log_in(page, bob)
        page.get_by_test_id("more-button").click()
        expect(page.get_by_test_id("more-menu")).to_be_visible()
        expect(page.get_by_test_id("usage-item")).to_be_hidden()
        expect(page.get_by_test_id("usage-panel")).to_be_hidden()
    assert usage(team, bob, all="true").status_code == 403
    assert [r["user"] for r in usage(team, bob).json()["rows"]] == ["bob"]
