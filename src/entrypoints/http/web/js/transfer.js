// Whole conversations in and out: the JSON export of one (the header's "JSON" link),
// every conversation as a zip (GET /api/export) and the import of a file (POST /api/import:
// a Sophos export, its zip, or ChatGPT's conversations.json).
import { ApiError } from "/static/js/api.js";
import { $ } from "/static/js/dom.js";

async function upload(file) {
  let response;
  try {
    response = await fetch("/api/import", { method: "POST", body: file, headers: { "Content-Type": "application/octet-stream" } });
  } catch {
    throw new ApiError("SERVER_UNREACHABLE", "The server could not be reached; the page reconnects by itself.");
  }
  const body = await response.json().catch(() => null);
  if (!response.ok) {
    const error = body && body.error;
    throw new ApiError(error ? error.code : `HTTP_${response.status}`, error ? error.message : response.statusText);
  }
  return body.conversations;
}

// `imported(summaries)` once stored; `failed(error)` when the file was refused (nothing stored)
export function installTransfer({ imported, failed }) {
  const input = $("import-file");
  const status = $("transfer-state");
  $("import").addEventListener("click", () => input.click());
  input.addEventListener("change", async () => {
    const [file] = input.files;
    input.value = "";  // the same file may be chosen again
    if (!file) return;
    status.textContent = `Importing ${file.name}…`;
    try {
      const conversations = await upload(file);
      const n = conversations.length;
      status.textContent = `Imported ${n} conversation${n === 1 ? "" : "s"} from ${file.name}.`;
      await imported(conversations);
    } catch (e) {
      status.textContent = "";
      failed(e);
    }
  });
}
