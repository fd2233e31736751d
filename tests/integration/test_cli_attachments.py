"""`sophos chat -a PATH` (repeatable, `-a -` for stdin) through the real command against
the fake Ollama, locally and through a server: the files reach the model as the API sends
them, `show` lists them, and a bad file is one line, nothing stored."""

from __future__ import annotations

import base64
import json
import os
import subprocess
from pathlib import Path

from domain.attachments import MAX_ATTACHMENT_BYTES
from tests.integration.test_cli_models import conversation_of, sophos
from tests.support.app import SOPHOS, app_env, process_env
from tests.support.fake_ollama import fake_ollama
from tests.support.files import png
from tests.support.server import LiveServer

NOTES = "# Plan\n\n- ship attachments\n"


def test_files_and_stdin_reach_the_model_and_show_lists_them(tmp_path: Path) -> None:
    with fake_ollama(models=("qwen3:latest", "llava:7b")) as fake:
        fake.capabilities = {"llava:7b": ["vision"]}
        env = app_env(tmp_path, fake.url, TOOLS_BACKEND="none")
        (tmp_path / "notes.md").write_text(NOTES)
        (tmp_path / "dot.png").write_bytes(png())
        done = sophos(env, tmp_path, "chat", "read these", "-m", "llava:7b", "-a", "notes.md", "--attach", "dot.png")
        assert done.returncode == 0, done.stderr
        user = fake.requests[-1]["messages"][-1]
        assert user["images"] == [base64.b64encode(png()).decode()]
        assert user["content"] == "\nread these\n\nnotes.md:\n```\n" + NOTES + "\n```"
        shown = sophos(env, tmp_path, "show", conversation_of(done)).stdout
        assert "📎 notes.md · text/markdown · 27 B" in shown and "📎 dot.png · image/png" in shown

        piped = subprocess.run(
            [SOPHOS, "chat", "sum the column", "-a", "-"],
            input=b"n\n1\n2\n",
            env=process_env(env),
            cwd=tmp_path,
            capture_output=True,
            timeout=120,
        )
        assert piped.returncode == 0, piped.stderr
        assert fake.requests[-1]["messages"][-1]["content"] == "sum the column\n\nstdin.txt:\n```\nn\n1\n2\n\n```"


def test_a_bad_file_is_one_line_and_nothing_is_stored(tmp_path: Path) -> None:
    with fake_ollama() as fake:
        env = app_env(tmp_path, fake.url, TOOLS_BACKEND="none")
        (tmp_path / "broken.png").write_bytes(b"\x89PNG\r\n\x1a\nnot really")
        with open(tmp_path / "huge.log", "wb") as f:
            f.truncate(MAX_ATTACHMENT_BYTES + 1)  # sparse: never read
        (tmp_path / "dot.png").write_bytes(png())
        for args, code, words in [
            (("-a", "missing.txt"), 2, "missing.txt: No such file or directory"),
            (("-a", "broken.png"), 2, "ATTACHMENT_UNREADABLE: broken.png: not a readable PNG image"),
            (("-a", "huge.log"), 2, "ATTACHMENT_TOO_LARGE: huge.log is larger than 10 MB"),
            (("-a", "dot.png"), 2, "MODEL_CANNOT_SEE: qwen3 cannot read images"),
            (("-a", "-", "-a", "-"), 2, "stdin (-a -) can be attached once"),
        ]:
            refused = sophos(env, tmp_path, "chat", "look", *args)
            assert refused.returncode == code, (args, refused.stderr)
            assert len(refused.stderr.strip().splitlines()) == 1 and words in refused.stderr, refused.stderr
        assert json.loads(sophos(env, tmp_path, "conversations", "--json").stdout)["conversations"] == []
        assert fake.requests == []


def test_files_go_through_a_server_as_well(tmp_path: Path) -> None:
    with fake_ollama() as fake:
        env = app_env(tmp_path, fake.url, TOOLS_BACKEND="none")
        server = LiveServer(env, tmp_path).start()
        try:
            (tmp_path / "data.json").write_text('{"a": 1}')
            done = sophos(env, tmp_path, "chat", "what is a?", "-a", "data.json", "--server", server.url)
            assert done.returncode == 0, done.stderr
            assert fake.requests[-1]["messages"][-1]["content"] == 'what is a?\n\ndata.json:\n```\n{"a": 1}\n```'
            os.remove(tmp_path / "data.json")
            gone = sophos(env, tmp_path, "chat", "again", "-a", "data.json", "--server", server.url)
            assert gone.returncode == 2 and "data.json: No such file or directory" in gone.stderr
        finally:
            server.stop()


def test_the_attachment_settings_bound_the_cli_here_and_the_server_there(tmp_path: Path) -> None:
    with fake_ollama() as fake:
        env = app_env(tmp_path, fake.url, TOOLS_BACKEND="none")
        (tmp_path / "a.md").write_text("# a\n" * 200)  # 800 bytes
        (tmp_path / "b.csv").write_text("x,y\n")
        narrow = {**env, "MAX_ATTACHMENT_BYTES": "512", "ATTACHMENT_TYPES": "text/csv"}
        for args, words in [
            (("-a", "a.md"), "ATTACHMENT_TOO_LARGE: a.md is larger than 512 bytes"),
            (
                (
                    "-a",
                    "b.csv",
                    "-a",
                    "b.csv",
                    "-a",
                    "b.csv",
                    "-a",
                    "b.csv",
                    "-a",
                    "b.csv",
                    "-a",
                    "b.csv",
                    "-a",
                    "b.csv",
                    "-a",
                    "b.csv",
                    "-a",
                    "b.csv",
                ),
                "TOO_MANY_ATTACHMENTS: A message carries at most 8 files (9 given)",
            ),
        ]:
            refused = sophos(narrow, tmp_path, "chat", "look", *args)
            assert refused.returncode == 2 and refused.stderr.strip().splitlines() == [f"error: {words}"], refused.stderr
        wide = {**env, "MAX_ATTACHMENT_BYTES": "1024", "ATTACHMENT_TYPES": "text/markdown"}
        server = LiveServer(wide, tmp_path).start()
        try:
            # this machine's settings would refuse a.md; the server's take it: the server decides
            done = sophos(narrow, tmp_path, "chat", "read it", "-a", "a.md", "--server", server.url)
            assert done.returncode == 0, done.stderr
            refused = sophos(narrow, tmp_path, "chat", "and this", "-a", "b.csv", "--server", server.url)
            assert refused.returncode == 2, refused.stderr
            assert (
                "ATTACHMENT_TYPE_NOT_ALLOWED: b.csv: text/csv is not a file type this server accepts (text/markdown)"
                in refused.stderr
            )
        finally:
            server.stop()
