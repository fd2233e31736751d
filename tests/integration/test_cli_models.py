"""`sophos models`, `-m/--model NAME`, `-s/--system TEXT`, `--backend` (and the old
`--model ollama|openai|demo`) and the model's thinking, through the real command against
the fake Ollama."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.support.app import app_env
from tests.support.cli import sophos
from tests.support.fake_ollama import fake_ollama


def conversation_of(result: subprocess.CompletedProcess[str]) -> str:
    return result.stderr.split("conversation: ")[1].split()[0]


def test_models_and_a_chosen_model_and_system_prompt_from_the_command_line(tmp_path: Path) -> None:
    with fake_ollama(models=("qwen3:latest", "llama3.2:latest")) as fake:
        fake.capabilities = {"qwen3:latest": ["thinking"]}
        fake.contexts = {"llama3.2:latest": 131072}
        env = app_env(tmp_path, fake.url, TOOLS_BACKEND="none")
        listed = sophos(env, tmp_path, "models")
        assert listed.returncode == 0, listed.stderr
        lines = listed.stdout.splitlines()
        assert lines[0].startswith("* qwen3:latest") and "thinking" in lines[0]
        assert lines[1].startswith("  llama3.2:latest") and "131,072 tokens" in lines[1]

        chosen = sophos(env, tmp_path, "chat", "hello", "-m", "llama3.2", "-s", "Answer in French.")
        assert chosen.returncode == 0, chosen.stderr
        assert (fake.requests[-1]["model"], fake.requests[-1]["messages"][0]["content"]) == (
            "llama3.2",
            "You are a test.\n\nAnswer in French.",
        )  # after config/system.md: its tool guidance stays
        replaced = sophos(env, tmp_path, "chat", "hello", "-s", "Answer in French.", "--replace-system")
        assert replaced.returncode == 0 and fake.requests[-1]["messages"][0]["content"] == "Answer in French."
        cid = conversation_of(chosen)
        again = sophos(env, tmp_path, "chat", "-c", cid, "more")  # the conversation keeps its choice
        assert again.returncode == 0 and fake.requests[-1]["model"] == "llama3.2"
        shown = sophos(env, tmp_path, "show", cid).stdout
        assert "· model llama3.2" in shown and "system: Answer in French." in shown
        assert "[1 assistant · llama3.2]" in shown

        refused = sophos(env, tmp_path, "chat", "hi", "--model", "mistral")
        assert refused.returncode == 2 and refused.stdout == ""
        assert len(refused.stderr.strip().splitlines()) == 1  # one line, no traceback
        assert "UNKNOWN_MODEL" in refused.stderr and "`ollama pull mistral`" in refused.stderr
        bad = sophos(env, tmp_path, "chat", "hi", "-m", "qwen3\x1b[2J")
        assert bad.returncode == 2 and "control characters" in bad.stderr and "Traceback" not in bad.stderr
        assert len(json.loads(sophos(env, tmp_path, "conversations", "--json").stdout)) == 1


def test_thinking_is_dimmed_on_stderr_and_hidden_with_no_reasoning(tmp_path: Path) -> None:
    with fake_ollama() as fake:
        fake.capabilities = {"qwen3:latest": ["thinking"]}
        env = app_env(tmp_path, fake.url, TOOLS_BACKEND="none")
        fake.add({"thinking": "Pondering the greeting.", "text": "Hello!"})
        shown = sophos(env, tmp_path, "chat", "hi")
        assert shown.returncode == 0, shown.stderr
        assert shown.stdout.strip() == "Hello!"  # the answer alone on stdout
        assert "Pondering the greeting." in shown.stderr
        fake.add({"thinking": "Secret musing.", "text": "Hi!"})
        hidden = sophos(env, tmp_path, "--no-reasoning", "chat", "hi")
        assert hidden.returncode == 0 and "Secret musing." not in hidden.stderr + hidden.stdout
        cid = conversation_of(hidden)
        assert "Secret musing." in sophos(env, tmp_path, "show", cid).stdout  # stored all the same
        assert "Secret musing." not in sophos(env, tmp_path, "show", cid, "--no-reasoning").stdout


def test_the_old_backend_spelling_still_picks_the_backend_with_a_note(tmp_path: Path) -> None:
    env = app_env(tmp_path, TOOLS_BACKEND="none")  # Ollama on a dead port: only the demo backend answers
    old = sophos(env, tmp_path, "--model", "demo", "chat", "hi")
    assert old.returncode == 0 and 'You wrote: "hi"' in old.stdout, old.stderr
    assert "note: `--model demo` picks the backend; say `--backend demo`" in old.stderr
    new = sophos(env, tmp_path, "chat", "hi", "--backend", "demo")
    assert new.returncode == 0 and "note:" not in new.stderr
